package kcmdline

import "github.com/rdmaform/rdmaform/plan"

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: the file as the plan read it (GrubFile,
// or /etc/kernel/cmdline), and update-grub or kernel-install again.
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	if pl.tool == BootGrubby {
		back := &payload{tool: BootGrubby, restore: true, entries: pl.entries, running: pl.running, spec: pl.spec}
		return &plan.Change{Address: c.Address, Action: plan.Update, Activation: c.Activation, Attributes: plan.Reversed(c.Attributes), Payload: back}, nil
	}
	if pl.before == nil && pl.content == nil {
		return nil, nil
	}
	if pl.tool == BootKernelInstall {
		// The file existed (it is how the host was recognised): its
		// bytes as they were, and kernel-install add again.
		back := &payload{tool: BootKernelInstall, content: pl.before, running: pl.running, before: pl.content}
		return &plan.Change{Address: c.Address, Action: plan.Update, Activation: c.Activation, Attributes: plan.Reversed(c.Attributes), Payload: back}, nil
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
