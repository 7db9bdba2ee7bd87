package pcie

import (
	"github.com/rdmaform/rdmaform/plan"
)

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: the size the plan read goes back (a
// reserved encoding read at plan time is not written back).
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	if pl.before == 0 {
		return nil, nil
	}
	return &plan.Change{Address: c.Address, Action: plan.Update, Activation: c.Activation,
		Attributes: plan.Reversed(c.Attributes), Payload: &payload{pci: pl.pci, want: pl.before}}, nil
}
