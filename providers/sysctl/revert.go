package sysctl

import (
	"github.com/rdmaform/rdmaform/plan"
)

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: the value the plan read goes back to
// /proc/sys, and ConfFile's line back to what it was (removed when the
// file had none).
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	back := &payload{key: pl.key, file: pl.file, fileValue: pl.fileBefore}
	if pl.now != "" {
		back.now = pl.nowBefore
	}
	if back.now == "" && !back.file {
		return nil, nil
	}
	action := plan.Update
	if pl.file && pl.fileBefore == "" {
		action = plan.Delete
	}
	return &plan.Change{Address: c.Address, Action: action, Activation: c.Activation,
		Attributes: plan.Reversed(c.Attributes), Payload: back}, nil
}
