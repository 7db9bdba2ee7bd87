package rails

import (
	"net/netip"
	"slices"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Attribute names of a rail change.
const (
	attrRules  = "rules"
	attrRoutes = "routes"
)

// Plan implements plan.TypedProvider: one change per rail whose table's
// rules or routes differ from what it wants. Interfaces that share a
// subnet with neither the ARP settings nor a rail table are lint's
// finding (crosscheck.SharedSubnets), not plan's: two netdevs of one
// subnet are common outside RDMA, and plan refusing them would stop specs
// that converged before rails existed.
func (p *Provider) Plan(req *plan.Request, obs *Observed, _ *plan.Facts) plan.Proposal {
	var prop plan.Proposal
	for i, r := range req.Spec.Rails {
		prop.Managed = append(prop.Managed, plan.Managed{Address: Address(r.Interface), Path: schema.Path("rails", i)})
	}
	if len(req.Spec.Rails) == 0 {
		return prop
	}
	if obs == nil {
		prop.Errors = append(prop.Errors, req.Unreadable("$.rails", "the routing rules were not read"))
		return prop
	}
	nm := map[string]string{}
	for i := range req.Spec.IPoIB {
		nm[req.Spec.IPoIB[i].Interface()] = req.Spec.IPoIB[i].Name
	}
	specAddrs := map[string][]string{}
	for _, it := range req.Spec.Interfaces {
		if it.Addresses != nil {
			specAddrs[it.Name] = it.Addresses
		}
	}
	for i, r := range req.Spec.Rails {
		path := schema.Path("rails", i)
		if schema.CheckNetdev(r.Interface) != "" || r.Table < schema.MinRailTable || r.Table > schema.MaxRailTable || kernelTable(r.Table) {
			continue // validation reported it
		}
		if conn, ok := nm[r.Interface]; ok {
			// NetworkManager owns the profile's addresses and brings it up
			// when it likes; rules made behind its back are not its to
			// keep. Its own routing rules are the way (ipv4.routing-rules,
			// ipv4.routes with table=).
			prop.Errors = append(prop.Errors, req.Finding(path+".interface", "%s is NetworkManager connection %s's interface: give the connection its rail routing instead (nmcli connection modify %s ipv4.routing-rules \"priority %d from ADDR table %d\" ipv4.routes \"SUBNET table=%d\")",
				r.Interface, conn, conn, r.RailPriority(), r.Table, r.Table))
			continue
		}
		have, exists := obs.Addrs[r.Interface]
		if !exists {
			prop.Errors = append(prop.Errors, req.Finding(path+".interface", "no network interface %s on this host", r.Interface))
			continue
		}
		addrs := have
		if s, ok := specAddrs[r.Interface]; ok {
			addrs = nil
			for _, a := range s {
				if p, err := netip.ParsePrefix(a); err == nil && p.Addr().Is4() {
					addrs = append(addrs, p)
				}
			}
		}
		if len(addrs) == 0 {
			prop.Errors = append(prop.Errors, req.Finding(path+".interface", "rail %s has no IPv4 address to route from: give it one (interfaces[].addresses)", r.Interface))
			continue
		}
		wantRules, wantRoutes := want(r, addrs)
		haveRules, haveRoutes := rulesOf(obs.Rules, r.Table), slices.Clone(obs.Routes[r.Table])
		sortRoutes(haveRoutes)
		var attrs []plan.Attr
		if !sameRules(wantRules, haveRules) {
			attrs = append(attrs, plan.Attr{Name: attrRules, Before: joinRules(haveRules), After: joinRules(wantRules)})
		}
		if !sameRoutes(wantRoutes, haveRoutes) {
			attrs = append(attrs, plan.Attr{Name: attrRoutes, Before: joinRoutes(haveRoutes), After: joinRoutes(wantRoutes)})
		}
		if len(attrs) == 0 {
			continue
		}
		action := plan.Update
		if len(haveRules) == 0 && len(haveRoutes) == 0 {
			action = plan.Create
		}
		prop.Changes = append(prop.Changes, &plan.Change{Address: Address(r.Interface), Action: action, Activation: plan.Runtime,
			Source: req.Pos(path), Attributes: attrs,
			Payload: &payload{netdev: r.Interface, table: r.Table, rules: wantRules, routes: wantRoutes, rulesBefore: haveRules, routesBefore: haveRoutes}})
	}
	return prop
}

func sameRules(a, b []host.Rule) bool {
	return slices.EqualFunc(a, b, func(x, y host.Rule) bool { return x == y })
}

func sameRoutes(a, b []host.Route) bool {
	return slices.EqualFunc(a, b, func(x, y host.Route) bool { return x == y })
}
