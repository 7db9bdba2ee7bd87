package qos

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// want is what a change asks of one netdev; nil and "" leave a setting
// alone.
type want struct {
	dcbx  string // host, firmware
	trust string // dscp, pcp
	// dscp is the full DSCP -> priority map with trust dscp.
	dscp [64]int
	// app, when set, is an exact APP table to put back (a revert).
	app   *map[int]int
	pfc   *[8]bool
	delay *int
	ets   *ETS
	// pause is global pause, rx then tx.
	pause *[2]bool
	// ecn is the ECN enables per priority, reaction point then
	// notification point.
	ecn *[2][8]bool
	// cnp is the CNP's DSCP and priority; nil leaves either alone.
	cnp *cnpWant
	// card is the card port (P<n> of the firmware parameters), for the
	// finding on a driver without the OFED tree.
	card int
}

// cnpWant is a CNP's DSCP and 802.1p priority; nil leaves one alone.
type cnpWant struct{ dscp, prio *int }

// wantOf turns a spec's qos block into what the netdev must have. dcbx
// defaults to host when the block sets anything DCB negotiates: static
// settings in a firmware-owned port are the switch's to overwrite.
func wantOf(q *schema.QoS) want {
	w := want{dcbx: q.DCBX, trust: q.Trust}
	if w.trust == "dscp" {
		for d := range w.dscp {
			w.dscp[d] = d >> 3
		}
		for _, e := range q.DSCPMap {
			w.dscp[e.DSCP] = e.Prio
		}
	}
	if q.PFC != nil {
		var b [8]bool
		for _, p := range *q.PFC {
			b[p] = true
		}
		w.pfc = &b
	}
	w.delay = q.CableLength
	if q.ETS != nil && len(q.ETS.PrioTC) == 8 && len(q.ETS.TSA) == 8 && len(q.ETS.BW) == 8 {
		e := ETS{}
		copy(e.PrioTC[:], q.ETS.PrioTC)
		copy(e.TSA[:], q.ETS.TSA)
		copy(e.BW[:], q.ETS.BW)
		w.ets = &e
	}
	if q.Pause != nil {
		w.pause = &[2]bool{*q.Pause, *q.Pause}
	}
	if q.ECN != nil {
		var b [8]bool
		for _, p := range *q.ECN {
			b[p] = true
		}
		w.ecn = &[2][8]bool{b, b}
	}
	if q.CNP != nil {
		w.cnp = &cnpWant{dscp: q.CNP.DSCP, prio: q.CNP.Priority}
	}
	if w.dcbx == "" && w.setsDCB() {
		w.dcbx = "host"
	}
	return w
}

// setsDCB reports whether w sets anything DCBX negotiates.
func (w want) setsDCB() bool {
	return w.trust != "" || w.app != nil || w.pfc != nil || w.delay != nil || w.ets != nil
}

func (w want) need() need {
	return need{dcb: w.dcbx != "" || w.setsDCB(), pause: w.pause != nil, ecn: w.ecn != nil, cnp: w.cnp != nil,
		pfc: w.pfc != nil || w.delay != nil, ets: w.ets != nil, app: w.trust != "" || w.app != nil}
}

// step is one write: a command, or a sysfs attribute.
type step struct {
	args        []string
	file, value string
}

func (s step) String() string {
	if s.file != "" {
		return fmt.Sprintf("echo %s > %s", s.value, s.file)
	}
	return strings.Join(s.args, " ")
}

// add records one differing setting: an attribute for the plan, and the
// words for an error should it still differ after apply.
func (c *compared) add(name, before, after string) {
	c.attrs = append(c.attrs, plan.Attr{Name: name, Before: before, After: after})
	c.msgs = append(c.msgs, fmt.Sprintf("%s is %s, not %s", name, before, after))
}

// differs words what still differs, for an error: "pfc is none, not 3".
func (c compared) differs() []string { return c.msgs }

// compared is what differs between a want and a port.
type compared struct {
	steps []step
	attrs []plan.Attr
	msgs  []string
	// disrupts: a step takes the link down (PFC) or reopens the queues
	// (trust).
	disrupts bool
	// problems are why the port cannot be brought to want.
	problems []string
}

