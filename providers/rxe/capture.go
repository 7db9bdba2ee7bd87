package rxe

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.Capturer = (*Provider)(nil)

// Capture implements plan.Capturer: every Soft-RoCE link with its netdev,
// sorted by name (netlink, or the tree's sysfs parent files through
// host.OfflineNet). A kernel without RDMA netlink has none.
//
// Equivalent to: rdma link show
func (p *Provider) Capture(_ context.Context, h *host.Host, req *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	var out []schema.Rxe
	links, err := h.Net.RdmaLinkList()
	if err != nil && !errors.Is(err, host.ErrNoRDMA) {
		return fmt.Errorf("listing RDMA links: %w", err)
	}
	for _, l := range links {
		if l.Netdev == "" {
			if d := req.Inv.Device(l.Name); d != nil {
				l.Netdev = d.Parent
			}
		}
		if l.Software() {
			out = append(out, schema.Rxe{Name: l.Name, Netdev: l.Netdev})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	spec.Rxe = out
	return nil
}
