// Package lossless checks a RoCE port's lossless path as one chain, link
// by link, and names the first link that breaks:
//
//	rdma_cm ToS → DSCP (ToS >> 2) → priority (trust dscp and the DSCP map)
//	→ PFC on that priority → ECN (DCQCN) on it → an ETS share (or strict)
//	for its traffic class; and the CNPs on a lossless or strict priority.
//
// It reads nothing: plan gives it the state after apply (the spec over
// the host), audit the host as it is, lint the spec alone. A value the
// caller does not know stays nil, and the links that need it are unknown,
// never broken.
package lossless

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Facts are the values the chain follows; nil is unknown.
type Facts struct {
	// ToS is rdma_cm's default RoCE ToS of the port; ToSFrom says whose
	// it is ("the spec", "the host").
	ToS     *int
	ToSFrom string
	// ToSWhy says why the ToS is not known.
	ToSWhy string
	// Trust is "dscp", "pcp" or "" (unknown).
	Trust string
	// Map is the DSCP → priority map the port uses with trust dscp.
	Map *[64]int
	// Named are the DSCPs the spec's dscp_map names: the DSCPs the
	// operator meant for a class.
	Named []int
	PFC   *[8]bool
	// ECN is per priority, on as reaction and notification point; nil
	// when unknown, with ECNWhy saying why (no MLNX_OFED tree).
	ECN    *[8]bool
	ECNWhy string
	ETS    *ETS
	// CNPDSCP and CNPPrio are the CNPs' DSCP and 802.1p priority.
	CNPDSCP, CNPPrio *int
}

// ETS is an ETS table: priority → class, and each class's scheduler and
// bandwidth share.
type ETS struct {
	PrioTC [8]int
	TSA    [8]string
	BW     [8]int
}

// Asks reports whether a qos block asks for a lossless class, so that
// its chain is followed: it trusts DSCP, or it turns PFC on for some
// priority. A block that only describes a port (what show captures of
// a port in PCP trust with PFC off) asks for none.
func Asks(trust string, pfc *[]int) bool {
	return trust == "dscp" || (pfc != nil && len(*pfc) > 0)
}

// Severity is a link's result.
type Severity int

// The results of a link.
const (
	// OK: the link holds.
	OK Severity = iota
	// Unknown: a value the link needs is not known; it is not checked.
	Unknown
	// Warning: the link cannot be proven from the NIC's side (the
	// switches or a VLAN could make it fine).
	Warning
	// Error: the link is broken on the NIC's side.
	Error
)

func (s Severity) String() string {
	return [...]string{"ok", "unknown", "warning", "error"}[s]
}

// Link names, in chain order.
const (
	LinkToS     = "tos"
	LinkDSCPMap = "dscp_map"
	LinkPFC     = "pfc"
	LinkECN     = "ecn"
	LinkETS     = "ets"
	LinkCNP     = "cnp"
	LinkCNPDSCP = "cnp_dscp"
)

// Link is one checked link: its name, result, and the chain up to it in
// an operator's words ("rdma_cm ToS 106 → DSCP 26 → priority 3 (dscp
// map) → PFC is off on priority 3").
type Link struct {
	Name     string
	Severity Severity
	Text     string
	// Field is the qos (or roce) field the link is about, for the spec
	// position: "roce.tos", "qos.dscp_map", "qos.pfc", "qos.ecn",
	// "qos.ets", "qos.cnp.priority", "qos.cnp.dscp", "qos.trust".
	Field string
}

// Result is a checked chain.
type Result struct {
	Links []Link
}

// First is the first link that breaks (a warning or an error).
func (r Result) First() (Link, bool) {
	for _, l := range r.Links {
		if l.Severity >= Warning {
			return l, true
		}
	}
	return Link{}, false
}

// FirstError is the first link that is broken for sure.
func (r Result) FirstError() (Link, bool) {
	for _, l := range r.Links {
		if l.Severity == Error {
			return l, true
		}
	}
	return Link{}, false
}

// Summary words the whole chain as far as it was followed: the first
// break; or the RoCE part's last link, the CNP part's last link, and
// every link of the RoCE part that could not be checked.
func (r Result) Summary() string {
	if l, ok := r.First(); ok {
		return l.Text
	}
	var roce, cnp string
	var unknown []string
	for i, l := range r.Links {
		switch {
		case l.Name == LinkCNP || l.Name == LinkCNPDSCP:
			cnp = l.Text
		case l.Severity == Unknown && i+1 < len(r.Links) && r.Links[i+1].Name != LinkCNP:
			unknown = append(unknown, l.Text)
		default:
			roce = l.Text
		}
	}
	return strings.Join(slices.DeleteFunc(append(append([]string{roce}, unknown...), cnp), func(s string) bool { return s == "" }), "; ")
}

