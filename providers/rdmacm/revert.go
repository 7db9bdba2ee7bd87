package rdmacm

import (
	"strconv"

	"github.com/rdmaform/rdmaform/plan"
)

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: it writes back the values the change
// replaced. Settings of a device the plan created go with the device;
// those of a card it registered anew go back after the undo of what did.
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	if pl.before == nil {
		return nil, nil
	}
	back := &payload{dev: pl.dev, port: pl.port, before: &PortValues{}}
	var attrs []plan.Attr
	if pl.mode != "" {
		back.mode = pl.before.Mode
		attrs = append(attrs, plan.Attr{Name: "mode", Before: SpecMode(pl.mode), After: SpecMode(pl.before.Mode)})
	}
	if pl.tos != nil {
		tos := pl.before.Tos
		back.tos = &tos
		attrs = append(attrs, plan.Attr{Name: "tos", Before: strconv.Itoa(*pl.tos), After: strconv.Itoa(tos)})
	}
	rc := &plan.Change{Address: c.Address, Action: plan.Update, Activation: c.Activation, Attributes: attrs, Payload: back}
	if pl.reregistered {
		// Values set again on a card registered anew (an mlx4 port type):
		// undoing the port type registers it again, so they go back after.
		rc.DependsOn = c.DependsOn
	}
	return rc, nil
}
