package qos

import (
	"github.com/rdmaform/rdmaform/plan"
)

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: the settings the change made go back
// to what the plan read (the APP table exactly as it was). A port the
// change took from firmware to host DCBX stays with the host: dcb cannot
// hand it back (see compare).
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	if pl.before == nil {
		return nil, nil
	}
	b := *pl.before // a copy: the revert's want points into it
	w := want{}
	if pl.want.trust != "" || pl.want.app != nil {
		app := map[int]int{}
		for d, prios := range b.App {
			if len(prios) > 0 {
				app[d] = prios[0]
			}
		}
		w.app = &app
	}
	if pl.want.pfc != nil {
		w.pfc = &b.PFC
	}
	if pl.want.delay != nil {
		w.delay = &b.Delay
	}
	if pl.want.ets != nil {
		for i := range b.ETS.TSA {
			if b.ETS.TSA[i] != "ets" {
				b.ETS.BW[i] = 0 // dcb takes 0 for strict and vendor classes
			}
		}
		w.ets = &b.ETS
	}
	if pl.want.pause != nil {
		w.pause = &[2]bool{b.PauseRX, b.PauseTX}
	}
	if pl.want.ecn != nil {
		w.ecn = &[2][8]bool{b.ECNRP, b.ECNNP}
	}
	if pl.want.cnp != nil {
		w.cnp = &cnpWant{dscp: &b.CNPDSCP, prio: &b.CNPPrio}
	}
	var attrs []plan.Attr
	for _, a := range plan.Reversed(c.Attributes) {
		if a.Name != "dcbx" { // stays with the host (see above)
			attrs = append(attrs, a)
		}
	}
	if len(attrs) == 0 {
		return nil, nil
	}
	return &plan.Change{Address: c.Address, Action: plan.Update, Activation: c.Activation, Attributes: attrs, Payload: &payload{netdev: pl.netdev, want: w}, Disrupts: c.Disrupts}, nil
}