// strictClass reports whether priority p's class is served before the
// ets classes: tsa strict, or mlx5's default vendor classes (mlx5e_ets_init
// sets them; mlx5e_build_tc_group in en_dcbnl.c puts them in the highest
// group, 7, and ets classes of 0% in the lowest, which is "no share").
func strictClass(e *ETS, p int) bool {
	if e == nil {
		return false
	}
	tc := e.PrioTC[p]
	if tc < 0 || tc > 7 {
		return false
	}
	return e.TSA[tc] == "strict" || e.TSA[tc] == "vendor"
}

func pfcList(b [8]bool) string {
	var on []string
	for p, v := range b {
		if v {
			on = append(on, strconv.Itoa(p))
		}
	}
	if len(on) == 0 {
		return "none"
	}
	return strings.Join(on, ",")
}

// Check follows f's chain and returns every link it reached.
func Check(f Facts) Result {
	var r Result
	add := func(name, field string, s Severity, format string, args ...any) {
		r.Links = append(r.Links, Link{Name: name, Field: field, Severity: s, Text: fmt.Sprintf(format, args...)})
	}
	r.roce(f, add)
	r.cnp(f, add)
	return r
}

type adder func(name, field string, s Severity, format string, args ...any)

// roce follows the RoCE traffic: ToS → DSCP → priority → PFC, ECN, ETS.
func (r *Result) roce(f Facts, add adder) {
	if f.ToS == nil {
		why := f.ToSWhy
		if why == "" {
			why = "the spec sets no roce tos or dscp"
		}
		add(LinkToS, "roce.tos", Unknown, "the rdma_cm ToS is not known (%s): the chain of RoCE's own traffic is not followed", why)
		return
	}
	tos, dscp := *f.ToS, *f.ToS>>2
	head := fmt.Sprintf("rdma_cm ToS %d (%s) → DSCP %d", tos, f.ToSFrom, dscp)
	if tos&3 == 3 {
		add(LinkToS, "roce.tos", Error, "%s with ECN field 3 (CE, congestion experienced), which no sender marks: use ToS %d (ECT(0), roce: {dscp: %d, ecn: true}) or %d", head, dscp<<2|2, dscp, dscp<<2)
		return
	}
	switch f.Trust {
	case "pcp": // iboe_tos_to_sl in drivers/infiniband/core/cma.c
		add(LinkDSCPMap, "qos.trust", Warning, "%s, but the port trusts pcp: RoCE's priority is then its VLAN PCP, rdma_cm's sl (a VLAN's egress map of the ToS's priority, else the netdev's priority-to-class map, else 0), not the DSCP, and rdmaform does not follow those maps; with trust: dscp the chain can be proven", head)
		return
	case "":
		add(LinkDSCPMap, "qos.trust", Unknown, "%s → priority unknown (the trust is not known)", head)
		return
	}
	if f.Map == nil {
		add(LinkDSCPMap, "qos.dscp_map", Unknown, "%s → priority unknown (the DSCP map is not known)", head)
		return
	}
	prio := f.Map[dscp]
	lossless := f.PFC != nil && f.PFC[prio]
	if f.PFC != nil && !lossless && !slices.Contains(f.Named, dscp) {
		// The spec names a DSCP for a lossless priority and the ToS misses it.
		for _, d := range f.Named {
			if p := f.Map[d]; f.PFC[p] {
				add(LinkToS, "roce.tos", Error, "%s → priority %d, but the dscp_map puts DSCP %d on lossless priority %d: the ToS is DSCP << 2 (| 2 for ECN), so DSCP %d is ToS %d (%d with ECN)",
					head, prio, d, p, d, d<<2, d<<2|2)
				return
			}
		}
	}
	add(LinkToS, "roce.tos", OK, "%s", head)
	head = fmt.Sprintf("%s → priority %d (dscp map)", head, prio)
	if f.PFC == nil {
		add(LinkPFC, "qos.pfc", Unknown, "%s → PFC not known", head)
		return
	}
	if !lossless {
		if pfcList(*f.PFC) == "none" {
			add(LinkPFC, "qos.pfc", Error, "%s → PFC is off on priority %d (off on every priority): RoCE is dropped under congestion", head, prio)
		} else {
			add(LinkDSCPMap, "qos.dscp_map", Error, "%s, but PFC is on priority %s: map DSCP %d to a PFC priority (dscp_map: {%d: P}) or add %d to pfc", head, pfcList(*f.PFC), dscp, dscp, prio)
		}
		return
	}
	add(LinkPFC, "qos.pfc", OK, "%s → PFC on", head)
	head += " → PFC on"
	switch {
	case f.ECN == nil:
		why := f.ECNWhy
		if why == "" {
			why = "not known"
		}
		add(LinkECN, "qos.ecn", Unknown, "%s → ECN %s", head, why)
		head += " → ECN unknown"
	case !f.ECN[prio]:
		add(LinkECN, "qos.ecn", Error, "%s, but ECN (DCQCN) is off on priority %d: no CNPs slow the senders, PFC alone holds the congestion back", head, prio)
		return
	default:
		add(LinkECN, "qos.ecn", OK, "%s → ECN on", head)
		head += " → ECN on"
	}
	if f.ETS == nil {
		add(LinkETS, "qos.ets", Unknown, "%s → ETS not known", head)
		return
	}
	tc := f.ETS.PrioTC[prio]
	switch {
	case strictClass(f.ETS, prio):
		add(LinkETS, "qos.ets", OK, "%s → traffic class %d (%s)", head, tc, f.ETS.TSA[tc])
	case tc >= 0 && tc <= 7 && f.ETS.TSA[tc] == "ets" && f.ETS.BW[tc] > 0:
		add(LinkETS, "qos.ets", OK, "%s → traffic class %d (ets %d%%)", head, tc, f.ETS.BW[tc])
	default:
		tsa := "?"
		if tc >= 0 && tc <= 7 {
			tsa = f.ETS.TSA[tc]
		}
		add(LinkETS, "qos.ets", Error, "%s → traffic class %d has no ETS share (tsa %s, 0%% bandwidth): RoCE waits behind every other class; give class %d a bw share or tsa strict", head, tc, tsa, tc)
	}
}

