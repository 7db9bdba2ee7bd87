// Package rxe manages Soft-RoCE links: RDMA devices of the rdma_rxe
// driver bound to an Ethernet netdev, created and deleted through RDMA
// netlink. They live until the next boot (runtime settings).
package rxe

import (
	"context"
	"errors"
	"fmt"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Module is the kernel module of Soft-RoCE.
const Module = "rdma_rxe"

// Provider is the Soft-RoCE provider.
type Provider struct{}

var _ plan.TypedProvider[*Observed, *payload] = (*Provider)(nil)

// New is the provider as plan.Build and apply take it.
func New() plan.Provider { return plan.Adapt[*Observed, *payload](&Provider{}) }

// Name implements plan.Provider.
func (*Provider) Name() string { return "rxe" }

// Kind is the kind of this provider's addresses.
const Kind = "rxe"

// Address is the plan address of an rxe link; rdma_cm settings of a link
// this plan creates depend on it.
func Address(name string) plan.Address { return plan.Addr(Kind, name) }

// Observed is what the host says about RDMA links and the spec's netdevs.
type Observed struct {
	// Links holds every RDMA device by name; software links carry their
	// netdev.
	Links map[string]host.RdmaLink
	// NoRDMA is set when the kernel has no RDMA netlink (wraps
	// host.ErrNoRDMA): no rxe link can exist or be made.
	NoRDMA error
	// Netdevs holds the netdevs the spec's present links name; a missing
	// netdev has no entry.
	Netdevs map[string]host.Link
}

// Observe implements plan.TypedProvider. It lists RDMA links and looks up
// each spec netdev (netlink, or the tree's sysfs through host.OfflineNet).
func (p *Provider) Observe(_ context.Context, h *host.Host, req *plan.Request) (*Observed, error) {
	if len(req.Spec.Rxe) == 0 && !req.Full {
		return nil, nil
	}
	obs := &Observed{Links: map[string]host.RdmaLink{}, Netdevs: map[string]host.Link{}}
	links, err := h.Net.RdmaLinkList()
	switch {
	case errors.Is(err, host.ErrNoRDMA):
		obs.NoRDMA = err
	case err != nil:
		return nil, fmt.Errorf("listing RDMA links: %w", err)
	}
	for _, l := range links {
		// A link or netdev the names stage renames goes by its new name.
		l.Name, l.Netdev = req.RDMAAfter(l.Name), req.NetdevAfter(l.Netdev)
		if l.Netdev == "" {
			// Netlink does not name a link's netdev; sysfs parent does, and
			// the inventory read it.
			if d := req.Inv.Device(l.Name); d != nil {
				l.Netdev = d.Parent
			}
		}
		obs.Links[l.Name] = l
	}
	for _, r := range req.Spec.Rxe {
		if r.State == "absent" {
			continue
		}
		l, err := h.Net.LinkByName(req.NetdevNow(r.Netdev))
		switch {
		case errors.Is(err, host.ErrLinkNotFound):
		case err != nil:
			return nil, fmt.Errorf("looking up netdev %s of rxe link %s: %w", r.Netdev, r.Name, err)
		default:
			obs.Netdevs[r.Netdev] = l
		}
	}
	return obs, nil
}

// payload is what Apply needs.
type payload struct {
	name string
	// netdev is the netdev to bind to; "" deletes the link.
	netdev string
	// deleteFirst: the link exists (on another netdev) and is deleted
	// before it is created again.
	deleteFirst bool
	// evict names rxe links the spec removes or moves that hold netdev
	// now: they are deleted first (the kernel allows one rxe link per
	// netdev), whatever order their own changes run in.
	evict []string
	// was is the netdev the link is bound to now ("" when it does not
	// exist), and wasTaken the spec's links that this plan binds to that
	// netdev: for Revert.
	was      string
	wasTaken []string
}
