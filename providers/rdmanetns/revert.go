package rdmanetns

import (
	"github.com/rdmaform/rdmaform/plan"
)

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: the mode or the file as they were.
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	back := &payload{file: pl.file, conf: pl.beforeConf, beforeConf: pl.conf, mode: pl.beforeMode, beforeMode: pl.mode}
	action := plan.Update
	if pl.file && pl.beforeConf == nil {
		action = plan.Delete
	}
	return &plan.Change{Address: c.Address, Action: action, Activation: c.Activation,
		Attributes: plan.Reversed(c.Attributes), Payload: back}, nil
}

// JournalBefore is the mode a change of this provider replaced, for the
// rollback journal's spec (show captures the kernel's default, shared,
// only with rdmaform's file); ok false for another change.
func JournalBefore(c *plan.Change) (mode string, ok bool) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return "", false
	}
	if pl.file {
		mode = confMode(pl.beforeConf)
	} else {
		mode = pl.beforeMode
	}
	if mode == "" {
		mode = shared
	}
	return mode, true
}
