// Package rxe manages Soft-RoCE links: RDMA devices of the rdma_rxe
// driver bound to an Ethernet netdev, created and deleted through RDMA
// netlink. They live until the next boot (runtime settings).
package rxe

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"syscall"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Module is the kernel module of Soft-RoCE.
const Module = "rdma_rxe"

// Provider is the Soft-RoCE provider.
type Provider struct{}

var _ plan.Provider = (*Provider)(nil)

// Name implements plan.Provider.
func (*Provider) Name() string { return "rxe" }

// Kind is the kind of this provider's addresses.
const Kind = "rxe"

// Address is the plan address of an rxe link; rdma_cm settings of a link
// this plan creates depend on it.
func Address(name string) string { return plan.Addr(Kind, name) }

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

// Discover implements plan.Provider. It lists RDMA links and looks up
// each spec netdev (netlink, or the tree's sysfs through host.OfflineNet).
func (p *Provider) Discover(_ context.Context, h *host.Host, req *plan.Request) (any, error) {
	if len(req.Spec.Rxe) == 0 {
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
		l, err := h.Net.LinkByName(r.Netdev)
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

// Diff implements plan.Provider.
func (p *Provider) Diff(req *plan.Request, observed any, facts *plan.Facts) plan.Proposal {
	obs, _ := observed.(*Observed)
	prop := diff(req, obs, facts)
	for i, r := range req.Spec.Rxe {
		prop.Managed = append(prop.Managed, plan.Managed{Address: Address(r.Name), Path: fmt.Sprintf("$.rxe[%d]", i)})
	}
	return prop
}

func diff(req *plan.Request, obs *Observed, facts *plan.Facts) plan.Proposal {
	var prop plan.Proposal
	if obs == nil {
		return prop
	}
	// What the spec wants of every link it names: its netdev, or "" for
	// absent.
	wantNetdev := map[string]string{}
	for _, r := range req.Spec.Rxe {
		if r.State == "absent" {
			wantNetdev[r.Name] = ""
		} else {
			wantNetdev[r.Name] = r.Netdev
		}
	}
	holder := map[string]string{} // netdev -> rxe link bound to it now
	for _, l := range obs.Links {
		if l.Software() {
			holder[l.Netdev] = l.Name
		}
	}
	var moduleDep []string
	if cause, ok := facts.ModuleLoad(Module); ok {
		moduleDep = []string{cause}
	}

	for i, r := range req.Spec.Rxe {
		p := fmt.Sprintf("$.rxe[%d]", i)
		addr := Address(r.Name)
		have, exists := obs.Links[r.Name]
		if exists && !have.Software() {
			prop.Errors = append(prop.Errors, req.Finding(p+".name", "%s is a hardware RDMA device, not a Soft-RoCE link; choose another name", r.Name))
			continue
		}
		if r.State == "absent" {
			if exists {
				prop.Changes = append(prop.Changes, &plan.Change{
					Address: addr, Action: plan.Delete, Activation: plan.Runtime, Source: req.Pos(p), Attributes: []plan.Attr{{Name: "netdev", Before: have.Netdev}},
					Payload: &payload{name: r.Name, was: have.Netdev, wasTaken: takers(wantNetdev, have.Netdev, r.Name)},
				})
			}
			continue
		}
		if exists && have.Netdev == r.Netdev {
			continue
		}
		nd, ok := obs.Netdevs[r.Netdev]
		if !ok {
			if reason, staged := facts.BootReason(); staged {
				prop.Deferred = append(prop.Deferred, plan.Deferred{Address: addr, Reason: fmt.Sprintf("netdev %s does not exist yet; %s", r.Netdev, reason), Source: req.Pos(p + ".netdev")})
				continue
			}
			prop.Errors = append(prop.Errors, req.Finding(p+".netdev", "no network interface %s on this host", r.Netdev))
			continue
		}
		if nd.Type == "ipoib" {
			prop.Errors = append(prop.Errors, req.Finding(p+".netdev", "%s is an IPoIB interface; Soft-RoCE needs an Ethernet netdev", r.Netdev))
			continue
		}
		if obs.NoRDMA != nil && moduleDep == nil {
			prop.Errors = append(prop.Errors, req.Finding(p, "cannot create Soft-RoCE link %s: %v", r.Name, obs.NoRDMA))
			continue
		}
		pl := &payload{name: r.Name, netdev: r.Netdev, deleteFirst: exists, was: have.Netdev, wasTaken: takers(wantNetdev, have.Netdev, r.Name)}
		if other, busy := holder[r.Netdev]; busy && other != r.Name {
			w, managed := wantNetdev[other]
			if !managed || w == r.Netdev {
				prop.Errors = append(prop.Errors, req.Finding(p+".netdev", "netdev %s already carries Soft-RoCE link %s (one per netdev); list %s with state: absent to remove it", r.Netdev, other, other))
				continue
			}
			pl.evict = []string{other}
		}
		c := &plan.Change{
			Address: addr, Action: plan.Create, Activation: plan.Runtime, Source: req.Pos(p), DependsOn: moduleDep, Payload: pl,
			Attributes: []plan.Attr{{Name: "netdev", Before: have.Netdev, After: r.Netdev}},
		}
		if exists {
			// Bound elsewhere: the kernel cannot move a link, so it is
			// deleted and created again (its rdma_cm settings start over).
			c.Action = plan.Update
		}
		facts.CreateDevice(r.Name, addr)
		prop.Changes = append(prop.Changes, c)
	}
	sort.SliceStable(prop.Changes, func(i, j int) bool { return prop.Changes[i].Address < prop.Changes[j].Address })
	return prop
}

// Apply implements plan.Provider.
//
// Equivalent to: rdma link delete NAME (absent, or bound elsewhere), then
// rdma link add NAME type rxe netdev NETDEV
func (p *Provider) Apply(_ context.Context, h *host.Host, c *plan.Change) error {
	pl, ok := c.Payload.(*payload)
	if !ok {
		return fmt.Errorf("%s: no rxe payload", c.Address)
	}
	if err := evict(h, pl); err != nil {
		return err
	}
	if pl.netdev == "" || pl.deleteFirst {
		if err := del(h, pl.name); err != nil {
			return err
		}
		if pl.netdev == "" {
			return nil
		}
	}
	return add(h, pl.name, pl.netdev)
}

// evict deletes the links pl.evict names that are still bound to
// pl.netdev; one that an earlier change of this plan already deleted, or
// deleted and created elsewhere, is left alone.
func evict(h *host.Host, pl *payload) error {
	if len(pl.evict) == 0 {
		return nil
	}
	links, err := h.Net.RdmaLinkList()
	if err != nil {
		return fmt.Errorf("freeing netdev %s for %s: %w", pl.netdev, pl.name, err)
	}
	for _, l := range links {
		for _, other := range pl.evict {
			if l.Name == other && l.Netdev == pl.netdev {
				if err := del(h, other); err != nil {
					return fmt.Errorf("freeing netdev %s for %s: %w", pl.netdev, pl.name, err)
				}
			}
		}
	}
	return nil
}

// del deletes an rxe link. A link that no longer exists is not an error:
// another change of this plan (an eviction) removed it.
//
// Equivalent to: rdma link delete NAME
func del(h *host.Host, name string) error {
	err := h.Net.RdmaLinkDel(name)
	if err == nil || errors.Is(err, syscall.ENODEV) {
		return nil
	}
	return fmt.Errorf("rdma link delete %s: %w", name, err)
}

// add creates an rxe link, naming what each of the kernel's refusals
// means.
//
// Equivalent to: rdma link add NAME type rxe netdev NETDEV
func add(h *host.Host, name, nd string) error {
	err := h.Net.RdmaLinkAdd(name, nd)
	if err == nil {
		return nil
	}
	cmd := fmt.Sprintf("rdma link add %s type rxe netdev %s", name, nd)
	switch {
	case errors.Is(err, host.ErrNoRDMA):
		return fmt.Errorf("%s: %w", cmd, err)
	case errors.Is(err, syscall.ENODEV):
		return fmt.Errorf("%s: no Ethernet netdev %s (ENODEV): %w", cmd, nd, err)
	case errors.Is(err, syscall.EEXIST):
		return fmt.Errorf("%s: %s already carries a Soft-RoCE link (EEXIST): %w", cmd, nd, err)
	case errors.Is(err, syscall.ENFILE):
		return fmt.Errorf("%s: another RDMA device is called %s (ENFILE): %w", cmd, name, err)
	case errors.Is(err, syscall.EINVAL):
		return fmt.Errorf("%s: the kernel refused it (EINVAL): the rdma_rxe module is missing or cannot load (install the kernel's rdma_rxe, e.g. linux-modules-extra, and run modprobe rdma_rxe): %w", cmd, err)
	case errors.Is(err, syscall.EPERM):
		return fmt.Errorf("%s: the kernel refused it (EPERM; rxe cannot run on a VLAN netdev, or rdmaform lacks CAP_NET_ADMIN): %w", cmd, err)
	}
	return fmt.Errorf("%s: %w", cmd, err)
}
