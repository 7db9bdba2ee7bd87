package rails

import (
	"net/netip"
	"sort"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.TypedCapturer[*Observed] = (*Provider)(nil)

// captured is the RDMA netdev a rule makes a rail of: a rule of a source
// address alone (from ADDR/32, no other selector) of the netdev, looking
// up a table that is not the kernel's.
func captured(r host.Rule, addrs map[string][]netip.Prefix) (string, bool) {
	if r.Other != "" || !r.Src.IsValid() || r.Src.Bits() != 32 || r.Table <= 0 || kernelTable(r.Table) {
		return "", false
	}
	names := make([]string, 0, len(addrs))
	for n := range addrs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, a := range addrs[n] {
			if a.Addr() == r.Src.Addr() {
				return n, true
			}
		}
	}
	return "", false
}

// CaptureFrom implements plan.TypedCapturer: an RDMA netdev is a rail
// when a rule from one of its addresses looks up a table whose rules and
// routes are exactly those rdmaform makes for it (so that the capture
// plans empty); other policy routing is the operator's and not captured.
//
// Equivalent to: ip -4 rule show; ip -4 route show table N
func (p *Provider) CaptureFrom(obs *Observed, _ *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	if obs == nil || obs.Offline {
		return nil
	}
	done := map[string]bool{}
	for _, r := range obs.Rules {
		name, ok := captured(r, obs.Addrs)
		if !ok || done[name] {
			continue
		}
		rail := schema.RailRouting{Interface: name, Table: r.Table}
		if r.Priority != schema.DefaultRailPriority {
			prio := r.Priority
			rail.Priority = &prio
		}
		if r.Priority < schema.MinRailPriority || r.Priority > schema.MaxRailPriority {
			continue
		}
		wantRules, wantRoutes := want(rail, obs.Addrs[name])
		haveRoutes := append([]host.Route(nil), obs.Routes[r.Table]...)
		sortRoutes(haveRoutes)
		if !sameRules(wantRules, rulesOf(obs.Rules, r.Table)) || !sameRoutes(wantRoutes, haveRoutes) {
			continue
		}
		done[name] = true
		spec.Rails = append(spec.Rails, rail)
	}
	return nil
}
