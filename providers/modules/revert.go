package modules

import (
	"context"
	"fmt"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// unload removes a module this apply loaded, as a revert does. modprobe
// -r without --force: the kernel refuses a module in use (exit 1, "Module
// NAME is in use"), and that refusal is reported rather than forced.
//
// Equivalent to: modprobe -r -- NAME
func unload(ctx context.Context, h *host.Host, name string) error {
	if h.Offline() {
		return nil
	}
	if _, err := h.Run(ctx, "modprobe", "-r", "--", name); err != nil {
		return fmt.Errorf("unloading module %s: %w", name, err)
	}
	return nil
}

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter. A module the change loaded is unloaded
// again (modprobe -r, never forced: a module something uses by now stays,
// and the revert reports it), and ConfFile gets back the line the change
// added or removed. The plan before the change is what the host returns
// to; a module that was already loaded is never unloaded.
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	fileChanged := false
	for _, a := range c.Attributes {
		if a.Name == attrAtBoot {
			fileChanged = true
		}
	}
	back := &payload{name: pl.name, unload: pl.load, listed: !pl.listed, skipFile: !fileChanged}
	var attrs []plan.Attr
	if pl.load {
		attrs = append(attrs, plan.Attr{Name: attrLoaded, Before: yes, After: no})
	}
	if fileChanged {
		b, a := no, yes
		if pl.listed {
			b, a = yes, no
		}
		attrs = append(attrs, plan.Attr{Name: attrAtBoot, Before: b, After: a})
	}
	if len(attrs) == 0 {
		return nil, nil
	}
	action := plan.Update
	switch {
	case pl.load:
		action = plan.Delete
	case !pl.listed:
		action = plan.Create
	}
	return &plan.Change{Address: c.Address, Action: action, Activation: c.Activation, Attributes: attrs, Payload: back}, nil
}

// Unload is the change that unloads a module an apply loaded, leaving
// ConfFile alone: the undo Revert makes of a load, for a rollback that
// knows only the module's name (the rollback journal of an apply that
// is gone). The caller sets its Provider.
func Unload(name string) *plan.Change {
	n := Normalize(name)
	return &plan.Change{Address: Address(n), Action: plan.Delete, Activation: plan.Now,
		Attributes: []plan.Attr{{Name: attrLoaded, Before: yes, After: no}},
		Payload:    &payload{name: n, unload: true, skipFile: true}}
}
