package bootunit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: it puts back the unit file, the spec
// copy and the enablement symlink as they were when the plan was made: an
// installed unit is removed again, a removed or rewritten one comes back
// with its old bytes.
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	if pl.before == nil {
		return nil, fmt.Errorf("%s: what was installed before the change is not known", c.Address)
	}
	b := pl.before
	action := plan.Update
	switch {
	case b.Unit == nil && !pl.remove:
		action = plan.Delete
	case pl.remove:
		action = plan.Create
	}
	return &plan.Change{Address: c.Address, Action: action, Activation: c.Activation, Attributes: plan.Reversed(c.Attributes), Payload: &payload{restore: b}}, nil
}

// restore makes the installed files exactly what was observed: each file
// written back or removed, the symlink pointing where it pointed (or
// gone), then the manager reloads.
//
// Equivalent to: systemctl disable rdmaform.service (when it was not
// enabled); install -m 0644 OLD /etc/systemd/system/rdmaform.service (or
// rm); install -m 0644 OLD /etc/rdmaform/boot.yaml (or rm);
// ln -s TARGET /etc/systemd/system/multi-user.target.wants/rdmaform.service;
// systemctl daemon-reload
func restore(ctx context.Context, h *host.Host, b *Observed) error {
	if err := h.FS.Remove(WantsPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing %s: %w", WantsPath, err)
	}
	for _, f := range []struct {
		path string
		data []byte
	}{{SpecPath, b.Spec}, {UnitPath, b.Unit}} {
		if f.data == nil {
			if err := h.FS.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("removing %s: %w", f.path, err)
			}
			continue
		}
		if err := h.FS.WriteFile(f.path, f.data, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", f.path, err)
		}
	}
	if b.Link != "" {
		if err := h.FS.Symlink(b.Link, WantsPath); err != nil {
			return fmt.Errorf("enabling %s (symlink %s): %w", UnitName, WantsPath, err)
		}
	}
	if h.Systemd != nil {
		return h.Systemd.Reload(ctx)
	}
	return nil
}
