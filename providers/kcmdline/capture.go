package kcmdline

import (
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.TypedCapturer[*Observed] = (*Provider)(nil)

// CaptureFrom implements plan.TypedCapturer: the arguments GrubFile gives,
// in its order; a key rdmaform does not check is marked raw. Arguments
// set elsewhere (the distribution's /etc/default/grub) are not rdmaform's.
func (p *Provider) CaptureFrom(obs *Observed, _ *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	if obs.Listed == nil {
		return nil
	}
	for _, a := range obs.Listed {
		ka := schema.KernelArg{Arg: a}
		if _, msg := schema.CheckKernelArg(ka); msg != "" {
			ka.Raw = true
		}
		spec.KernelArgs = append(spec.KernelArgs, ka)
	}
	return nil
}
