package netdev

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Make implements plan.TypedProvider. A link going down goes down first; one
// going up comes up last, after its MTU and addresses are set. Addresses:
// static global ones not wanted are removed, then wanted ones missing are
// added (re-read in between: removing a primary IPv4 address can take its
// secondaries with it).
//
// Equivalent to: ip link set NAME down; ip link set NAME mtu N;
// ip addr del P dev NAME ...; ip addr add P dev NAME ...; ip link set NAME up
func (p *Provider) Make(ctx context.Context, h *host.Host, c *plan.Change, pl *payload) error {
	if err := awaitLink(ctx, h, c, pl); err != nil {
		return err
	}
	if pl.up != nil && !*pl.up {
		if err := h.Net.LinkSetUp(pl.name, false); err != nil {
			return fmt.Errorf("ip link set %s down: %w", pl.name, err)
		}
	}
	if pl.mtu != nil {
		if err := h.Net.LinkSetMTU(pl.name, *pl.mtu); err != nil {
			return fmt.Errorf("ip link set %s mtu %d: %w", pl.name, *pl.mtu, err)
		}
	}
	if pl.manageAddrs {
		if err := setAddrs(h, pl.name, pl.addrs); err != nil {
			return err
		}
	}
	if pl.up != nil && *pl.up {
		if err := h.Net.LinkSetUp(pl.name, true); err != nil {
			return fmt.Errorf("ip link set %s up: %w", pl.name, err)
		}
	}
	return nil
}

// awaitLink checks that the netdev exists; one an earlier change makes
// (pl.appears) is waited for, polling every 100 ms up to appearWait.
func awaitLink(ctx context.Context, h *host.Host, c *plan.Change, pl *payload) error {
	timeout := time.NewTimer(appearWait)
	defer timeout.Stop()
	for {
		_, err := h.Net.LinkByName(pl.name)
		if err == nil {
			return nil
		}
		if !pl.appears {
			return fmt.Errorf("interface %s: %w", pl.name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for interface %s: %w", pl.name, ctx.Err())
		case <-timeout.C:
			return fmt.Errorf("interface %s did not appear within %s after %s: %w", pl.name, appearWait, plan.JoinAddrs(c.DependsOn, ", "), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// setAddrs makes want the set of static global addresses of a netdev.
func setAddrs(h *host.Host, name string, want []netip.Prefix) error {
	wanted := map[netip.Prefix]bool{}
	for _, p := range want {
		wanted[p] = true
	}
	have, err := h.Net.AddrList(name)
	if err != nil {
		return fmt.Errorf("ip addr show dev %s: %w", name, err)
	}
	var del []netip.Prefix
	for _, a := range have {
		if a.Global && !a.Dynamic && !wanted[a.Prefix] {
			del = append(del, a.Prefix)
		}
	}
	sortPrefixes(del)
	for _, p := range del {
		if err := h.Net.AddrDel(name, p); err != nil {
			return fmt.Errorf("ip addr del %s dev %s: %w", p, name, err)
		}
	}
	have, err = h.Net.AddrList(name)
	if err != nil {
		return fmt.Errorf("ip addr show dev %s: %w", name, err)
	}
	present := map[netip.Prefix]bool{}
	for _, a := range have {
		present[a.Prefix] = true
	}
	for _, p := range want {
		if present[p] {
			continue
		}
		if err := h.Net.AddrAdd(name, p); err != nil {
			return fmt.Errorf("ip addr add %s dev %s: %w", p, name, err)
		}
	}
	return nil
}
