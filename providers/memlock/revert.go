package memlock

import (
	"github.com/rdmaform/rdmaform/plan"
)

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: the file's content before goes back
// (removed when there was none); a unit is reloaded, and restarted when
// the change restarted it, so that it runs with its old limit again.
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	back := &payload{file: pl.file, content: pl.before, before: pl.content, unit: pl.unit, restart: pl.restart, offline: pl.offline}
	action := plan.Update
	if pl.before == nil {
		action = plan.Delete
	}
	return &plan.Change{Address: c.Address, Action: action, Activation: c.Activation,
		Attributes: plan.Reversed(c.Attributes), Payload: back}, nil
}
