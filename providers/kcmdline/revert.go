package kcmdline

import "github.com/rdmaform/rdmaform/plan"

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: GrubFile as the plan read it, and
// update-grub again.
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	if pl.before == nil && pl.content == nil {
		return nil, nil
	}
	back := &payload{content: pl.before, args: parseOwnFile(string(pl.before)), running: pl.running, before: pl.content}
	if pl.before == nil {
		back.args = nil
	}
	action := plan.Update
	switch {
	case pl.before == nil:
		action = plan.Delete
	case pl.content == nil:
		action = plan.Create
	}
	return &plan.Change{Address: c.Address, Action: action, Activation: c.Activation, Attributes: plan.Reversed(c.Attributes), Payload: back}, nil
}
