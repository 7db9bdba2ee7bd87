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
	if pl.signalOnly && !pl.start {
		return nil, nil
	}
	back := *pl
	back.content, back.previous = pl.previous, pl.content
	back.expect = expectation{}
	// opensm did not run before the change started it: it stops again.
	back.start, back.stop = false, pl.start
	if pl.signalOnly {
		return &plan.Change{Address: c.Address, Action: plan.Update, Activation: c.Activation, Attributes: plan.Reversed(c.Attributes), Payload: &back}, nil
	}
	action := plan.Update
	if pl.previous == nil {
		action = plan.Delete
	}
	return &plan.Change{Address: c.Address, Action: action, Activation: c.Activation, Attributes: plan.Reversed(c.Attributes), Payload: &back}, nil
}

// StartsUnit is the unit an applied change of this provider starts (opensm
// did not run when it was planned), ok false for one that starts none:
// the rollback journal records the unit's state before, so that a
// rollback stops it again.
func StartsUnit(c *plan.Change) (string, bool) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil || !pl.start || pl.unit == "" {
		return "", false
	}
	return pl.unit, true
}
