// Package rails manages the policy routing of multi-rail hosts (spec
// rails:): when several netdevs share a subnet, the main table has one
// route for it, through one of them, and traffic from every rail's
// address leaves by that one. Each rail gets a routing table of its own
// holding its subnet routes, and a rule sending traffic from each of its
// IPv4 addresses to that table. Rules and routes live in the kernel
// until the next boot (runtime settings): persistence boot-unit sets
// them again at boot. A table a rail names is rdmaform's: rules that look
// it up and routes in it that the rail does not want are removed. A rail
// dropped from the spec keeps its rules and routes until the next boot.
package rails

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Provider is the multi-rail routing provider.
type Provider struct{}

var _ plan.TypedProvider[*Observed, *payload] = (*Provider)(nil)

// New is the provider as plan.Build and apply take it.
func New() plan.Provider { return plan.Adapt[*Observed, *payload](&Provider{}) }

// Name implements plan.Provider.
func (*Provider) Name() string { return "rails" }

// Kind is the kind of this provider's addresses.
const Kind = "rail"

// Address is the plan address of one rail: rail[ens1f0np0].
func Address(netdev string) plan.Address { return plan.Addr(Kind, netdev) }

// Observed is what the kernel says of the rails.
type Observed struct {
	// Rules are the IPv4 rules.
	Rules []host.Rule
	// Routes are the routes of each rail's table.
	Routes map[int][]host.Route
	// Addrs are the IPv4 global addresses of each rail netdev that
	// exists (show: of each RDMA netdev).
	Addrs map[string][]netip.Prefix
	// Offline: show on a tree without netlink (--root) read nothing.
	Offline bool `json:",omitempty"`
}

// Observe implements plan.TypedProvider: the rules, the routes of each
// rail's table and each rail netdev's addresses; for show (Request.Full)
// the rules, the addresses of the RDMA netdevs and the routes of every
// table a rule from one of them looks up.
//
// Equivalent to: ip -4 rule show; ip -4 route show table N; ip -4 addr show dev NAME
func (p *Provider) Observe(_ context.Context, h *host.Host, req *plan.Request) (*Observed, error) {
	if len(req.Spec.Rails) == 0 && !req.Full {
		return nil, nil
	}
	obs := &Observed{Routes: map[int][]host.Route{}, Addrs: map[string][]netip.Prefix{}}
	rules, err := h.Net.RuleList()
	if req.Full && errors.Is(err, host.ErrNoNetlink) {
		return &Observed{Offline: true}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ip -4 rule show: %w", err)
	}
	obs.Rules = rules
	var names []string
	tables := map[int]bool{}
	for _, r := range req.Spec.Rails {
		names = append(names, r.Interface)
		tables[r.Table] = true
	}
	if req.Full {
		names = append(names, req.RDMANetdevs()...)
	}
	for _, name := range names {
		if _, done := obs.Addrs[name]; done || schema.CheckNetdev(name) != "" {
			continue
		}
		now := req.NetdevNow(name)
		as, err := h.Net.AddrList(now)
		if errors.Is(err, host.ErrLinkNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("ip -4 addr show dev %s: %w", now, err)
		}
		obs.Addrs[name] = ipv4(as)
	}
	if req.Full {
		for _, r := range rules {
			if _, ok := captured(r, obs.Addrs); ok {
				tables[r.Table] = true
			}
		}
	}
	for t := range tables {
		if t < schema.MinRailTable || t > schema.MaxRailTable {
			continue
		}
		rs, err := h.Net.RouteList(t)
		if err != nil {
			return nil, fmt.Errorf("ip -4 route show table %d: %w", t, err)
		}
		obs.Routes[t] = rs
	}
	return obs, nil
}

// ipv4 are the global IPv4 addresses of a list, sorted.
func ipv4(as []host.Addr) []netip.Prefix {
	var out []netip.Prefix
	for _, a := range as {
		if a.Global && a.Prefix.Addr().Is4() {
			out = append(out, a.Prefix)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr().Less(out[j].Addr()) })
	return out
}

// kernelTable: the tables 252-255 (compat, default, main, local).
func kernelTable(t int) bool { return t >= 252 && t <= 255 }

// payload is what Make does to one rail's table.
type payload struct {
	netdev string
	table  int
	// rules and routes are what the table gets.
	rules  []host.Rule
	routes []host.Route
	// before: what it had, for Revert.
	rulesBefore  []host.Rule
	routesBefore []host.Route
}

// want is what a rail's table holds: a rule from each address, and the
// route of each subnet through the rail, with the subnet's first address
// of the rail as preferred source.
func want(r schema.RailRouting, addrs []netip.Prefix) ([]host.Rule, []host.Route) {
	var rules []host.Rule
	var routes []host.Route
	seen := map[netip.Prefix]bool{}
	for _, a := range addrs {
		rules = append(rules, host.Rule{Priority: r.RailPriority(), Table: r.Table, Src: netip.PrefixFrom(a.Addr(), 32)})
		if s := a.Masked(); !seen[s] && a.Bits() < 32 {
			seen[s] = true
			routes = append(routes, host.Route{Table: r.Table, Dst: s, Dev: r.Interface, Src: a.Addr()})
		}
	}
	sortRules(rules)
	sortRoutes(routes)
	return rules, routes
}

// rulesOf are the rules that look up a table.
func rulesOf(all []host.Rule, table int) []host.Rule {
	var out []host.Rule
	for _, r := range all {
		if r.Table == table {
			out = append(out, r)
		}
	}
	sortRules(out)
	return out
}

func sortRules(rs []host.Rule) {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Priority != rs[j].Priority {
			return rs[i].Priority < rs[j].Priority
		}
		return rs[i].String() < rs[j].String()
	})
}

func sortRoutes(rs []host.Route) {
	sort.Slice(rs, func(i, j int) bool { return rs[i].String() < rs[j].String() })
}

func joinRules(rs []host.Rule) string {
	if len(rs) == 0 {
		return "(none)"
	}
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.String()
	}
	return strings.Join(s, "; ")
}

func joinRoutes(rs []host.Route) string {
	if len(rs) == 0 {
		return "(none)"
	}
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.String()
	}
	return strings.Join(s, "; ")
}

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
