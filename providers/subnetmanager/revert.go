package subnetmanager

import "github.com/rdmaform/rdmaform/plan"

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: the file the change replaced is
// written back (or removed, when there was none) and opensm told again;
// a change that only signalled opensm has nothing to undo.
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	if pl.signalOnly {
		return nil, nil
	}
	back := *pl
	back.content, back.previous = pl.previous, pl.content
	back.expect = expectation{}
	action := plan.Update
	if pl.previous == nil {
		action = plan.Delete
	}
	return &plan.Change{Address: c.Address, Action: action, Activation: c.Activation, Attributes: plan.Reversed(c.Attributes), Payload: &back}, nil
}
