package pcie

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Make implements plan.TypedProvider: it reads the config space again,
// writes Device Control with the new Max Read Request Size (the other
// bits as read; Initiate Function Level Reset reads 0, so it is never
// written as 1) in place, two bytes at capability+8, and reads it back: a
// device may keep its value (QEMU's emulated PCI Express functions have
// the field read-only), which is then an error naming what it kept.
//
// Equivalent to: setpci -s BDF CAP_EXP+8.w=VALUE:7000; setpci -s BDF CAP_EXP+8.w
func (p *Provider) Make(_ context.Context, h *host.Host, _ *plan.Change, pl *payload) error {
	f, err := read(h, pl.pci)
	if err != nil {
		return err
	}
	v := make([]byte, 2)
	binary.LittleEndian.PutUint16(v, WithMaxReadRequest(f.DevCtl, pl.want))
	if err := host.WriteAttrAt(h.FS, ConfigPath(pl.pci), v, int64(f.Cap+devCtlOff)); err != nil {
		return err
	}
	got, err := read(h, pl.pci)
	if err != nil {
		return fmt.Errorf("reading %s back: %w", pl.pci, err)
	}
	if got.MaxReadRequest() != pl.want {
		return fmt.Errorf("%s: Max Read Request Size reads %d after writing %d (Device Control %#04x at %#x): the device did not take it", pl.pci, got.MaxReadRequest(), pl.want, got.DevCtl, f.Cap+devCtlOff)
	}
	return nil
}