// cnp follows the CNPs: their priority must be lossless (in pfc) or on a
// strict class; their DSCP, through this port's map, the same (a warning:
// the switches classify CNPs with their own map).
func (r *Result) cnp(f Facts, add adder) {
	if f.CNPPrio == nil {
		add(LinkCNP, "qos.cnp", Unknown, "the CNP priority is not known")
		return
	}
	c := *f.CNPPrio
	ok := func(p int) (bool, string) {
		switch {
		case f.PFC != nil && f.PFC[p]:
			return true, "PFC on"
		case strictClass(f.ETS, p):
			return true, fmt.Sprintf("strict class %d", f.ETS.PrioTC[p])
		}
		return false, ""
	}
	if f.PFC == nil && f.ETS == nil {
		add(LinkCNP, "qos.cnp.priority", Unknown, "CNPs on priority %d: PFC and ETS not known", c)
		return
	}
	good, why := ok(c)
	if !good && f.ETS == nil {
		add(LinkCNP, "qos.cnp.priority", Unknown, "CNPs on priority %d, not in pfc (%s); ETS not known", c, pfcListOf(f.PFC))
		return
	}
	if !good {
		add(LinkCNP, "qos.cnp.priority", Error, "CNPs go out on priority %d, which is neither in pfc (%s) nor on a strict ETS class: CNPs queued behind data or dropped under congestion come too late for DCQCN; add it to pfc or give its class tsa strict", c, pfcListOf(f.PFC))
		return
	}
	add(LinkCNP, "qos.cnp.priority", OK, "CNPs on priority %d (%s)", c, why)
	if f.CNPDSCP == nil || f.Trust != "dscp" || f.Map == nil {
		return
	}
	d := *f.CNPDSCP
	p := f.Map[d]
	if good, _ := ok(p); !good {
		add(LinkCNPDSCP, "qos.cnp.dscp", Warning, "CNPs carry DSCP %d → priority %d (this port's dscp map), which is neither in pfc (%s) nor on a strict class: a switch that classifies with the same map queues them on a lossy priority", d, p, pfcListOf(f.PFC))
		return
	}
	add(LinkCNPDSCP, "qos.cnp.dscp", OK, "CNPs carry DSCP %d → priority %d", d, p)
}

func pfcListOf(b *[8]bool) string {
	if b == nil {
		return "not known"
	}
	return pfcList(*b)
}
