package qos

import (
	"context"
	"fmt"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/qos/lossless"
	"github.com/rdmaform/rdmaform/schema"
)

// This file joins the qos provider to the lossless chain
// (providers/qos/lossless): plan checks the state the spec leaves after
// apply, audit the host as it is (Chains).

// specToS is the rdma_cm ToS the spec sets on a target's port (Validate
// computes it from roce.dscp), with the spec path of the port.
func specToS(req *plan.Request, t target) (*int, string) {
	if t.devIndex >= len(req.Spec.Devices) {
		return nil, ""
	}
	for j, p := range req.Spec.Devices[t.devIndex].Ports {
		if p.Port == t.port {
			pp := schema.Path("devices", t.devIndex, "ports", j)
			if p.Roce != nil && p.Roce.Tos != nil {
				return p.Roce.Tos, pp
			}
			return nil, pp
		}
	}
	return nil, ""
}

// namedDSCPs are the DSCPs a qos block's dscp_map names.
func namedDSCPs(q *schema.QoS) []int {
	if q == nil {
		return nil
	}
	var out []int
	for _, e := range q.DSCPMap {
		out = append(out, e.DSCP)
	}
	return out
}

// hostMap is the DSCP map a port with DSCP trust uses: its APP entries
// over mlx5's default, dscp >> 3.
func hostMap(app map[int][]int) *[64]int {
	var m [64]int
	for d := range m {
		m[d] = d >> 3
		if ps := app[d]; len(ps) > 0 {
			m[d] = ps[0]
		}
	}
	return &m
}

func chainETS(e ETS) *lossless.ETS {
	return &lossless.ETS{PrioTC: e.PrioTC, TSA: e.TSA, BW: e.BW}
}

func both(rp, np [8]bool) *[8]bool {
	var b [8]bool
	for i := range b {
		b[i] = rp[i] && np[i]
	}
	return &b
}

const noECNTree = "not readable: the driver has no MLNX_OFED per-priority ECN tree (upstream mlx5 takes it from firmware ROCE_CC_PRIO_MASK_P<n>)"

// hostFacts are a port's facts as read; known says which objects were
// read (everything, for audit).
func hostFacts(p *Port, n need) lossless.Facts {
	var f lossless.Facts
	objs := n.dcbObjects()
	if p.NoDCB != "" {
		return f
	}
	if objs["app"] {
		f.Trust = p.Trust()
		if f.Trust == "dscp" {
			f.Map = hostMap(p.App)
		}
	}
	if objs["pfc"] {
		pfc := p.PFC
		f.PFC = &pfc
	}
	if objs["ets"] {
		f.ETS = chainETS(p.ETS)
	}
	if n.ecn {
		if p.ECNTree {
			f.ECN = both(p.ECNRP, p.ECNNP)
		} else {
			f.ECNWhy = noECNTree
		}
	}
	if n.cnp && p.CNPTree {
		d, c := p.CNPDSCP, p.CNPPrio
		f.CNPDSCP, f.CNPPrio = &d, &c
	}
	return f
}

// afterApply are the facts of a port once w is applied over have.
func afterApply(w want, have *Port, q *schema.QoS, tos *int) lossless.Facts {
	f := hostFacts(have, w.need())
	f.ToS, f.ToSFrom = tos, "the spec"
	f.Named = namedDSCPs(q)
	if w.trust != "" {
		f.Trust, f.Map = w.trust, nil
		if w.trust == "dscp" {
			m := w.dscp
			f.Map = &m
		}
	}
	if w.pfc != nil {
		pfc := *w.pfc
		f.PFC = &pfc
	}
	if w.ets != nil {
		f.ETS = chainETS(*w.ets)
	}
	if w.ecn != nil {
		f.ECN, f.ECNWhy = both(w.ecn[0], w.ecn[1]), ""
	}
	if w.cnp != nil {
		if w.cnp.dscp != nil {
			f.CNPDSCP = w.cnp.dscp
		}
		if w.cnp.prio != nil {
			f.CNPPrio = w.cnp.prio
		}
	}
	return f
}

// chainPath is the spec path a broken link is reported at: the field
// when the spec has it, else the qos block (or the roce block).
func chainPath(req *plan.Request, qosPath, portPath string, l lossless.Link) string {
	base, field := qosPath, l.Field[len("qos."):]
	if l.Field == "roce.tos" {
		base, field = portPath+".roce", "tos"
		if !req.Spec.Src.Has(base + ".tos") {
			field = "dscp"
		}
	}
	for p := base + "." + field; ; {
		if req.Spec.Src.Has(p) {
			return p
		}
		i := len(p) - 1
		for i > len(base) && p[i] != '.' {
			i--
		}
		if i <= len(base) {
			return base
		}
		p = p[:i]
	}
}

// planChain is the plan's finding for a spec whose chain, applied, is
// broken on the NIC's side; nil when it holds or cannot be proven (a
// warning: trust pcp, CNPs' DSCP, which audit and lint report).
func planChain(req *plan.Request, t target, w want, have *Port) *schema.Finding {
	tos, pp := specToS(req, t)
	r := lossless.Check(afterApply(w, have, t.q, tos))
	l, ok := r.FirstError()
	if !ok {
		return nil
	}
	f := req.Finding(chainPath(req, t.specPath, pp, l), "the lossless path of %s breaks: %s", key(t.dev, t.port), l.Text)
	return &f
}

// Chain is the audit's result of one port's chain.
type Chain struct {
	Address plan.Address
	// Path is the spec path of the port's qos block.
	Path   string
	Result lossless.Result
	// Err is why the port could not be read.
	Err error
}

// Chains checks the chain of every port whose spec has a qos block, on
// the host as it is: every dcb object, ECN and CNPs read anew, and the
// rdma_cm ToS given (from the plan, which read it) by tos.
//
// Equivalent to, per port: dcb -j {pfc,ets,app,dcbx} show dev X;
// ethtool -a X; cat /sys/class/net/X/ecn/roce_{rp,np}/...
func Chains(ctx context.Context, h *host.Host, req *plan.Request, tos func(dev string, port int) (int, string, bool)) []Chain {
	var out []Chain
	sem := make(chan struct{}, MaxReads)
	all := need{dcb: true, pause: false, ecn: true, cnp: true}
	for _, t := range targets(req) {
		c := Chain{Address: Address(t.dev, t.port), Path: t.specPath}
		now := req.NetdevNow(t.netdev)
		if t.netdev == "" || !host.Exists(h.FS, "/sys/class/net/"+now) {
			c.Err = fmt.Errorf("port %d of %s has no netdev to read DCB on", t.port, t.dev)
			out = append(out, c)
			continue
		}
		p, err := readPort(ctx, h, now, all, sem)
		if err != nil {
			c.Err = err
			out = append(out, c)
			continue
		}
		if p.NoDCB != "" {
			c.Err = fmt.Errorf("%s has no DCB: %s", now, p.NoDCB)
			out = append(out, c)
			continue
		}
		f := hostFacts(p, all)
		f.Named = namedDSCPs(t.q)
		if v, from, ok := tos(t.dev, t.port); ok {
			f.ToS, f.ToSFrom = &v, from
		}
		c.Result = lossless.Check(f)
		out = append(out, c)
	}
	return out
}
