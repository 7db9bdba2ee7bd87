package gpudriver

import "github.com/rdmaform/rdmaform/plan"

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: the file as it was, and nvidia_peermem
// unloaded again when the change loaded it (modprobe -r, never forced).
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	back := &payload{file: pl.file, content: pl.before, before: pl.content, params: nil, running: pl.running, unload: pl.loadModule}
	action := plan.Update
	if pl.file != "" && pl.before == nil {
		action = plan.Delete
	}
	return &plan.Change{Address: c.Address, Action: action, Activation: c.Activation,
		Attributes: plan.Reversed(c.Attributes), Payload: back}, nil
}

// LoadedPeermem reports whether a change of this provider loads
// nvidia_peermem (the rollback unloads it again).
func LoadedPeermem(c *plan.Change) bool {
	pl, err := plan.PayloadOf[*payload](c)
	return err == nil && pl.loadModule
}
