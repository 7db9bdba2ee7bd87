package sriov

import (
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.TypedCapturer[*Observed] = (*Provider)(nil)

// CaptureFrom implements plan.TypedCapturer: a PF with SR-IOV capability
// and VFs enabled gets sriov: {num_vfs, drivers_autoprobe}, and vfs: with
// what single VFs have: GUIDs and MACs that are not zero, trust on, a link
// state other than auto, and on an Ethernet PF spoofchk on every VF, on or
// off: its default is the driver's, so a capture that left it out would
// leave it as another host's driver has it (an InfiniBand PF's VFs take
// no spoofchk). A PF with none enabled is left out, so show stays short on
// hosts that use no VFs.
func (p *Provider) CaptureFrom(obs *Observed, req *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	if obs == nil {
		return nil
	}
	for i, d := range req.Devices {
		pf := obs.PFs[i]
		if d == nil || pf == nil || pf.NoCapability || pf.NumVFs == 0 {
			continue
		}
		n, ap := pf.NumVFs, pf.Autoprobe
		sr := &schema.SRIOV{NumVFs: &n, DriversAutoprobe: &ap}
		spec.Devices[i].SRIOV = sr
		infos := pf.VFInfo
		for vf := 0; vf < pf.NumVFs; vf++ {
			info, ok := infos[vf]
			if !ok {
				continue
			}
			e := schema.VF{VF: vf}
			if info.NodeGUID != "" && info.NodeGUID != zeroGUID {
				e.NodeGUID = info.NodeGUID
			}
			if info.PortGUID != "" && info.PortGUID != zeroGUID {
				e.PortGUID = info.PortGUID
			}
			if len(info.MAC) == len(zeroMAC) && info.MAC != zeroMAC {
				e.MAC = info.MAC
			}
			if info.Trust {
				t := true
				e.Trust = &t
			}
			if info.State != "" && info.State != "auto" {
				e.State = info.State
			}
			if !pf.IB {
				s := info.Spoofchk
				e.Spoofchk = &s
			}
			if e.NodeGUID != "" || e.PortGUID != "" || e.MAC != "" || e.Trust != nil || e.Spoofchk != nil || e.State != "" {
				sr.VFs = append(sr.VFs, e)
			}
		}
	}
	return nil
}
