package rails

import (
	"github.com/rdmaform/rdmaform/plan"
)

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: the table gets back the rules and
// routes the plan read.
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	back := &payload{netdev: pl.netdev, table: pl.table, rules: pl.rulesBefore, routes: pl.routesBefore, rulesBefore: pl.rules, routesBefore: pl.routes}
	action := plan.Update
	if len(back.rules) == 0 && len(back.routes) == 0 {
		action = plan.Delete
	}
	return &plan.Change{Address: c.Address, Action: action, Activation: c.Activation, Attributes: plan.Reversed(c.Attributes), Payload: back}, nil
}
