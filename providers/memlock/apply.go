package memlock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Make implements plan.TypedProvider: it writes (or removes) the file;
// for a unit it then reloads the manager, reads the unit's limits back
// and restarts the unit if it runs.
//
// Equivalent to: editing the file; systemctl daemon-reload;
// systemctl show -p LimitMEMLOCKSoft,LimitMEMLOCK UNIT; systemctl restart UNIT
func (p *Provider) Make(ctx context.Context, h *host.Host, _ *plan.Change, pl *payload) error {
	if pl.content == nil {
		if err := h.FS.Remove(pl.file); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", pl.file, err)
		}
		if pl.unit != "" {
			// The drop-in directory, when rdmaform's file was all it held.
			_ = h.FS.Remove(path.Dir(pl.file))
		}
	} else if err := h.FS.WriteFile(pl.file, pl.content, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", pl.file, err)
	}
	if pl.unit == "" {
		return nil
	}
	if h.Systemd == nil {
		return fmt.Errorf("%s: no systemd runs on this host", pl.unit)
	}
	if err := h.Systemd.Reload(ctx); err != nil {
		return err
	}
	if pl.want != 0 {
		lim, ok := h.Systemd.(host.UnitLimiter)
		if !ok {
			return errors.New("this service manager cannot report units' limits")
		}
		soft, hard, err := lim.Memlock(ctx, pl.unit)
		if err != nil {
			return err
		}
		if soft != pl.want || hard != pl.want {
			return fmt.Errorf("%s: LimitMEMLOCK is %s after daemon-reload, not %s: a later drop-in or the unit file overrides %s (systemctl cat %s)",
				pl.unit, pair(soft, hard), Human(pl.want), pl.file, pl.unit)
		}
	}
	if !pl.restart {
		return nil
	}
	r, ok := h.Systemd.(host.UnitSignaller)
	if !ok {
		return fmt.Errorf("%s: this service manager cannot restart units", pl.unit)
	}
	return r.Restart(ctx, pl.unit)
}
