package acs

import (
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.TypedCapturer[*Observed] = (*Provider)(nil)

// CaptureFrom implements plan.TypedCapturer: acs: {peer_to_peer: true}
// on every captured device with a GPU below its host bridge whose paths'
// bridges with ACS all have P2P Request Redirect, Completion Redirect and
// Egress Control off (and at least one bridge has ACS: otherwise there is
// nothing to keep). Explicit values are not captured: a value read says
// nothing of which bits an operator meant.
//
// Equivalent to: setpci -s BRIDGE ECAP_ACS+6.w, for each bridge
func (p *Provider) CaptureFrom(obs *Observed, req *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	if obs == nil {
		return nil
	}
	for i, d := range req.Devices {
		if d == nil || i >= len(spec.Devices) {
			continue
		}
		near, _ := peerPaths(d)
		open, hasACS := len(near) > 0, false
		for _, a := range near {
			for _, b := range a.Bridges {
				c, ok := obs.Bridges[b]
				if !ok {
					open = false // unreadable: say nothing
					continue
				}
				if c.Offset == 0 {
					continue
				}
				hasACS = true
				if c.Control&P2PMask != 0 {
					open = false
				}
			}
		}
		if open && hasACS {
			yes := true
			spec.Devices[i].ACS = &schema.ACS{PeerToPeer: &yes}
		}
	}
	return nil
}
