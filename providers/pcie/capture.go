package pcie

import (
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.TypedCapturer[*Observed] = (*Provider)(nil)

// CaptureFrom implements plan.TypedCapturer: the Max Read Request Size of
// every captured device that has a PCI Express capability (a function
// without one, or unreadable, gets no pcie block).
//
// Equivalent to: setpci -s BDF CAP_EXP+8.w
func (p *Provider) CaptureFrom(obs *Observed, req *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	if obs == nil {
		return nil
	}
	for i, d := range req.Devices {
		if d == nil || i >= len(spec.Devices) {
			continue
		}
		if f := obs.Funcs[d.PCI]; f != nil && f.MaxReadRequest() != 0 {
			v := f.MaxReadRequest()
			spec.Devices[i].PCIe = &schema.PCIe{MaxReadRequest: &v}
		}
	}
	return nil
}
