package mlx4port

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Make implements plan.TypedProvider. When writing this port first would pass
// through port 1 eth with port 2 ib, which the driver refuses, the other
// port's new type is written first (ib→eth: port 2 first, as rdma-core's
// mlx4 setup script does; eth→ib: port 1 first); its own change then
// finds it done.
//
// Equivalent to: echo eth > /sys/bus/pci/devices/0000:81:00.0/mlx4_port2; echo eth > /sys/bus/pci/devices/0000:81:00.0/mlx4_port1
func (p *Provider) Make(ctx context.Context, h *host.Host, c *plan.Change, pl *payload) error {
	if pl.via != "" {
		step := *pl
		step.want, step.other, step.via = pl.via, pl.otherVia, ""
		if err := set(ctx, h, &step); err != nil {
			return err
		}
	}
	return set(ctx, h, pl)
}

// set writes pl.want, the other port first when the driver needs it.
func set(ctx context.Context, h *host.Host, pl *payload) error {
	have, err := read(h, pl.pci, pl.port)
	if err != nil {
		return err
	}
	if have.Setting == pl.want {
		return nil // written with the other port
	}
	if pl.other != "" {
		o, err := read(h, pl.pci, 3-pl.port)
		if err != nil {
			return err
		}
		p1, p2 := effective(pl.want, have), o.Effective
		if pl.port == 2 {
			p1, p2 = o.Effective, effective(pl.want, have)
		}
		if p1 == "eth" && p2 == "ib" && o.Setting != pl.other {
			if err := write(ctx, h, pl.pci, 3-pl.port, pl.other); err != nil {
				return err
			}
		}
	}
	return write(ctx, h, pl.pci, pl.port, pl.want)
}

// write sets one port's type and waits until it reads back.
//
// Equivalent to: echo eth > /sys/bus/pci/devices/0000:81:00.0/mlx4_port1
func write(ctx context.Context, h *host.Host, pci string, port int, typ string) error {
	f := File(pci, port)
	if err := h.FS.WriteAttr(f, []byte(typ+"\n")); err != nil {
		switch {
		case errors.Is(err, syscall.EINVAL):
			return fmt.Errorf("echo %s > %s: mlx4_core refused it (EINVAL): port 1 eth with port 2 ib is not allowed", typ, f)
		case errors.Is(err, syscall.EOPNOTSUPP):
			return fmt.Errorf("echo %s > %s: this adapter does not support port type %s (EOPNOTSUPP)", typ, f, typ)
		}
		return fmt.Errorf("echo %s > %s: %w", typ, f, err)
	}
	for i := 0; ; i++ {
		st, err := read(h, pci, port)
		if err != nil {
			return err
		}
		if st.Setting == typ {
			return nil
		}
		if i == settleTries {
			return fmt.Errorf("%s reads %q after writing %s", f, describe(st), typ)
		}
		t := time.NewTimer(settleWait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
