package sriov

import (
	"context"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.Capturer = (*Provider)(nil)

// Capture implements plan.Capturer: a PF with SR-IOV capability and VFs
// enabled gets sriov: {num_vfs, drivers_autoprobe}. A PF with none
// enabled is left out, so show stays short on hosts that use no VFs.
//
// Equivalent to: cat /sys/bus/pci/devices/PCI/sriov_{numvfs,drivers_autoprobe}
func (p *Provider) Capture(_ context.Context, h *host.Host, req *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	for i, d := range req.Devices {
		if d == nil || d.PCI == "" {
			continue
		}
		pf, err := Read(h, d.PCI)
		if err != nil {
			return err
		}
		if pf.NoCapability || pf.NumVFs == 0 {
			continue
		}
		n, ap := pf.NumVFs, pf.Autoprobe
		spec.Devices[i].SRIOV = &schema.SRIOV{NumVFs: &n, DriversAutoprobe: &ap}
	}
	return nil
}
