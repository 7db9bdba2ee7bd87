package modules

import (
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.TypedCapturer[*Observed] = (*Provider)(nil)

// CaptureFrom implements plan.TypedCapturer: the modules ConfFile lists,
// sorted. Modules merely loaded are not captured: most are loaded by udev
// for the hardware and are not rdmaform's to manage, and listing them
// would plan adding each to ConfFile. Without ConfFile the section is left
// out.
func (p *Provider) CaptureFrom(obs *Observed, _ *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	if obs.Listed != nil {
		spec.Modules = sortedKeys(obs.Listed)
	}
	return nil
}
