package rdmanetns

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Make implements plan.TypedProvider: it writes ConfFile, or switches the
// running kernel's mode and reads it back.
//
// Equivalent to: rdma system set netns MODE; rdma system show netns
func (p *Provider) Make(ctx context.Context, h *host.Host, _ *plan.Change, pl *payload) error {
	if pl.file {
		if pl.conf == nil {
			if err := h.FS.Remove(ConfFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("removing %s: %w", ConfFile, err)
			}
			return nil
		}
		if err := h.FS.MkdirAll("/etc/modprobe.d", 0o755); err != nil {
			return err
		}
		if err := h.FS.WriteFile(ConfFile, pl.conf, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", ConfFile, err)
		}
		return nil
	}
	err := h.Net.RdmaSetNetnsMode(pl.mode)
	// A namespace just deleted (ip netns del) counts until the kernel's
	// cleanup work has torn it down, which the kernel lab saw take longer
	// than the next request: EBUSY is asked again for a while.
	for i := 0; errors.Is(err, syscall.EBUSY) && i < busyTries; i++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(busyWait):
		}
		err = h.Net.RdmaSetNetnsMode(pl.mode)
	}
	if err != nil {
		if errors.Is(err, syscall.EBUSY) {
			return fmt.Errorf("%w: the kernel switches the RDMA netns mode only while no network namespace but the initial one exists; %s sets it at the next boot", err, ConfFile)
		}
		return err
	}
	got, err := h.Net.RdmaNetnsMode()
	if err != nil {
		return fmt.Errorf("reading the RDMA netns mode back: %w", err)
	}
	if got != pl.mode {
		return fmt.Errorf("rdma system set netns %s: the kernel reads back %s", pl.mode, got)
	}
	return nil
}

// How long Make asks again while the kernel answers EBUSY: 3 s in all.
const (
	busyTries = 30
	busyWait  = 100 * time.Millisecond
)
