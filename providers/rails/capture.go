package rails

import (
	"slices"

	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.TypedCapturer[*Observed] = (*Provider)(nil)

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
		haveRoutes := slices.Clone(obs.Routes[r.Table])
		sortRoutes(haveRoutes)
		if !sameRules(wantRules, rulesOf(obs.Rules, r.Table)) || !sameRoutes(wantRoutes, haveRoutes) {
			continue
		}
		done[name] = true
		spec.Rails = append(spec.Rails, rail)
	}
	return nil
}
