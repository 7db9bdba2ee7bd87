package names

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Make implements plan.TypedProvider: a rename, read back, or RulesFile.
//
// Equivalent to: rdma dev set OLD name NEW; ip link set OLD down; ip link set OLD name NEW; ip link set NEW up
func (p *Provider) Make(_ context.Context, h *host.Host, _ *plan.Change, pl *payload) error {
	switch {
	case pl.file:
		if pl.rules == nil {
			if err := h.FS.Remove(RulesFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("removing %s: %w", RulesFile, err)
			}
			return nil
		}
		if err := checkRules(pl.rules); err != nil {
			return err
		}
		if err := h.FS.MkdirAll("/etc/udev/rules.d", 0o755); err != nil {
			return err
		}
		if err := h.FS.WriteFile(RulesFile, pl.rules, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", RulesFile, err)
		}
		return nil
	case pl.rdma:
		if err := h.Net.RdmaDevSetName(pl.old, pl.name); err != nil {
			return err
		}
		ls, err := h.Net.RdmaLinkList()
		if err != nil {
			return fmt.Errorf("reading RDMA devices back: %w", err)
		}
		for _, l := range ls {
			if l.Name == pl.name {
				return nil
			}
		}
		return fmt.Errorf("rdma dev set %s name %s: no device %s reads back (the kernel cuts names to 63 bytes)", pl.old, pl.name, pl.name)
	}
	if pl.up {
		if err := h.Net.LinkSetUp(pl.old, false); err != nil {
			return fmt.Errorf("ip link set %s down (to rename it): %w", pl.old, err)
		}
	}
	if err := h.Net.LinkSetName(pl.old, pl.name); err != nil {
		if pl.up {
			if uerr := h.Net.LinkSetUp(pl.old, true); uerr != nil {
				return fmt.Errorf("%w; and bringing %s back up: %w", err, pl.old, uerr)
			}
		}
		return err
	}
	if pl.up {
		if err := h.Net.LinkSetUp(pl.name, true); err != nil {
			return fmt.Errorf("ip link set %s up (renamed from %s): %w", pl.name, pl.old, err)
		}
	}
	if _, err := h.Net.LinkByName(pl.name); err != nil {
		return fmt.Errorf("reading %s back: %w", pl.name, err)
	}
	return nil
}
