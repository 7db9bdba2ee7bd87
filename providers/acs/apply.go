package acs

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Make implements plan.TypedProvider: it reads the bridge's config space
// again, writes the ACS Control register with the payload's bits (the
// other bits as read) in place, two bytes at capability+6, and reads it
// back: a bridge may keep a bit (one its ACS Capability lacks reads 0),
// which is then an error naming what it kept.
//
// Equivalent to: setpci -s BRIDGE ECAP_ACS+6.w=VALUE:MASK; setpci -s BRIDGE ECAP_ACS+6.w
func (p *Provider) Make(_ context.Context, h *host.Host, _ *plan.Change, pl *payload) error {
	c, err := read(h, pl.bridge)
	if err != nil {
		return err
	}
	if c.Offset == 0 {
		return fmt.Errorf("bridge %s: no ACS capability", pl.bridge)
	}
	want := c.Control&^pl.mask | pl.value&pl.mask
	v := make([]byte, 2)
	binary.LittleEndian.PutUint16(v, want)
	if err := host.WriteAttrAt(h.FS, ConfigPath(pl.bridge), v, int64(c.Offset+acsCtlOff)); err != nil {
		return err
	}
	got, err := read(h, pl.bridge)
	if err != nil {
		return fmt.Errorf("reading bridge %s back: %w", pl.bridge, err)
	}
	if got.Control != want {
		return fmt.Errorf("bridge %s: ACS Control reads %s after writing %s (at %#x): the bridge did not take it", pl.bridge, Describe(got.Control), Describe(want), c.Offset+acsCtlOff)
	}
	return nil
}
