package sriov

import (
	"context"
	"errors"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.Capturer = (*Provider)(nil)

// Capture implements plan.Capturer: a PF with SR-IOV capability and VFs
// enabled gets sriov: {num_vfs, drivers_autoprobe}, and vfs: with what
// was set on single VFs (GUIDs and MACs that are not zero, trust on, a
// link state other than auto; spoofchk, whose default is the driver's,
// is left out). A PF with none enabled is left out, so show stays short
// on hosts that use no VFs.
//
// Equivalent to: cat /sys/bus/pci/devices/PCI/sriov_{numvfs,drivers_autoprobe}; ip -j link show dev PF
func (p *Provider) Capture(ctx context.Context, h *host.Host, req *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
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
		sr := &schema.SRIOV{NumVFs: &n, DriversAutoprobe: &ap}
		spec.Devices[i].SRIOV = sr
		var netdev string
		if len(d.Ports) > 0 {
			for _, nd := range d.Ports[0].Netdevs {
				if !strings.Contains(nd, ".") {
					netdev = nd
					break
				}
			}
		}
		if netdev == "" || h.Offline() {
			continue
		}
		infos, err := ReadVFs(ctx, h, netdev)
		if err != nil {
			if errors.Is(err, host.ErrNotFound) {
				continue // no ip: the count alone
			}
			return err
		}
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
			if e.NodeGUID != "" || e.PortGUID != "" || e.MAC != "" || e.Trust != nil || e.State != "" {
				sr.VFs = append(sr.VFs, e)
			}
		}
	}
	return nil
}
