package sysctl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Make implements plan.TypedProvider: it writes the value to /proc/sys and
// reads it back, then sets (or removes) the key's line of ConfFile.
//
// Equivalent to: sysctl -w KEY=VALUE; editing /etc/sysctl.d/90-rdmaform.conf
func (p *Provider) Make(ctx context.Context, h *host.Host, _ *plan.Change, pl *payload) error {
	if pl.now != "" {
		if err := waitFor(ctx, h, pl.key); err != nil {
			return err
		}
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

// netdevSettle bounds the wait for a netdev's /proc/sys directory: a VF
// made by an earlier stage appears with the kernel's name and gets its
// final one from udev a moment later.
const netdevSettle = 5 * time.Second

// waitFor waits (bounded) until a key's /proc/sys file exists.
func waitFor(ctx context.Context, h *host.Host, k Key) error {
	deadline := time.Now().Add(netdevSettle)
	for !host.Exists(h.FS, k.Proc()) {
		if time.Until(deadline) <= 0 {
			e := strings.Split(string(k), "/")
			if len(e) == 5 && e[0] == "net" {
				return fmt.Errorf("%s: netdev %s does not exist (waited %s for %s)", k.Name(), e[3], netdevSettle, k.Proc())
			}
			return fmt.Errorf("%s: %s does not exist", k.Name(), k.Proc())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}
