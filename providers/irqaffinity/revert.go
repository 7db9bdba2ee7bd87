package irqaffinity

import (
	"github.com/rdmaform/rdmaform/plan"
)

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: every vector's CPU list as the plan
// read it goes back.
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	back := &payload{pci: pl.pci}
	for _, s := range pl.irqs {
		back.irqs = append(back.irqs, irqSet{irq: s.irq, want: s.before, before: s.want})
	}
	return &plan.Change{Address: c.Address, Action: plan.Update, Activation: c.Activation,
		Attributes: plan.Reversed(c.Attributes), Payload: back}, nil
}
