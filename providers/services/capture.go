package services

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// CaptureUnits are the units of the RDMA stack show describes, sorted:
// the subnet manager, the address-resolution and SRP daemons, the node
// description daemon and the iWARP port mapper. Units not installed are
// left out.
var CaptureUnits = []string{"ibacm.service", "iwpmd.service", "opensm.service", "rdma-ndd.service", "srp_daemon.service"}

var _ plan.Capturer = (*Provider)(nil)

// Capture implements plan.Capturer: for each installed unit of
// CaptureUnits, whether it runs and, when it can be enabled or disabled,
// whether it is enabled. A host without systemd has none.
//
// Equivalent to: systemctl show -p LoadState,ActiveState,UnitFileState opensm.service ...
func (p *Provider) Capture(ctx context.Context, h *host.Host, _ *plan.Request, spec *schema.Spec, o plan.CaptureOptions) error {
	if h.Systemd == nil {
		return nil
	}
	units := slices.Clone(CaptureUnits)
	for _, u := range o.Units {
		if !slices.Contains(units, u) {
			units = append(units, u)
		}
	}
	for _, u := range units {
		st, err := h.Systemd.Unit(ctx, u)
		if err != nil {
			return fmt.Errorf("unit %s: %w", u, err)
		}
		if st.LoadState != "loaded" {
			continue
		}
		active := st.Active()
		s := schema.Service{Name: strings.TrimSuffix(u, ".service"), Active: &active}
		if st.Toggleable() {
			enabled := st.Enabled()
			s.Enabled = &enabled
		}
		spec.Services = append(spec.Services, s)
	}
	return nil
}