// compare computes the writes that bring p to w, in the order they must
// run: DCBX owner first (a firmware-owned port takes host settings only
// after), then the APP table, ETS, PFC, pause and ECN.
func compare(w want, p *Port) compared {
	var c compared
	nd := p.Netdev
	n := w.need()
	if n.dcb && p.NoDCB != "" {
		c.problems = append(c.problems, fmt.Sprintf("%s has no DCB support: `dcb -j pfc show dev %s` answered %q", nd, nd, p.NoDCB))
		n.dcb = false
	}
	if n.dcb {
		switch {
		case w.dcbx == "host" && !p.DCBXHost:
			c.steps = append(c.steps, step{args: []string{"dcb", "dcbx", "set", "dev", nd, "host", "cee", "ieee"}})
			c.add("dcbx", "firmware", "host")
		case w.dcbx == "firmware" && p.DCBXHost:
			c.problems = append(c.problems, fmt.Sprintf("DCB on %s is owned by the host; iproute2's dcb cannot hand it back to the firmware (its dcbx set needs at least one flag), so run `mlnx_qos -i %s -d fw` once or reload the driver", nd, nd))
		}
		c.app(w, p)
		c.etsStep(w, p)
		c.pfcStep(w, p)
	}
	if w.pause != nil {
		if p.NoPause != "" {
			c.problems = append(c.problems, fmt.Sprintf("global pause of %s cannot be read: `ethtool -a %s` answered %q", nd, nd, p.NoPause))
		} else if have := [2]bool{p.PauseRX, p.PauseTX}; have != *w.pause {
			rx, tx := onOff(w.pause[0]), onOff(w.pause[1])
			c.steps = append(c.steps, step{args: []string{"ethtool", "-A", nd, "rx", rx, "tx", tx}})
			c.add("pause", fmt.Sprintf("rx %s, tx %s", onOff(p.PauseRX), onOff(p.PauseTX)), fmt.Sprintf("rx %s, tx %s", rx, tx))
		}
	}
	if w.ecn != nil {
		if !p.ECNTree {
			c.problems = append(c.problems, fmt.Sprintf("%s has no per-priority ECN tree (%s/roce_rp, MLNX_OFED's mlx5); with the upstream driver ECN is chosen per priority by firmware ROCE_CC_PRIO_MASK_P<port> (a bitmask: 8 is priority 3), set under the device's firmware params, so drop qos.ecn", nd, ECNDir(nd)))
		} else if have := [2][8]bool{p.ECNRP, p.ECNNP}; have != *w.ecn {
			for side, dir := range []string{"roce_rp", "roce_np"} {
				for prio := 0; prio < 8; prio++ {
					if have[side][prio] != w.ecn[side][prio] {
						c.steps = append(c.steps, step{file: path.Join(ECNDir(nd), dir, "enable", strconv.Itoa(prio)), value: bit(w.ecn[side][prio])})
					}
				}
			}
			c.add("ecn", ecnList(have), ecnList(*w.ecn))
		}
	}
	if w.cnp != nil {
		c.cnpSteps(w, p)
	}
	return c
}

// cnpSteps writes the CNP's DSCP and priority that differ, or says that
// the driver has no such files and where the value lives instead.
func (c *compared) cnpSteps(w want, p *Port) {
	nd := p.Netdev
	if !p.CNPTree {
		n := "<n>"
		if w.card > 0 {
			n = strconv.Itoa(w.card)
		}
		c.problems = append(c.problems, fmt.Sprintf("%s has no CNP settings (%s, MLNX_OFED's mlx5); with the upstream driver the CNP's DSCP and priority are firmware CNP_DSCP_P%s and CNP_802P_PRIO_P%s (next boot), set under the device's firmware params, so drop qos.cnp", nd, CNPFiles(nd)[0], n, n))
		return
	}
	files := CNPFiles(nd)
	for i, s := range []struct {
		name string
		want *int
		have int
	}{{"cnp_dscp", w.cnp.dscp, p.CNPDSCP}, {"cnp_priority", w.cnp.prio, p.CNPPrio}} {
		if s.want == nil || *s.want == s.have {
			continue
		}
		c.steps = append(c.steps, step{file: files[i], value: strconv.Itoa(*s.want)})
		c.add(s.name, strconv.Itoa(s.have), strconv.Itoa(*s.want))
	}
}

