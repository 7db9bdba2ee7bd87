package rdmanetns

import (
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.TypedCapturer[*Observed] = (*Provider)(nil)

// CaptureFrom implements plan.TypedCapturer: the running mode when it is
// exclusive or rdmaform's file names one (shared, the kernel's default,
// with no file is not captured: every host would carry it). Without
// ib_core loaded, the file's mode.
func (p *Provider) CaptureFrom(obs *Observed, _ *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	if obs == nil {
		return nil
	}
	mode := obs.Mode
	if obs.NoRDMA {
		mode = confMode(obs.Conf)
	}
	if mode == "" || (mode == shared && obs.Conf == nil) {
		return nil
	}
	spec.Rdma = &schema.RdmaSystem{NetnsMode: mode}
	return nil
}
