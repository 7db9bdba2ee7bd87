package ethtool

import (
	"github.com/rdmaform/rdmaform/plan"
)

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: the values the change set go back to
// what the plan read.
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	if pl.before == nil {
		return nil, nil
	}
	back := func(want map[string]int, have *Params) map[string]int {
		if want == nil || have == nil {
			return nil
		}
		out := map[string]int{}
		for k := range want {
			out[k] = have.Cur[k]
		}
		return out
	}
	return &plan.Change{Address: c.Address, Action: plan.Update, Activation: c.Activation,
		Attributes: plan.Reversed(c.Attributes), Disrupts: c.Disrupts,
		Payload: &payload{netdev: pl.netdev, rings: back(pl.rings, pl.before.Rings), channels: back(pl.channels, pl.before.Channels)}}, nil
}
