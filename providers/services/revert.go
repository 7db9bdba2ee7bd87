package services

import (
	"strconv"

	"github.com/rdmaform/rdmaform/plan"
)

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: a unit the change enabled is disabled
// again, one it started is stopped, and the other way round. A change only
// sets what differed, so the value before is the opposite of the one set.
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	back := &payload{unit: pl.unit}
	var attrs []plan.Attr
	if pl.enable != nil {
		v := !*pl.enable
		back.enable = &v
		attrs = append(attrs, plan.Attr{Name: "enabled", Before: strconv.FormatBool(*pl.enable), After: strconv.FormatBool(v)})
	}
	if pl.start != nil {
		v := !*pl.start
		back.start = &v
		attrs = append(attrs, plan.Attr{Name: "active", Before: strconv.FormatBool(*pl.start), After: strconv.FormatBool(v)})
	}
	if len(attrs) == 0 {
		return nil, nil
	}
	return &plan.Change{Address: c.Address, Action: plan.Update, Activation: c.Activation, Attributes: attrs, Payload: back}, nil
}
