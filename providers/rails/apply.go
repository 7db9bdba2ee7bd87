package rails

import (
	"context"
	"fmt"
	"slices"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Make implements plan.TypedProvider: it makes the rail's table hold the
// payload's rules and routes, from what the kernel holds now: rules
// looking up the table and routes in it that are not wanted go first
// (rules first, so that no rule leads to a table being emptied), then
// the wanted routes, then the wanted rules; both are read back.
//
// Equivalent to: ip -4 rule del ... lookup N; ip route del ... table N;
// ip route add SUBNET dev NAME src ADDR table N; ip -4 rule add priority P from ADDR lookup N
func (p *Provider) Make(_ context.Context, h *host.Host, _ *plan.Change, pl *payload) error {
	rules, routes, err := read(h, pl.table)
	if err != nil {
		return err
	}
	for _, r := range rules {
		if !slices.Contains(pl.rules, r) {
			if err := h.Net.RuleDel(r); err != nil {
				return fmt.Errorf("ip -4 rule del %s: %w", r, err)
			}
		}
	}
	for _, r := range routes {
		if !slices.Contains(pl.routes, r) {
			if err := h.Net.RouteDel(r); err != nil {
				return fmt.Errorf("ip route del %s table %d: %w", r, r.Table, err)
			}
		}
	}
	for _, r := range pl.routes {
		if !slices.Contains(routes, r) {
			if err := h.Net.RouteAdd(r); err != nil {
				return fmt.Errorf("ip route add %s table %d: %w", r, r.Table, err)
			}
		}
	}
	for _, r := range pl.rules {
		if !slices.Contains(rules, r) {
			if err := h.Net.RuleAdd(r); err != nil {
				return fmt.Errorf("ip -4 rule add %s: %w", r, err)
			}
		}
	}
	rules, routes, err = read(h, pl.table)
	if err != nil {
		return err
	}
	if !sameRules(rules, pl.rules) || !sameRoutes(routes, pl.routes) {
		return fmt.Errorf("table %d of rail %s holds %s and %s after the change, not %s and %s: the kernel did not keep them",
			pl.table, pl.netdev, joinRules(rules), joinRoutes(routes), joinRules(pl.rules), joinRoutes(pl.routes))
	}
	return nil
}

// read is what the kernel holds for one table: the rules that look it
// up and its routes, sorted.
func read(h *host.Host, table int) ([]host.Rule, []host.Route, error) {
	all, err := h.Net.RuleList()
	if err != nil {
		return nil, nil, fmt.Errorf("ip -4 rule show: %w", err)
	}
	routes, err := h.Net.RouteList(table)
	if err != nil {
		return nil, nil, fmt.Errorf("ip -4 route show table %d: %w", table, err)
	}
	sortRoutes(routes)
	return rulesOf(all, table), routes, nil
}
