package sysctl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Make implements plan.TypedProvider: it writes the value to /proc/sys and
// reads it back, then sets (or removes) the key's line of ConfFile.
//
// Equivalent to: sysctl -w KEY=VALUE; editing /etc/sysctl.d/90-rdmaform.conf
func (p *Provider) Make(_ context.Context, h *host.Host, _ *plan.Change, pl *payload) error {
	if pl.now != "" {
		if err := h.FS.WriteAttr(pl.key.Proc(), []byte(pl.now+"\n")); err != nil {
			return fmt.Errorf("setting %s to %s: %w", pl.key.Name(), pl.now, err)
		}
		got, err := host.ReadAttr(h.FS, pl.key.Proc())
		if err != nil {
			return fmt.Errorf("reading %s back: %w", pl.key.Proc(), err)
		}
		if got != pl.now {
			return fmt.Errorf("%s reads %s after writing %s: the kernel did not take it", pl.key.Name(), got, pl.now)
		}
	}
	if !pl.file {
		return nil
	}
	set := map[Key]string{}
	b, err := h.FS.ReadFile(ConfFile)
	switch {
	case err == nil:
		set = parseConf(string(b))
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("reading %s: %w", ConfFile, err)
	}
	if pl.fileValue == "" {
		delete(set, pl.key)
	} else {
		set[pl.key] = pl.fileValue
	}
	if len(set) == 0 {
		if err := h.FS.Remove(ConfFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", ConfFile, err)
		}
		return nil
	}
	if err := h.FS.WriteFile(ConfFile, renderConf(set), 0o644); err != nil {
		return fmt.Errorf("writing %s for %s: %w", ConfFile, pl.key.Name(), err)
	}
	return nil
}
