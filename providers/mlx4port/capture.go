package mlx4port

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.Capturer = (*Provider)(nil)

// Capture implements plan.Capturer: each port that has an mlx4_portN file
// gets its setting (ib, eth or auto) as type.
//
// Equivalent to: cat /sys/bus/pci/devices/0000:81:00.0/mlx4_port1
func (p *Provider) Capture(_ context.Context, h *host.Host, req *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	for i, d := range req.Devices {
		if d == nil || d.PCI == "" {
			continue
		}
		for j := range spec.Devices[i].Ports {
			pt := &spec.Devices[i].Ports[j]
			s, err := host.ReadAttr(h.FS, File(d.PCI, pt.Port))
			if errors.Is(err, fs.ErrNotExist) {
				continue // not an mlx4 port
			}
			if err != nil {
				return fmt.Errorf("reading %s: %w", File(d.PCI, pt.Port), err)
			}
			st, err := ParseState(s)
			if err != nil {
				return fmt.Errorf("%s: %w", File(d.PCI, pt.Port), err)
			}
			pt.Type = st.Setting
		}
	}
	return nil
}
