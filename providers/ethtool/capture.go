package ethtool

import (
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.TypedCapturer[*Observed] = (*Provider)(nil)

// showNetdevs are the netdevs show reads: those it captures as
// interfaces.
func showNetdevs(req *plan.Request) []string { return req.ShowNetdevs() }

// CaptureFrom implements plan.TypedCapturer: the current ring sizes and
// channel counts of each interface show captured (the netdev stage adds
// them first), the fields the driver has; a driver with neither gives no
// ethtool block. Without ethtool nothing is captured.
//
// Equivalent to: ethtool -g NAME; ethtool -l NAME
func (p *Provider) CaptureFrom(obs *Observed, _ *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	if obs == nil {
		return nil
	}
	for i := range spec.Interfaces {
		it := &spec.Interfaces[i]
		ifc := obs.Ifaces[it.Name]
		if ifc == nil {
			continue
		}
		e := &schema.Ethtool{}
		if r := ifc.Rings; r != nil && len(r.Cur) > 0 {
			e.Rings = &schema.Rings{RX: ptr(r.Cur, "rx"), TX: ptr(r.Cur, "tx")}
			if e.Rings.RX == nil && e.Rings.TX == nil {
				e.Rings = nil
			}
		}
		if c := ifc.Channels; c != nil && len(c.Cur) > 0 {
			e.Channels = &schema.Channels{Combined: ptr(c.Cur, "combined"), RX: ptr(c.Cur, "rx"), TX: ptr(c.Cur, "tx")}
			if e.Channels.Combined == nil && e.Channels.RX == nil && e.Channels.TX == nil {
				e.Channels = nil
			}
		}
		if e.Rings != nil || e.Channels != nil {
			it.Ethtool = e
		}
	}
	return nil
}

func ptr(m map[string]int, k string) *int {
	v, ok := m[k]
	if !ok {
		return nil
	}
	return &v
}
