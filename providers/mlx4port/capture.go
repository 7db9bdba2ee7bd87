package mlx4port

import (
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.TypedCapturer[*Observed] = (*Provider)(nil)

// CaptureFrom implements plan.TypedCapturer: each port Observe found an
// mlx4_portN file for gets its setting (ib, eth or auto) as type.
func (p *Provider) CaptureFrom(obs *Observed, req *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	for i, d := range req.Devices {
		if d == nil || d.PCI == "" {
			continue
		}
		for j := range spec.Devices[i].Ports {
			pt := &spec.Devices[i].Ports[j]
			if st, ok := obs.Ports[key(d.PCI, pt.Port)]; ok {
				pt.Type = st.Setting
			}
		}
	}
	return nil
}
