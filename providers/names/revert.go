package names

import (
	"github.com/rdmaform/rdmaform/plan"
)

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: the old name again, or the old rules
// file (none: removed).
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	back := &payload{rdma: pl.rdma, netdev: pl.netdev, old: pl.name, name: pl.old, up: pl.up,
		file: pl.file, rules: pl.before, before: pl.rules}
	action := plan.Update
	if pl.file && pl.before == nil {
		action = plan.Delete
	}
	rc := &plan.Change{Address: c.Address, Action: action, Activation: c.Activation, Attributes: plan.Reversed(c.Attributes), Payload: back}
	if pl.netdev && pl.up {
		rc.Disrupts = []string{pl.name}
	}
	return rc, nil
}
