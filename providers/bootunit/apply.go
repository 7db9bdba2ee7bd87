package bootunit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Make implements plan.TypedProvider.
//
// Install, equivalent to: install -m 0644 SPEC /etc/rdmaform/boot.yaml;
// install -m 0644 rdmaform.service /etc/systemd/system/; systemctl daemon-reload;
// systemctl enable rdmaform.service (without systemd: the symlink alone).
//
// Remove, equivalent to: systemctl disable rdmaform.service;
// rm /etc/systemd/system/rdmaform.service /etc/rdmaform/boot.yaml; systemctl daemon-reload
func (p *Provider) Make(ctx context.Context, h *host.Host, c *plan.Change, pl *payload) error {
	if pl.restore != nil {
		return restore(ctx, h, pl.restore)
	}
	if pl.remove {
		return remove(ctx, h)
	}
	// The spec first: the unit never points at a missing or stale copy.
	if err := h.FS.WriteFile(SpecPath, pl.spec, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", SpecPath, err)
	}
	if err := h.FS.WriteFile(UnitPath, pl.unit, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", UnitPath, err)
	}
	if pl.relink {
		if err := h.FS.Remove(WantsPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing the stale %s: %w", WantsPath, err)
		}
	}
	if h.Systemd != nil {
		if err := h.Systemd.Reload(ctx); err != nil {
			return err
		}
		if err := h.Systemd.Enable(ctx, UnitName); err != nil {
			return err
		}
	} else if _, err := h.FS.Lstat(WantsPath); errors.Is(err, fs.ErrNotExist) {
		if err := h.FS.Symlink(UnitPath, WantsPath); err != nil {
			return fmt.Errorf("enabling %s (symlink %s): %w", UnitName, WantsPath, err)
		}
	}
	link, err := h.FS.Readlink(WantsPath)
	if err != nil || link != UnitPath {
		return fmt.Errorf("%s is not enabled after apply: %s does not point at %s", UnitName, WantsPath, UnitPath)
	}
	return nil
}

func remove(ctx context.Context, h *host.Host) error {
	if h.Systemd != nil {
		if err := h.Systemd.Disable(ctx, UnitName); err != nil {
			// A unit file already gone is not loaded: the link alone goes below.
			if host.Exists(h.FS, UnitPath) {
				return err
			}
		}
	}
	for _, f := range []string{WantsPath, UnitPath, SpecPath} {
		if err := h.FS.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", f, err)
		}
	}
	if h.Systemd != nil {
		return h.Systemd.Reload(ctx)
	}
	return nil
}
