package modules

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Make implements plan.TypedProvider: it loads the module if the change says
// so, then adds it to (or removes it from) ConfFile.
//
// Equivalent to: modprobe -- NAME; echo NAME >> /etc/modules-load.d/rdmaform.conf
func (p *Provider) Make(ctx context.Context, h *host.Host, c *plan.Change, pl *payload) error {
	if pl.unload {
		if err := unload(ctx, h, pl.name); err != nil {
			return err
		}
	}
	if pl.skipFile {
		return nil
	}
	if pl.load {
		if err := h.Modprobe(ctx, pl.name); err != nil {
			var ee *host.ExitError
			if errors.As(err, &ee) && ee.Code > 0 {
				return fmt.Errorf("loading module %s: %w (is the module installed for the running kernel? some, like rdma_rxe, ship in a separate package such as linux-modules-extra)", pl.name, err)
			}
			return fmt.Errorf("loading module %s: %w", pl.name, err)
		}
	}
	set := map[string]bool{}
	b, err := h.FS.ReadFile(ConfFile)
	switch {
	case err == nil:
		set = parseConf(string(b))
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("reading %s: %w", ConfFile, err)
	}
	if set[pl.name] == pl.listed {
		return nil
	}
	if pl.listed {
		set[pl.name] = true
	} else {
		delete(set, pl.name)
	}
	if err := h.FS.WriteFile(ConfFile, renderConf(set), 0o644); err != nil {
		return fmt.Errorf("writing %s for module %s: %w", ConfFile, pl.name, err)
	}
	return nil
}
