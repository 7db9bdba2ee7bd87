package subnetmanager

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.TypedCapturer[*Observed] = (*Provider)(nil)

// CaptureFrom implements plan.TypedCapturer: the section from the files,
// partitions.conf's entries (the forms rdmaform writes and the flags the
// spec has; an entry it cannot express stops the capture with an error
// naming it), the keys of opensm.conf the spec manages and the port
// opensm is bound to (boundPort). A host with neither file, no priority
// in RHEL's launcher file and no bound port has no section.
//
// Equivalent to: cat /etc/opensm/partitions.conf /etc/opensm/opensm.conf
// /etc/default/opensm (RHEL: /etc/rdma/..., and PRIORITY and GUIDS of
// /etc/sysconfig/opensm)
func (p *Provider) CaptureFrom(obs *Observed, req *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	if obs == nil {
		return nil
	}
	conf := ParseConf(obs.Conf)
	port := boundPort(obs, conf, req)
	if obs.Partitions == nil && obs.Conf == nil && port == nil && ShellVar(obs.Sysconfig, "PRIORITY") == "" {
		return nil
	}
	sm := &schema.SubnetManager{Port: port}
	if v, ok := conf["sm_priority"]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			sm.Priority = &n
		}
	}
	// RHEL's launcher passes PRIORITY as -p, over opensm.conf's.
	if v := ShellVar(obs.Sysconfig, "PRIORITY"); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			sm.Priority = &n
		}
	}
	o := &schema.SMOptions{}
	boolean := func(k string) *bool {
		v, ok := conf[k]
		if !ok {
			return nil
		}
		b := v == "TRUE"
		return &b
	}
	num := func(k string) *int {
		n, err := strconv.Atoi(conf[k])
		if err != nil {
			return nil
		}
		return &n
	}
	o.PartEnforce = conf["part_enforce"]
	o.RoutingEngine = conf["routing_engine"]
	o.NoPartitionEnforcement = boolean("no_partition_enforcement")
	o.AllowBothPKeys = boolean("allow_both_pkeys")
	o.QoS = boolean("qos")
	o.SweepInterval, o.LMC = num("sweep_interval"), num("lmc")
	o.SMInfoPollingTimeout, o.PollingRetryNumber = num("sminfo_polling_timeout"), num("polling_retry_number")
	if *o != (schema.SMOptions{}) {
		sm.Options = o
	}
	for _, e := range entries(obs.Partitions) {
		pt, err := capturePartition(e.text)
		if err != nil {
			return fmt.Errorf("%s: %w", obs.Layout.Partitions, err)
		}
		sm.Partitions = append(sm.Partitions, pt)
	}
	spec.SubnetManager = sm
	return nil
}

// boundPort is the port of this host the installed package binds opensm
// to, as the spec names it: the one GUID of Debian's PORTS, of RHEL's
// launcher's GUIDS, or else opensm.conf's guid. nil when it names none,
// ALL, several ports, or a GUID of no InfiniBand port of this host: the
// spec's port: is one port of this host.
func boundPort(obs *Observed, conf map[string]string, req *plan.Request) *schema.SMPort {
	var v string
	switch {
	case obs.Layout.Ports != "":
		v = PortsOf(obs.Ports)
	case obs.Layout.Sysconfig != "":
		v = ShellVar(obs.Sysconfig, "GUIDS")
	default:
		v = conf["guid"]
	}
	want, ok := parseGUID(v)
	if !ok || req == nil || req.Inv == nil {
		return nil
	}
	for _, d := range req.Inv.Devices {
		for _, pt := range d.Ports {
			if g, ok := parseGUID(pt.GUID); ok && g == want && pt.LinkLayer == linklayer.InfiniBand {
				return &schema.SMPort{Device: d.Name, Port: pt.Num}
			}
		}
	}
	return nil
}

// parseGUID reads one port GUID, 0x and 16 hex digits or fewer.
func parseGUID(s string) (uint64, bool) {
	h, ok := strings.CutPrefix(strings.ToLower(strings.TrimSpace(s)), "0x")
	if !ok || h == "" || len(h) > 16 {
		return 0, false
	}
	g, err := strconv.ParseUint(h, 16, 64)
	return g, err == nil
}

var codeMTU = map[int]int{1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096}

// capturePartition reads one entry, "storage=0x0002,ipoib,mtu=5 : SELF=full,ALL_CAS".
func capturePartition(text string) (schema.Partition, error) {
	var pt schema.Partition
	head, members, ok := strings.Cut(text, ":")
	if !ok {
		return pt, fmt.Errorf("entry %q has no ':'", text)
	}
	flags := strings.Split(head, ",")
	name, key, _ := strings.Cut(strings.TrimSpace(flags[0]), "=")
	v, err := strconv.ParseInt(strings.TrimSpace(key), 0, 32)
	if err != nil {
		return pt, fmt.Errorf("entry %q: P_Key %q is not a number", text, key)
	}
	pt.Name = strings.TrimSpace(name)
	pt.PKey = &schema.PKey{Value: int(v), Text: fmt.Sprintf("0x%04x", v)}
	for _, f := range flags[1:] {
		k, val, _ := strings.Cut(strings.TrimSpace(f), "=")
		n, _ := strconv.Atoi(val)
		switch k {
		case "ipoib":
			if pt.IPoIB == nil {
				pt.IPoIB = &schema.PartitionIPoIB{}
			}
		case "mtu", "rate", "sl":
			if pt.IPoIB == nil {
				return pt, fmt.Errorf("entry %q: %s without ipoib", text, k)
			}
			switch k {
			case "mtu":
				m := codeMTU[n]
				pt.IPoIB.MTU = &m
			case "rate":
				pt.IPoIB.Rate = &n
			default:
				pt.IPoIB.SL = &n
			}
		case "defmember":
			pt.DefaultMembership = val
		default:
			return pt, fmt.Errorf("entry %q: flag %q is not one the spec has", text, k)
		}
	}
	for _, m := range strings.Split(members, ",") {
		m = strings.TrimSpace(m)
		if m == "" {
			continue
		}
		g, ms, _ := strings.Cut(m, "=")
		g = strings.ToLower(strings.TrimSpace(g))
		if !slices.Contains(schema.SMKeywords, g) {
			n, err := strconv.ParseUint(g, 0, 64)
			if err != nil {
				return pt, fmt.Errorf("entry %q: member %q is not a port GUID", text, g)
			}
			g = fmt.Sprintf("0x%016x", n)
		}
		pt.Members = append(pt.Members, schema.PartitionMember{GUID: g, Membership: strings.TrimSpace(ms)})
	}
	return pt, nil
}
