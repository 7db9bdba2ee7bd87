package services

import (
	"strings"

	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// CaptureUnits are the units of the RDMA stack show describes, sorted:
// the subnet manager, the address-resolution and SRP daemons, the node
// description daemon and the iWARP port mapper. Units not installed are
// left out.
var CaptureUnits = []string{"ibacm.service", "iwpmd.service", "opensm.service", "rdma-ndd.service", "srp_daemon.service"}

var _ plan.TypedCapturer[*Observed] = (*Provider)(nil)

// CaptureFrom implements plan.TypedCapturer: for each installed unit of
// CaptureUnits (and of the units show is asked for), whether it runs and,
// when it can be enabled or disabled, whether it is enabled. A host
// without systemd has none.
//
// Equivalent to: systemctl show -p LoadState,ActiveState,UnitFileState opensm.service ...
func (p *Provider) CaptureFrom(obs *Observed, req *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	if obs == nil || obs.NoSystemd {
		return nil
	}
	for _, u := range unitsOf(req) {
		st := obs.Units[u]
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
