package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"syscall"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Make implements plan.TypedProvider: it writes the port's values and reads
// them back.
//
// Equivalent to: echo "RoCE v2" > /sys/kernel/config/rdma_cm/DEV/ports/N/default_roce_mode
// and: echo 106 > /sys/kernel/config/rdma_cm/DEV/ports/N/default_roce_tos
func (p *Provider) Make(ctx context.Context, h *host.Host, c *plan.Change, pl *payload) error {
	if err := Ensure(ctx, h); err != nil {
		return err
	}
	return withGroup(ctx, h, pl.dev, func(group string) error {
		dir := path.Join(group, "ports", strconv.Itoa(pl.port))
		if pl.before == nil {
			// The plan could not read them (rdma_cm was not loaded, or the
			// device is new): record what this write replaces, for Revert.
			if cur, err := readPort(h, group, pl.port); err == nil {
				pl.before = &cur
			}
		}
		if pl.mode != "" {
			f := path.Join(dir, "default_roce_mode")
			if err := h.FS.WriteAttr(f, []byte(pl.mode+"\n")); err != nil {
				if errors.Is(err, syscall.EINVAL) {
					return fmt.Errorf("echo %q > %s: the kernel refused it (EINVAL): port %d of %s does not support %s", pl.mode, f, pl.port, pl.dev, pl.mode)
				}
				return fmt.Errorf("echo %q > %s: %w", pl.mode, f, err)
			}
		}
		if pl.tos != nil {
			f := path.Join(dir, "default_roce_tos")
			if err := h.FS.WriteAttr(f, []byte(strconv.Itoa(*pl.tos)+"\n")); err != nil {
				return fmt.Errorf("echo %d > %s: %w", *pl.tos, f, err)
			}
		}
		got, err := readPort(h, group, pl.port)
		if err != nil {
			return err
		}
		if pl.mode != "" && got.Mode != pl.mode {
			return fmt.Errorf("%s/default_roce_mode reads %q after writing %q", dir, got.Mode, pl.mode)
		}
		if pl.tos != nil && got.Tos != *pl.tos {
			return fmt.Errorf("%s/default_roce_tos reads %d after writing %d", dir, got.Tos, *pl.tos)
		}
		return nil
	})
}
