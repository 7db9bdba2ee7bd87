// Package netdev manages plain network interfaces through netlink: the
// administrative state, the MTU and the set of static global addresses of
// netdevs NetworkManager does not own. Everything it sets lives in the
// kernel until the next boot (runtime settings).
package netdev

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// IPoIBModule creates IPoIB netdevs (ib0) when it loads.
const IPoIBModule = "ib_ipoib"

// Provider is the netlink interfaces provider.
type Provider struct{}

var _ plan.TypedProvider[*Observed, *payload] = (*Provider)(nil)

// New is the provider as plan.Build and apply take it.
func New() plan.Provider { return plan.Adapt[*Observed, *payload](&Provider{}) }

// Name implements plan.Provider.
func (*Provider) Name() string { return "netdev" }

// Kind is the kind of this provider's addresses.
const Kind = "interface"

// Address is the plan address of an interface.
func Address(name string) plan.Address { return plan.Addr(Kind, name) }

// Iface is one existing netdev as netlink shows it.
type Iface struct {
	Link host.Link
	// Addrs is every address; nil when the spec leaves addresses alone.
	Addrs []host.Addr
}

// Observed maps each spec interface that exists to what netlink says; a
// missing netdev has no entry.
type Observed struct {
	Ifaces map[string]*Iface
	// NoAddrs: show found no addresses to read (an offline tree, --root).
	NoAddrs bool `json:",omitempty"`
}

// Observe implements plan.TypedProvider: one link lookup per spec interface,
// and its address list when the spec manages addresses; for show
// (Request.Full) every netdev of CaptureNetdevs and those show is asked
// for, each with its addresses.
//
// Equivalent to: ip link show NAME; ip addr show dev NAME
func (p *Provider) Observe(_ context.Context, h *host.Host, req *plan.Request) (*Observed, error) {
	names, addrs := scope(req)
	if len(names) == 0 {
		return nil, nil
	}
	obs := &Observed{Ifaces: map[string]*Iface{}}
	for i, name := range names {
		now := req.NetdevNow(name) // a netdev the names stage renames is read under its name now
		l, err := h.Net.LinkByName(now)
		if errors.Is(err, host.ErrLinkNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("ip link show %s: %w", now, err)
		}
		ifc := &Iface{Link: l}
		if addrs[i] {
			as, err := h.Net.AddrList(now)
			if req.Full && errors.Is(err, host.ErrNoNetlink) {
				// An offline tree (--root) has no addresses to tell: an
				// interface captured without them would claim it has none.
				return &Observed{NoAddrs: true}, nil
			}
			if err != nil {
				return nil, fmt.Errorf("ip addr show dev %s: %w", now, err)
			}
			ifc.Addrs = as
		}
		obs.Ifaces[name] = ifc
	}
	return obs, nil
}

// scope lists the netdevs to read and whether to read each one's
// addresses: the spec's interfaces, or show's.
func scope(req *plan.Request) (names []string, addrs []bool) {
	if req.Full {
		names = showNetdevs(req)
		return names, slices.Repeat([]bool{true}, len(names))
	}
	for _, it := range req.Spec.Interfaces {
		names = append(names, it.Name)
		addrs = append(addrs, it.Addresses != nil)
	}
	return names, addrs
}

// payload is what Apply needs; nil fields are left alone.
type payload struct {
	name string
	up   *bool
	mtu  *int
	// addrs is the full set of static global addresses, when managed.
	addrs []netip.Prefix
	// manageAddrs is set when the addresses change.
	manageAddrs bool
	// before is what the netdev had, for Revert; nil for a netdev this
	// plan makes appear (a module load).
	before *before
	// appears: the netdev is made by an earlier change of the plan, and
	// udev may still be naming it; Make waits for it (appearWait).
	appears bool
}

// appearWait bounds the wait for a netdev an earlier change makes: the
// kernel registers it at once, udev renames it within a second or two.
var appearWait = 15 * time.Second
