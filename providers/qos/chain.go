package qos

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"

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
	if !lossless.Asks(t.q.Trust, t.q.PFC) {
		return nil
	}
	tos, pp := specToS(req, t)
	r := lossless.Check(afterApply(w, have, t.q, tos))
	l, ok := r.FirstError()
	if !ok {
		return nil
	}
	f := req.Finding(chainPath(req, t.specPath, pp, l), "the lossless path of %s breaks: %s", key(t.dev, t.port), l.Text)
	return &f
}

// CheckLossless is the name of the lossless path's health check.
const CheckLossless = "lossless"

var _ plan.HealthChecker = (*Provider)(nil)

// Health implements plan.HealthChecker: one lossless check per port whose
// qos block asks for a lossless class (lossless.Asks), on the host as it is. It fails at the first
// broken link; a link the NIC cannot prove (trust pcp, the CNPs' DSCP)
// passes with a warning. Every dcb object, ECN and the CNPs are read
// anew; the rdma_cm ToS is the one the plan read.
//
// Equivalent to, per port: dcb -j {pfc,ets,app,dcbx} show dev X;
// cat /sys/class/net/X/ecn/roce_{rp,np}/enable/{0..7} and roce_np/cnp_*
func (*Provider) Health(ctx context.Context, h *host.Host, res *plan.Result) []plan.Health {
	req := res.Request
	var ts []target
	for _, t := range targets(req) {
		if t.q != nil && lossless.Asks(t.q.Trust, t.q.PFC) {
			ts = append(ts, t)
		}
	}
	out := make([]plan.Health, len(ts))
	sem := make(chan struct{}, MaxReads)
	all := need{dcb: true, ecn: true, cnp: true}
	var wg sync.WaitGroup
	for i, t := range ts {
		wg.Add(1)
		go func() { // every port at once, as Observe reads them
			defer wg.Done()
			c := plan.Health{Address: Address(t.dev, t.port), Path: t.specPath, Check: CheckLossless}
			r, err := hostChain(ctx, h, req, res.Plan, t, all, sem)
			l, broken := r.First()
			switch {
			case err != nil:
				c.Fail, c.Message = true, "not checked: "+err.Error()
			case broken && l.Severity == lossless.Error:
				c.Fail, c.Message = true, l.Text
			case broken:
				c.Warning, c.Message = true, l.Text
			default:
				c.Message = r.Summary()
			}
			out[i] = c
		}()
	}
	wg.Wait()
	return out
}

// hostChain reads one port and follows its chain.
func hostChain(ctx context.Context, h *host.Host, req *plan.Request, p *plan.Plan, t target, all need, sem chan struct{}) (lossless.Result, error) {
	now := req.NetdevNow(t.netdev)
	if t.netdev == "" || !host.Exists(h.FS, "/sys/class/net/"+now) {
		return lossless.Result{}, fmt.Errorf("port %d of %s has no netdev to read DCB on", t.port, t.dev)
	}
	port, err := readPort(ctx, h, now, all, sem)
	if err != nil {
		return lossless.Result{}, err
	}
	if port.NoDCB != "" {
		return lossless.Result{}, fmt.Errorf("%s has no DCB: %s", now, port.NoDCB)
	}
	f := hostFacts(port, all)
	f.Named = namedDSCPs(t.q)
	if v, why := hostToS(h, req, p, t); why == "" {
		f.ToS, f.ToSFrom = &v, "the host"
	} else {
		f.ToSWhy = why
	}
	return lossless.Check(f), nil
}

// hostToS is the rdma_cm ToS of a port on the host: read from configfs
// when the device's group exists; else the spec's, when the plan changes
// nothing of the port's rdma_cm (so the host has it). Otherwise unknown:
// reading it would create the group, and the plan's rdma_cm drift says
// the host's differs.
//
// Equivalent to: cat /sys/kernel/config/rdma_cm/DEV/ports/N/default_roce_tos
func hostToS(h *host.Host, req *plan.Request, p *plan.Plan, t target) (int, string) {
	f := path.Join("/sys/kernel/config/rdma_cm", t.dev, "ports", strconv.Itoa(t.port), "default_roce_tos")
	if s, err := host.ReadAttr(h.FS, f); err == nil {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return 0, fmt.Sprintf("%s: %q is not a number", f, s)
		}
		return v, ""
	}
	addr := plan.Addr("rdma_cm", key(t.dev, t.port))
	for _, c := range p.Changes {
		if c.Address == addr {
			return 0, addr.String() + " differs from the spec: see its drift check"
		}
	}
	if tos, _ := specToS(req, t); tos != nil {
		return *tos, ""
	}
	return 0, "the spec sets no roce tos or dscp"
}
