package subnetmanager

import (
	"bytes"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Plan implements plan.TypedProvider.
func (p *Provider) Plan(req *plan.Request, obs *Observed, _ *plan.Facts) plan.Proposal {
	prop := p.plan(req, obs)
	if obs != nil && obs.Stopped && len(prop.Errors) == 0 {
		if obs.StartUnit == "" && !keptStopped(req) {
			prop.Errors = append(prop.Errors, req.Finding("$.subnet_manager", "opensm does not run on %s port %d and no unit of the opensm package (opensm.service, opensm@%s.service) is installed to start it: install the package's units, or add services: [{name: opensm, active: false}] to only write its files",
				obs.Port.Device, obs.Port.Port, obs.Port.GUID))
			prop.Changes = nil
			return prop
		}
		startWith(req, obs, prop.Changes)
	}
	return prop
}

// plan is Plan for an opensm that runs, or for one that does not before
// startWith says what becomes of it.
func (p *Provider) plan(req *plan.Request, obs *Observed) plan.Proposal {
	var prop plan.Proposal
	sm := req.Spec.SubnetManager
	if sm == nil || obs == nil {
		return prop
	}
	const path = "$.subnet_manager"
	prop.Managed = append(prop.Managed, plan.Managed{Address: ConfAddr, Path: path})
	if sm.Partitions != nil {
		prop.Managed = append(prop.Managed, plan.Managed{Address: PartitionsAddr, Path: path + ".partitions"})
	}
	if !hasInfiniBand(req) {
		prop.Errors = append(prop.Errors, req.Finding(path, "a subnet manager serves an InfiniBand fabric, and this host has no InfiniBand port"))
		return prop
	}
	if sm.Port != nil && obs.Port == nil {
		prop.Errors = append(prop.Errors, req.Finding(path+".port", "port %d of %s is not an InfiniBand port of this host", sm.Port.Port, sm.Port.Device))
		return prop
	}
	if errs := ethernetMembers(req); len(errs) > 0 {
		prop.Errors = append(prop.Errors, errs...)
		return prop
	}
	if sm.Partitions != nil && len(sm.Partitions) == 0 {
		// Seen in the lab: opensm logs "Partition configuration in error;
		// retrying with default config" for a file without an entry.
		prop.Errors = append(prop.Errors, req.Finding(path+".partitions", "opensm refuses a partitions file without a partition (it falls back to its default one): list at least one, or leave partitions out to keep the file as it is"))
		return prop
	}
	if !obs.Installed {
		prop.Errors = append(prop.Errors, req.Finding(path, "opensm is not installed (%s missing): install the opensm package (apt-get install opensm, dnf install opensm)", Binary))
		return prop
	}
	exp := expectation{priority: sm.Priority}
	fab := obs.Fabric
	localMaster := fab != nil && fab.Local.State == "SMINFO_MASTER"
	if sm.Partitions != nil {
		exp.pkeys = ExpectedPKeys(sm, obs.Port.GUID)
	}

	// The port first: Debian's units bind opensm with --guid, which
	// overrides opensm.conf's guid, so there the port is PORTS in
	// /etc/default/opensm; RHEL's launcher passes -g for GUIDS and -p for
	// PRIORITY in /etc/sysconfig/opensm, over opensm.conf's guid and
	// sm_priority, so there both are that file's; elsewhere opensm.conf's.
	confGUID := obs.Port.GUID
	if obs.Layout.Ports != "" {
		confGUID = ""
		if sm.Port != nil {
			prop.Managed = append(prop.Managed, plan.Managed{Address: PortsAddr, Path: path + ".port"})
			if c := portsChange(req, obs); c != nil {
				prop.Changes = append(prop.Changes, c)
			}
		}
	}
	// The files' changes wait for it: opensm must run on the spec's port
	// before the fabric there can show them.
	var after []plan.Address
	if obs.Layout.Sysconfig != "" {
		confGUID = ""
		if sm.Port != nil || sm.Priority != nil {
			prop.Managed = append(prop.Managed, plan.Managed{Address: LauncherAddr, Path: path})
			if c := sysconfigChange(req, obs); c != nil {
				prop.Changes = append(prop.Changes, c)
				after = []plan.Address{LauncherAddr}
			}
		}
	}
	// opensm.conf next: a restart it needs (allow_both_pkeys) comes
	// before partitions that use it.
	wantConf := ConfValues(sm, confGUID)
	if obs.Layout.Sysconfig != "" {
		delete(wantConf, "sm_priority")
	}
	// Nothing for it (RHEL's launcher carries priority and port, and no
	// options): a file rdmaform did not write is left as it is (RHEL's
	// package ships one) and none is made; one it wrote loses its keys.
	if len(wantConf) > 0 || bytes.HasPrefix(obs.Conf, []byte(Header)) {
		if c := confChange(req, obs, wantConf, exp); c != nil {
			c.DependsOn = after
			prop.Changes = append(prop.Changes, c)
		}
	}
	// Without partitions in the spec, the file is left as it is.
	wantParts := RenderPartitions(sm)
	if sm.Partitions != nil && !bytes.Equal(wantParts, obs.Partitions) {
		action := plan.Update
		if obs.Partitions == nil {
			action = plan.Create
		}
		prop.Changes = append(prop.Changes, &plan.Change{Address: PartitionsAddr, Action: action, Activation: plan.Now, DependsOn: after,
			Source: req.Pos(path + ".partitions"), Attributes: partitionAttrs(obs.Partitions, wantParts),
			Payload: &payload{file: obs.Layout.Partitions, partitions: true, content: wantParts, previous: obs.Partitions, launched: obs.Layout.Sysconfig != "", port: obs.Port, expect: exp}})
		return prop
	}
	if len(prop.Changes) > 0 {
		return prop
	}
	if obs.Stopped {
		// The files are as wanted and opensm does not run: it is
		// started, unless the spec keeps it stopped.
		if c := startChange(req, obs, wantParts, exp); c != nil {
			prop.Changes = append(prop.Changes, c)
		}
		return prop
	}
	// The files are as wanted: does the fabric run them?
	if fab == nil {
		if obs.FabricErr != nil {
			prop.Errors = append(prop.Errors, req.Finding(path, "no subnet manager answers on %s port %d: %v", obs.Port.Device, obs.Port.Port, obs.FabricErr))
		}
		return prop
	}
	var attrs []plan.Attr
	if sm.Priority != nil && fab.Local.Priority != *sm.Priority {
		attrs = append(attrs, plan.Attr{Name: "running sm_priority", Before: strconv.Itoa(fab.Local.Priority), After: strconv.Itoa(*sm.Priority)})
	}
	if localMaster && exp.pkeys != nil && !slices.Equal(fab.PKeys, exp.pkeys) {
		attrs = append(attrs, plan.Attr{Name: "P_Key table of " + obs.Port.Device + "/" + strconv.Itoa(obs.Port.Port), Before: formatPKeys(fab.PKeys), After: formatPKeys(exp.pkeys)})
	}
	if len(attrs) > 0 {
		prop.Changes = append(prop.Changes, &plan.Change{Address: PartitionsAddr, Action: plan.Update, Activation: plan.Now,
			Source: req.Pos(path), Attributes: attrs,
			Payload: &payload{file: obs.Layout.Partitions, partitions: true, content: wantParts, previous: obs.Partitions, signalOnly: true, launched: obs.Layout.Sysconfig != "", port: obs.Port, expect: exp}})
	}
	return prop
}

// ethernetMembers are members given by the GUID of a device of this host
// whose ports are all Ethernet (an mlx5 port's GUID is its device's node
// GUID): no subnet manager can make a RoCE port a partition member.
func ethernetMembers(req *plan.Request) []schema.Finding {
	eth := map[string]string{}
	for _, d := range req.Inv.Devices {
		if d.NodeGUID == "" || len(d.Ports) == 0 {
			continue
		}
		all := true
		for _, p := range d.Ports {
			all = all && p.LinkLayer == linklayer.Ethernet
		}
		if all {
			eth["0x"+strings.ReplaceAll(strings.ToLower(d.NodeGUID), ":", "")] = d.Name
		}
	}
	var out []schema.Finding
	for i := range req.Spec.SubnetManager.Partitions {
		for j, m := range req.Spec.SubnetManager.Partitions[i].Members {
			if dev, ok := eth[strings.ToLower(m.GUID)]; ok {
				out = append(out, req.Finding(schema.Path("subnet_manager", "partitions", i, "members", j)+".guid",
					"member %s is %s of this host, whose ports are Ethernet: only InfiniBand ports are partition members", m.GUID, dev))
			}
		}
	}
	return out
}

func hasInfiniBand(req *plan.Request) bool {
	for _, d := range req.Inv.Devices {
		for _, p := range d.Ports {
			if p.LinkLayer == linklayer.InfiniBand {
				return true
			}
		}
	}
	return false
}

// confChange is the opensm.conf change, nil when the file is as wanted.
// A key opensm does not re-read on SIGHUP, or a key taken out (opensm
// keeps the running value until it starts again), restarts it.
func confChange(req *plan.Request, obs *Observed, want map[string]string, exp expectation) *plan.Change {
	content := RenderConf(want)
	if bytes.Equal(content, obs.Conf) {
		return nil
	}
	have := ParseConf(obs.Conf)
	var attrs []plan.Attr
	var restart []string
	for _, k := range confKeys {
		b, hadIt := have[k.name]
		a, wants := want[k.name]
		if b == a && hadIt == wants {
			continue
		}
		attrs = append(attrs, plan.Attr{Name: k.name, Before: b, After: a})
		if !k.updatable || !wants {
			restart = append(restart, k.name)
		}
	}
	if obs.Conf == nil {
		// opensm keeps the path of its configuration file only when the
		// file is there at start (osm_subn_parse_conf_file), so a file
		// made later is never read on SIGHUP: seen in the lab too.
		restart = []string{"a new opensm.conf"}
	}
	c := &plan.Change{Address: ConfAddr, Action: plan.Update, Activation: plan.Now, Source: req.Pos("$.subnet_manager"),
		Attributes: attrs, Payload: &payload{file: obs.Layout.Conf, content: content, previous: obs.Conf, restart: len(restart) > 0, launched: obs.Layout.Sysconfig != "", port: obs.Port, expect: expectation{priority: exp.priority}}}
	if obs.Conf == nil {
		c.Action = plan.Create
	}
	if len(restart) > 0 {
		c.Attributes = append(c.Attributes, plan.Attr{Name: "opensm", Before: "running", After: "restarted (" + strings.Join(restart, ", ") + " taken only at start)"})
	}
	return c
}

// partitionAttrs says which partitions a new file adds, changes or drops,
// one attribute each, by name.
func partitionAttrs(before, after []byte) []plan.Attr {
	b, a := entries(before), entries(after)
	var attrs []plan.Attr
	for _, e := range a {
		prev := find(b, e.name)
		if prev == nil || prev.text != e.text {
			before := ""
			if prev != nil {
				before = prev.text
			}
			attrs = append(attrs, plan.Attr{Name: "partition " + e.name, Before: before, After: e.text})
		}
	}
	for _, e := range b {
		if find(a, e.name) == nil {
			attrs = append(attrs, plan.Attr{Name: "partition " + e.name, Before: e.text})
		}
	}
	if len(attrs) == 0 {
		attrs = append(attrs, plan.Attr{Name: "file", Before: "as edited by hand", After: "as rdmaform writes it"})
	}
	return attrs
}

type entry struct{ name, text string }

// entries are a partitions.conf's entries, comments dropped, each on one
// line: "storage=0x0002, ipoib : ALL=limited".
func entries(b []byte) []entry {
	var out []entry
	var body strings.Builder
	for _, l := range strings.Split(string(b), "\n") {
		if i := strings.IndexByte(l, '#'); i >= 0 {
			l = l[:i]
		}
		body.WriteString(" " + strings.TrimSpace(l))
	}
	for _, e := range strings.Split(body.String(), ";") {
		e = strings.Join(strings.Fields(e), " ")
		if e == "" {
			continue
		}
		head, _, _ := strings.Cut(e, ":")
		name, _, _ := strings.Cut(head, "=")
		name, _, _ = strings.Cut(name, ",")
		out = append(out, entry{name: strings.TrimSpace(name), text: strings.ReplaceAll(e, ", ", ",")})
	}
	return out
}

func find(es []entry, name string) *entry {
	for i := range es {
		if es[i].name == name {
			return &es[i]
		}
	}
	return nil
}

// portsChange is the change of Debian's PORTS (/etc/default/opensm) to
// the spec's port, nil when it names it already. opensm.service starts
// one opensm@GUID.service a port PORTS names, and its instances are
// PartOf it: restarting it leaves the instance of that port alone.
func portsChange(req *plan.Request, obs *Observed) *plan.Change {
	want := RenderPorts(obs.Ports, obs.Port.GUID)
	if bytes.Equal(want, obs.Ports) {
		return nil
	}
	c := &plan.Change{Address: PortsAddr, Action: plan.Update, Activation: plan.Now, Source: req.Pos("$.subnet_manager.port"),
		Attributes: []plan.Attr{
			{Name: "PORTS", Before: PortsOf(obs.Ports), After: obs.Port.GUID},
			{Name: "opensm.service", Before: "running", After: "restarted (opensm@" + obs.Port.GUID + ".service only)"},
		},
		Payload: &payload{file: obs.Layout.Ports, ports: true, content: want, previous: obs.Ports, restart: true, port: obs.Port}}
	if obs.Ports == nil {
		c.Action = plan.Create
	}
	return c
}

// sysconfigChange is the change of RHEL's /etc/sysconfig/opensm to the
// spec's priority (PRIORITY) and port (GUIDS: opensm on that port only),
// nil when it has them. The launcher reads the file only when
// opensm.service starts, so it restarts opensm.service.
func sysconfigChange(req *plan.Request, obs *Observed) *plan.Change {
	sm := req.Spec.SubnetManager
	want := obs.Sysconfig
	var attrs []plan.Attr
	set := func(name, value string) {
		if next := SetShellVar(want, name, value); !bytes.Equal(next, want) {
			attrs = append(attrs, plan.Attr{Name: name, Before: ShellVar(want, name), After: value})
			want = next
		}
	}
	if sm.Priority != nil {
		set("PRIORITY", strconv.Itoa(*sm.Priority))
	}
	if sm.Port != nil {
		set("GUIDS", obs.Port.GUID)
	}
	if len(attrs) == 0 {
		return nil
	}
	attrs = append(attrs, plan.Attr{Name: "opensm.service", Before: "running", After: "restarted (opensm-launch reads " + obs.Layout.Sysconfig + " only at start)"})
	c := &plan.Change{Address: LauncherAddr, Action: plan.Update, Activation: plan.Now, Source: req.Pos("$.subnet_manager"), Attributes: attrs,
		Payload: &payload{file: obs.Layout.Sysconfig, content: want, previous: obs.Sysconfig, restart: true, launched: true, port: obs.Port, expect: expectation{priority: sm.Priority}}}
	if obs.Sysconfig == nil {
		c.Action = plan.Create
	}
	return c
}

// keptStopped: the spec's services keep opensm stopped (active: false),
// so the subnet manager section writes its files only; opensm reads them
// when it starts.
func keptStopped(req *plan.Request) bool {
	for _, sv := range req.Spec.Services {
		if name := strings.TrimSuffix(sv.Name, ".service"); (name == "opensm" || strings.HasPrefix(name, "opensm@")) && sv.Active != nil && !*sv.Active {
			return true
		}
	}
	return false
}

// startWith says, on the file changes of a plan made while opensm does
// not run, what apply does about it: it starts opensm once the file is
// written and proves the fabric shows the spec (a restart a change would
// need is that start), or, where the spec's services keep opensm
// stopped, nothing: opensm reads the files when it starts.
func startWith(req *plan.Request, obs *Observed, changes []*plan.Change) {
	stopped := keptStopped(req)
	for _, c := range changes {
		pl, err := plan.PayloadOf[*payload](c)
		if err != nil || pl.start {
			continue // startChange's says it already
		}
		c.Attributes = slices.DeleteFunc(c.Attributes, func(a plan.Attr) bool {
			return a.Name == "opensm" || a.Name == PortsUnit // "running → restarted": it does not run
		})
		if stopped {
			c.Attributes = append(c.Attributes, plan.Attr{Name: "opensm", Before: "stopped", After: "stopped (services: active: false; it reads the file when it starts)"})
			continue
		}
		pl.start, pl.unit = true, obs.StartUnit
		c.Attributes = append(c.Attributes, plan.Attr{Name: "opensm", Before: "stopped", After: "started (" + obs.StartUnit + ", once the file is written)"})
	}
}

// startChange is the change that starts an opensm that does not run
// while its files are as the spec wants; nil where the spec's services
// keep it stopped.
func startChange(req *plan.Request, obs *Observed, wantParts []byte, exp expectation) *plan.Change {
	if keptStopped(req) {
		return nil
	}
	pl := &payload{file: obs.Layout.Partitions, partitions: req.Spec.SubnetManager.Partitions != nil, content: wantParts, previous: obs.Partitions, signalOnly: true,
		launched: obs.Layout.Sysconfig != "", port: obs.Port, expect: exp, start: true, unit: obs.StartUnit}
	addr := PartitionsAddr
	if req.Spec.SubnetManager.Partitions == nil {
		addr, pl.file, pl.content, pl.previous = ConfAddr, obs.Layout.Conf, obs.Conf, obs.Conf
	}
	return &plan.Change{Address: addr, Action: plan.Update, Activation: plan.Now, Source: req.Pos("$.subnet_manager"),
		Attributes: []plan.Attr{{Name: "opensm", Before: "stopped", After: "started (" + obs.StartUnit + ")"}}, Payload: pl}
}
