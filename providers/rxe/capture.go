package rxe

import (
	"sort"

	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.TypedCapturer[*Observed] = (*Provider)(nil)

// CaptureFrom implements plan.TypedCapturer: every Soft-RoCE link Observe
// listed, with its netdev, sorted by name. A kernel without RDMA netlink
// has none.
func (p *Provider) CaptureFrom(obs *Observed, _ *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	var out []schema.Rxe
	for _, l := range obs.Links {
		if l.Software() {
			out = append(out, schema.Rxe{Name: l.Name, Netdev: l.Netdev})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	spec.Rxe = out
	return nil
}
