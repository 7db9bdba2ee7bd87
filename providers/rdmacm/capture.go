package rdmacm

import (
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.TypedCapturer[*Observed] = (*Provider)(nil)

// CaptureFrom implements plan.TypedCapturer: the RoCE mode and ToS of
// every port that is Ethernet now (Observe read those) and stays so (the
// spec's link_layer, which a staged firmware link type has already set).
// Reading a device's values needs its configfs group; Observe created one
// that did not exist and removed it again.
//
// When configfs shows no rdma_cm (the module is not loaded), nothing is
// captured: show loads no module, and without rdma_cm no connection uses
// the defaults anyway.
//
// Equivalent to: mkdir /sys/kernel/config/rdma_cm/DEV; cat .../ports/N/default_roce_{mode,tos}; rmdir /sys/kernel/config/rdma_cm/DEV
func (p *Provider) CaptureFrom(obs *Observed, req *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	if obs == nil || obs.NotLoaded {
		return nil
	}
	for i, d := range req.Devices {
		if d == nil {
			continue
		}
		for j := range spec.Devices[i].Ports {
			pt := &spec.Devices[i].Ports[j]
			if pt.LinkLayer != linklayer.Ethernet {
				continue
			}
			v, ok := obs.Ports[key(d.Name, pt.Port)]
			if !ok {
				continue
			}
			tos := v.Tos
			pt.Roce = &schema.Roce{Tos: &tos}
			if m := SpecMode(v.Mode); m == "v1" || m == "v2" {
				pt.Roce.Mode = m
			}
		}
	}
	return nil
}
