package services

import (
	"context"
	"fmt"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Make implements plan.TypedProvider: enable (or disable) first, then start
// (or stop), each confirmed by the manager.
//
// Equivalent to: systemctl enable UNIT; systemctl start UNIT
// (or: systemctl stop UNIT; systemctl disable UNIT)
func (p *Provider) Make(ctx context.Context, h *host.Host, c *plan.Change, pl *payload) error {
	if h.Systemd == nil {
		return fmt.Errorf("%s: %w", c.Address, ErrNoSystemd)
	}
	stopFirst := pl.start != nil && !*pl.start
	if stopFirst {
		if err := h.Systemd.Stop(ctx, pl.unit); err != nil {
			return err
		}
	}
	if pl.enable != nil {
		toggle := h.Systemd.Disable
		if *pl.enable {
			toggle = h.Systemd.Enable
		}
		if err := toggle(ctx, pl.unit); err != nil {
			return err
		}
	}
	if pl.start != nil && *pl.start {
		if err := h.Systemd.Start(ctx, pl.unit); err != nil {
			return err
		}
	}
	return nil
}
