package sriov

import (
	"fmt"
	"strconv"

	"github.com/rdmaform/rdmaform/plan"
)

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: the PF gets back the count and
// autoprobe setting it had (0 first when VFs are enabled, as any change).
// The VFs come back new: settings made on them outside rdmaform are gone.
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, ok := c.Payload.(*payload)
	if !ok {
		return nil, fmt.Errorf("%s: no sriov payload", c.Address)
	}
	back := &payload{pci: pl.pci, want: pl.before.NumVFs, before: PF{TotalVFs: pl.before.TotalVFs, NumVFs: pl.want, Autoprobe: pl.before.Autoprobe}}
	var attrs []plan.Attr
	if pl.autoprobe != nil {
		was := pl.before.Autoprobe
		back.autoprobe = &was
		back.before.Autoprobe = *pl.autoprobe
		attrs = append(attrs, plan.Attr{Name: "drivers_autoprobe", Before: strconv.FormatBool(*pl.autoprobe), After: strconv.FormatBool(was)})
	}
	if len(pl.writes) > 0 {
		if pl.want != 0 {
			back.writes = append(back.writes, 0)
		}
		if pl.before.NumVFs != 0 {
			back.writes = append(back.writes, pl.before.NumVFs)
		}
		attrs = append(attrs, plan.Attr{Name: "num_vfs", Before: strconv.Itoa(pl.want), After: strconv.Itoa(pl.before.NumVFs)})
	}
	if len(attrs) == 0 {
		return nil, nil
	}
	return &plan.Change{Address: c.Address, Action: plan.Update, Activation: c.Activation, Stage: c.Stage,
		Provider: c.Provider, Attributes: attrs, Payload: back, Disrupts: c.Disrupts}, nil
}
