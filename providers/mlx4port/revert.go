package mlx4port

import (
	"fmt"
	"sort"

	"github.com/rdmaform/rdmaform/plan"
)

// portNetdevs names the netdevs a type change takes away: mlx4_core
// unregisters every interface of the card and registers them again
// (mlx4_change_port_types), so the netdevs of both ports (ib0, or the
// Ethernet netdev) disappear and come back with the driver's defaults. A
// change between auto and the type the port already runs re-registers
// nothing and disrupts nothing.
func portNetdevs(req *plan.Request, dev string, port int, have State, want string) []string {
	if effective(want, have) == have.Effective && have.Effective != "" {
		return nil
	}
	d := req.Inv.Device(dev)
	if d == nil || d.Port(port) == nil {
		return nil
	}
	var out []string
	for _, p := range d.Ports {
		out = append(out, p.Netdevs...)
	}
	sort.Strings(out)
	return out
}

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: it writes back the type the port had.
// When this plan changed both ports, writing the old type may need the
// other port's old type first (mlx4_core refuses port 1 eth with port 2
// ib); Apply does that as it does for the change itself. A port that was
// auto gets the type auto had detected first, then auto.
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	if pl.was == "" {
		return nil, fmt.Errorf("%s: the port's type before the change is not known", c.Address)
	}
	back := &payload{pci: pl.pci, port: pl.port, want: pl.was, other: pl.otherWas, was: pl.want, otherWas: pl.other}
	// auto keeps the type the port runs when nothing decides otherwise
	// (the link partner): restore the type auto had found, then auto.
	if pl.was == "auto" && pl.wasEff != "" {
		back.via = pl.wasEff
		if pl.otherWas == "auto" {
			back.otherVia = pl.otherWasEff
		} else {
			back.otherVia = pl.otherWas
		}
	}
	return &plan.Change{Address: c.Address, Action: plan.Update, Activation: c.Activation, Attributes: []plan.Attr{{Name: "type", Before: pl.want, After: pl.was}}, Payload: back,
		Disrupts: c.Disrupts}, nil
}
