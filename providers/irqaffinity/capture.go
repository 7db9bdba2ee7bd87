package irqaffinity

import (
	"strconv"

	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.TypedCapturer[*Observed] = (*Provider)(nil)

// CaptureFrom implements plan.TypedCapturer: irq_affinity: {cpus: local}
// on every captured device whose vectors are spread, one CPU each, over
// the online CPUs of its NUMA node as Plan spreads them. Any other
// placement is not captured: a list read says nothing of the spread an
// operator meant (and the kernel's default, every CPU, needs no spec).
//
// Equivalent to: cat /proc/irq/N/smp_affinity_list, for each vector
func (p *Provider) CaptureFrom(obs *Observed, req *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	if obs == nil || obs.OnlineErr != "" {
		return nil
	}
	for i, d := range req.Devices {
		if d == nil || i >= len(spec.Devices) {
			continue
		}
		f := obs.Funcs[d.PCI]
		if f == nil {
			continue
		}
		cpus, msg := cpusFor(schema.IRQAffinityLocal, f, obs.Online)
		if msg != "" {
			continue
		}
		spread := true
		for j, irq := range f.IRQs {
			if f.Affinity[irq] != strconv.Itoa(cpus[j%len(cpus)]) {
				spread = false
			}
		}
		if spread {
			spec.Devices[i].IRQAffinity = &schema.IRQAffinity{CPUs: schema.IRQAffinityLocal}
		}
	}
	return nil
}
