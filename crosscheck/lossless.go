package crosscheck

import (
	"github.com/rdmaform/rdmaform/providers/qos/lossless"
	"github.com/rdmaform/rdmaform/schema"
)

// lossless follows each RoCE port's lossless chain (providers/qos/lossless)
// as its spec alone gives it: the spec's ToS → DSCP → priority (trust and
// dscp_map over the default dscp >> 3) → pfc, ecn and an ets share; the
// CNPs' DSCP. What the spec leaves out is not known and not checked (plan
// and audit follow it on the host). A link broken on the NIC's side is an
// error, one the NIC cannot prove (trust pcp, the CNPs' DSCP) a warning.
// The CNP priority stays cnpClass's rule, which wants it in pfc or on a
// strict class of the spec's own ets.
func (l *linter) lossless() {
	for _, h := range l.hosts {
		for _, r := range rocePorts(h) {
			p := r.ref.p()
			if p.QoS == nil || p.Roce == nil || p.Roce.Tos == nil || !lossless.Asks(p.QoS.Trust, p.QoS.PFC) {
				continue
			}
			res := lossless.Check(specFacts(p))
			link, broken := res.First()
			if !broken || link.Name == lossless.LinkCNP {
				continue
			}
			at := linkPath(h, r.ref.path(), link.Field)
			if link.Severity == lossless.Warning {
				l.warn(h, at, "%s: the lossless path: %s", r.ref, link.Text)
				continue
			}
			l.add(h, at, "%s: the lossless path breaks: %s", r.ref, link.Text)
		}
	}
}

// specFacts are a port's chain facts as its spec gives them.
func specFacts(p *schema.Port) lossless.Facts {
	q := p.QoS
	f := lossless.Facts{ToS: p.Roce.Tos, ToSFrom: "the spec", Trust: q.Trust}
	if q.Trust == "dscp" {
		var m [64]int
		for d := range m {
			m[d] = d >> 3
		}
		for _, e := range q.DSCPMap {
			m[e.DSCP] = e.Prio
			f.Named = append(f.Named, e.DSCP)
		}
		f.Map = &m
	}
	set := func(ps *[]int) *[8]bool {
		if ps == nil {
			return nil
		}
		var b [8]bool
		for _, v := range *ps {
			if v >= 0 && v < 8 {
				b[v] = true
			}
		}
		return &b
	}
	f.PFC, f.ECN = set(q.PFC), set(q.ECN)
	if e := q.ETS; e != nil && len(e.PrioTC) == 8 && len(e.TSA) == 8 && len(e.BW) == 8 {
		var x lossless.ETS
		copy(x.PrioTC[:], e.PrioTC)
		copy(x.TSA[:], e.TSA)
		copy(x.BW[:], e.BW)
		f.ETS = &x
	}
	if q.CNP != nil {
		f.CNPDSCP, f.CNPPrio = q.CNP.DSCP, q.CNP.Priority
	}
	return f
}

// linkPath is where a link's finding points: its field ("qos.pfc",
// "roce.tos", "qos.cnp.dscp"), or the nearest block the spec has.
func linkPath(h *Host, port, field string) string {
	cands := []string{port + "." + field}
	switch field {
	case "roce.tos":
		cands = append(cands, port+".roce.dscp", port+".roce")
	case "qos.cnp.dscp", "qos.cnp.priority":
		cands = append(cands, port+".qos.cnp", port+".qos")
	default:
		cands = append(cands, port+".qos")
	}
	for _, c := range cands {
		if h.Spec.Src.Has(c) {
			return c
		}
	}
	return port
}