// app brings the APP table's DSCP entries to w: the whole 64-entry map
// with trust dscp (only the entries that differ are written), none with
// trust pcp.
func (c *compared) app(w want, p *Port) {
	nd := p.Netdev
	switch {
	case w.app != nil:
		if sameApp(p.App, *w.app) {
			return
		}
		if len(p.App) > 0 {
			c.steps = append(c.steps, step{args: []string{"dcb", "app", "flush", "dev", nd, "dscp-prio"}})
		}
		if len(*w.app) > 0 {
			args := []string{"dcb", "app", "replace", "dev", nd, "dscp-prio"}
			var ds []int
			for d := range *w.app {
				ds = append(ds, d)
			}
			sort.Ints(ds)
			for _, d := range ds {
				args = append(args, fmt.Sprintf("%d:%d", d, (*w.app)[d]))
			}
			c.steps = append(c.steps, step{args: args})
		}
		c.disrupts = c.disrupts || (len(p.App) > 0) != (len(*w.app) > 0)
		c.add("dscp_map", describeApp(p.App), describeExact(*w.app))
	case w.trust == "dscp":
		var entries, before []string
		for d := 0; d < 64; d++ {
			cur := p.App[d]
			if len(cur) == 1 && cur[0] == w.dscp[d] {
				continue
			}
			entries = append(entries, fmt.Sprintf("%d:%d", d, w.dscp[d]))
			if len(cur) == 0 {
				before = append(before, fmt.Sprintf("%d:-", d))
			} else {
				for _, pr := range cur {
					before = append(before, fmt.Sprintf("%d:%d", d, pr))
				}
			}
		}
		if p.Trust() != "dscp" {
			c.add("trust", p.Trust(), "dscp")
			c.disrupts = true
		}
		if len(entries) == 0 {
			return
		}
		c.steps = append(c.steps, step{args: append([]string{"dcb", "app", "replace", "dev", nd, "dscp-prio"}, entries...)})
		b, a := summarize(before), summarize(entries)
		if len(p.App) == 0 {
			// A whole new table: say what it is, not 64 entries.
			b, a = "none", describeMap(w.dscp)
		}
		c.add("dscp_map", b, a)
	case w.trust == "pcp" && len(p.App) > 0:
		c.steps = append(c.steps, step{args: []string{"dcb", "app", "flush", "dev", nd, "dscp-prio"}})
		c.add("trust", "dscp", "pcp")
		c.disrupts = true
	}
}

func (c *compared) etsStep(w want, p *Port) {
	if w.ets == nil || sameETS(*w.ets, p.ETS) {
		return
	}
	args := []string{"dcb", "ets", "set", "dev", p.Netdev, "prio-tc"}
	for i, tc := range w.ets.PrioTC {
		args = append(args, fmt.Sprintf("%d:%d", i, tc))
	}
	args = append(args, "tc-tsa")
	for i, t := range w.ets.TSA {
		args = append(args, fmt.Sprintf("%d:%s", i, t))
	}
	args = append(args, "tc-bw")
	for i, bw := range w.ets.BW {
		args = append(args, fmt.Sprintf("%d:%d", i, bw))
	}
	c.steps = append(c.steps, step{args: args})
	c.add("ets", describeETS(p.ETS), describeETS(*w.ets))
}

// sameETS compares an ETS table as mlx5 reports it back: the bandwidth of
// a strict class reads 100 (the hardware's "unlimited"), so only the ets
// classes' bandwidths count.
func sameETS(w, have ETS) bool {
	if w.PrioTC != have.PrioTC || w.TSA != have.TSA {
		return false
	}
	for i := range w.BW {
		if w.TSA[i] == "ets" && w.BW[i] != have.BW[i] {
			return false
		}
	}
	return true
}

func (c *compared) pfcStep(w want, p *Port) {
	pfcDiffers := w.pfc != nil && *w.pfc != p.PFC
	delayDiffers := w.delay != nil && *w.delay != p.Delay
	if !pfcDiffers && !delayDiffers {
		return
	}
	args := []string{"dcb", "pfc", "set", "dev", p.Netdev}
	if w.pfc != nil {
		args = append(args, "prio-pfc")
		for i, on := range w.pfc {
			args = append(args, fmt.Sprintf("%d:%s", i, onOff(on)))
		}
	}
	if w.delay != nil {
		args = append(args, "delay", strconv.Itoa(*w.delay))
	}
	c.steps = append(c.steps, step{args: args})
	if pfcDiffers {
		c.add("pfc", prioList(p.PFC), prioList(*w.pfc))
		// mlx5 toggles the port's link when the PFC priorities change.
		c.disrupts = true
	}
	if delayDiffers {
		c.add("cable_length", strconv.Itoa(p.Delay), strconv.Itoa(*w.delay))
	}
}

