package acs

import (
	"github.com/rdmaform/rdmaform/plan"
)

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: the whole control value the plan read
// goes back.
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	return &plan.Change{Address: c.Address, Action: plan.Update, Activation: c.Activation,
		Attributes: plan.Reversed(c.Attributes), Payload: &payload{bridge: pl.bridge, mask: 0xffff, value: pl.before, before: pl.before}}, nil
}
