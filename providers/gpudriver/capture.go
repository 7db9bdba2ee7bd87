package gpudriver

import (
	"strconv"

	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.TypedCapturer[*Observed] = (*Provider)(nil)

// CaptureFrom implements plan.TypedCapturer: nvidia-peermem when it is
// loaded or rdmaform's file loads it, and the parameters rdmaform's
// modprobe.d file gives (a name or value the spec could not hold is left
// out). DMA-BUF, which needs nothing on the host, is not captured.
func (p *Provider) CaptureFrom(obs *Observed, _ *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	if obs == nil {
		return nil
	}
	g := &schema.GPU{}
	if obs.PeermemLoaded || obs.LoadsPeermem {
		g.PeerMemory = schema.PeerMemoryPeermem
	}
	for _, o := range obs.Listed {
		if _, ok := schema.NVIDIAParamKey(o.Name); !ok {
			continue
		}
		n, err := strconv.ParseInt(o.Value, 0, 32)
		if err != nil {
			continue
		}
		v := int(n)
		g.DriverParams = append(g.DriverParams, schema.GPUDriverParam{Name: o.Name, Value: &v})
		if len(g.DriverParams) == schema.MaxGPUDriverParams {
			break
		}
	}
	if g.PeerMemory == "" && g.DriverParams == nil {
		return nil
	}
	spec.GPU = g
	return nil
}