func sameApp(have map[int][]int, w map[int]int) bool {
	if len(have) != len(w) {
		return false
	}
	for d, pr := range w {
		if cur := have[d]; len(cur) != 1 || cur[0] != pr {
			return false
		}
	}
	return true
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func bit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// prioList is "3" or "3,4" for the priorities set, "none" for none.
func prioList(b [8]bool) string {
	var s []string
	for i, on := range b {
		if on {
			s = append(s, strconv.Itoa(i))
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ",")
}

// ecnList words the ECN enables: "3" when both points agree, else
// "rp 3, np none".
func ecnList(e [2][8]bool) string {
	if e[0] == e[1] {
		return prioList(e[0])
	}
	return "rp " + prioList(e[0]) + ", np " + prioList(e[1])
}

// summarize shortens a long list of DSCP:prio entries for the plan.
func summarize(entries []string) string {
	if len(entries) <= 8 {
		return strings.Join(entries, " ")
	}
	return fmt.Sprintf("%s ... (%d entries)", strings.Join(entries[:6], " "), len(entries))
}

// describeMap words a full DSCP map: the default dscp>>3 and the entries
// that differ from it.
func describeMap(m [64]int) string {
	var over []string
	for d, p := range m {
		if p != d>>3 {
			over = append(over, fmt.Sprintf("%d:%d", d, p))
		}
	}
	if len(over) == 0 {
		return "64 entries, dscp>>3"
	}
	return "64 entries, dscp>>3 but " + summarize(over)
}

func describeApp(app map[int][]int) string {
	if len(app) == 0 {
		return "none (trust pcp)"
	}
	var ds []int
	for d := range app {
		ds = append(ds, d)
	}
	sort.Ints(ds)
	var e []string
	for _, d := range ds {
		for _, pr := range app[d] {
			e = append(e, fmt.Sprintf("%d:%d", d, pr))
		}
	}
	return summarize(e)
}

func describeExact(app map[int]int) string {
	m := map[int][]int{}
	for d, p := range app {
		m[d] = []int{p}
	}
	return describeApp(m)
}

func describeETS(e ETS) string {
	tc := make([]string, 8)
	for i := range e.PrioTC {
		tc[i] = strconv.Itoa(e.PrioTC[i])
	}
	bw := make([]string, 8)
	for i := range e.BW {
		bw[i] = strconv.Itoa(e.BW[i])
		if e.TSA[i] != "ets" {
			bw[i] = "-"
		}
	}
	return fmt.Sprintf("prio_tc %s; tsa %s; bw %s", strings.Join(tc, ","), strings.Join(e.TSA[:], ","), strings.Join(bw, ","))
}

// payload is what Apply needs: the netdev, what it must have, and what it
// had at plan time (for Revert).
type payload struct {
	netdev string
	want   want
	before *Port
}

// Plan implements plan.TypedProvider.
func (p *Provider) Plan(req *plan.Request, obs *Observed, facts *plan.Facts) plan.Proposal {
	prop := diff(req, obs, facts)
	for _, t := range targets(req) {
		prop.Managed = append(prop.Managed, plan.Managed{Address: Address(t.dev, t.port), Path: t.specPath})
	}
	return prop
}

func diff(req *plan.Request, obs *Observed, facts *plan.Facts) plan.Proposal {
	var prop plan.Proposal
	for _, t := range targets(req) {
		sp := t.specPath
		addr := Address(t.dev, t.port)
		dev := req.Devices[t.devIndex]
		if dev == nil {
			continue // a device this plan creates (rxe): planned after it exists
		}
		port := dev.Port(t.port)
		if port == nil {
			prop.Errors = append(prop.Errors, req.Finding(sp, "%s has no port %d", t.dev, t.port))
			continue
		}
		if mc, ok := facts.LinkNow(dev.PCI, t.port); ok && port.LinkLayer != linklayer.Ethernet {
			prop.Errors = append(prop.Errors, req.Finding(sp, "port %d of %s changes its type in this plan (%s); plan again after apply to set its QoS", t.port, t.dev, mc.Cause))
			continue
		}
		if by, anew := facts.DeviceCreated(t.dev); anew && dev.PCI != "" {
			// mlx4_core registers the card anew: its netdevs come back with
			// the driver's DCB, which cannot be read before they do.
			prop.Errors = append(prop.Errors, req.Finding(sp, "%s is registered anew in this plan (%s), and %s's QoS returns to the driver's defaults; plan again after apply to set it", t.dev, by, t.netdev))
			continue
		}
		if staged, ok := facts.LinkAtBoot(dev.PCI, t.port); ok {
			if staged.To == linklayer.Ethernet && port.LinkLayer != linklayer.Ethernet {
				prop.Deferred = append(prop.Deferred, plan.Deferred{Address: addr, Reason: staged.Reason(), Source: req.Pos(sp)})
				continue
			}
			if staged.To != linklayer.Ethernet {
				prop.Errors = append(prop.Errors, req.Finding(sp, "port %d of %s becomes %s at the next boot (%s); qos (DCB) needs an Ethernet port", t.port, t.dev, staged.To, staged.Setting))
				continue
			}
		}
		if port.LinkLayer != linklayer.Ethernet {
			prop.Errors = append(prop.Errors, req.Finding(sp, "port %d of %s has link layer %s; qos (PFC, ETS, DSCP trust) is Ethernet DCB, which an InfiniBand port has none of", t.port, t.dev, port.LinkLayer))
			continue
		}
		if t.netdev == "" {
			prop.Errors = append(prop.Errors, req.Finding(sp, "port %d of %s has no netdev to set DCB on (is its Ethernet driver loaded?)", t.port, t.dev))
			continue
		}
		if obs == nil {
			prop.Errors = append(prop.Errors, req.Unreadable(sp, "QoS of %s was not read", t.netdev))
			continue
		}
		if e, ok := obs.Errs[key(t.dev, t.port)]; ok {
			prop.Errors = append(prop.Errors, req.Unreadable(sp, "reading the QoS of %s: %s", t.netdev, e))
			continue
		}
		have := obs.Ports[key(t.dev, t.port)]
		if have == nil {
			prop.Errors = append(prop.Errors, req.Finding(sp, "netdev %s of port %d of %s does not exist", t.netdev, t.port, t.dev))
			continue
		}
		w := wantOf(t.q)
		if w.need().dcb && obs.LLDPad != 0 {
			prop.Errors = append(prop.Errors, req.Finding(sp, "lldpad (PID %d) is running and may overwrite %s's DCB settings with what it negotiates; stop it (systemctl disable --now lldpad) or leave DCB to it", obs.LLDPad, t.netdev))
			continue
		}
		// DCBX_WILLING_Pn belongs to the card's physical port n, which
		// on a ConnectX-4+ is the PCI function, not the RDMA port.
		card := dev.CardPort(t.port)
		if w.dcbx == "firmware" && w.setsDCB() && willing(req.Spec.Devices[t.devIndex], card) {
			prop.Errors = append(prop.Errors, req.Finding(sp+".dcbx", "with dcbx: firmware and willing firmware (DCBX_WILLING_P%d is True unless the device's firmware params set it false) the switch's DCBX overwrites trust, PFC and ETS; use dcbx: host, or set DCBX_WILLING_P%d: false", card, card))
			continue
		}
		if w.dcbx == "firmware" && w.setsDCB() {
			// Not willing from the next boot on: until then the switch may
			// still overwrite what is set now.
			name := fmt.Sprintf("DCBX_WILLING_P%d", card)
			if v, staged := facts.StagedParam(dev.PCI, name); staged {
				prop.Deferred = append(prop.Deferred, plan.Deferred{Address: addr, Source: req.Pos(sp),
					Reason: fmt.Sprintf("waits for %s=%s on %s (reboot); until then the firmware's DCBX is willing", name, v, dev.PCI)})
				continue
			}
		}
		w.card = card
		cmp := compare(w, have)
		if len(cmp.problems) > 0 {
			for _, pr := range cmp.problems {
				prop.Errors = append(prop.Errors, req.Finding(sp, "%s", pr))
			}
			continue
		}
		if f := planChain(req, t, w, have); f != nil {
			prop.Errors = append(prop.Errors, *f)
			continue
		}
		if len(cmp.steps) == 0 {
			continue
		}
		c := &plan.Change{Address: addr, Action: plan.Update, Activation: plan.Runtime, Source: req.Pos(sp), Attributes: cmp.attrs, Payload: &payload{netdev: t.netdev, want: w, before: have}}
		if cmp.disrupts {
			c.Disrupts = []string{t.netdev}
		}
		prop.Changes = append(prop.Changes, c)
	}
	return prop
}

// willing reports whether the card port's firmware DCBX is willing to
// take the switch's settings: the factory default, unless the spec's
// firmware params set DCBX_WILLING_P<port> false.
func willing(d schema.Device, port int) bool {
	if d.Firmware == nil {
		return true
	}
	name := fmt.Sprintf("DCBX_WILLING_P%d", port)
	for _, p := range d.Firmware.Params {
		if strings.EqualFold(p.Name, name) {
			switch strings.ToLower(p.Value) {
			case "false", "0":
				return false
			}
		}
	}
	return true
}
