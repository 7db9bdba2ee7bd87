package netdev

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.Capturer = (*Provider)(nil)

// CaptureNetdevs are the netdevs show describes: those of RDMA ports
// (IPoIB interfaces and their P_Key children, RoCE netdevs) and the
// parents of Soft-RoCE links, sorted. Other netdevs (the management NIC,
// bridges, veths, container interfaces) are not the RDMA side of the host.
func CaptureNetdevs(req *plan.Request) []string {
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, d := range req.Inv.Devices {
		add(d.Parent)
		for _, p := range d.Ports {
			for _, n := range p.Netdevs {
				add(n)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Capture implements plan.Capturer: for each of CaptureNetdevs, its
// administrative state, MTU and static global addresses (an empty list
// when it has none: "no static addresses" is part of a golden config).
// Dynamic (DHCP, SLAAC) and link-local addresses are the kernel's or a
// client's, never captured. An offline tree (--root), whose sysfs has no
// addresses, has nothing captured.
//
// Equivalent to: ip link show NAME; ip addr show dev NAME
func (p *Provider) Capture(_ context.Context, h *host.Host, req *plan.Request, spec *schema.Spec, o plan.CaptureOptions) error {
	names := CaptureNetdevs(req)
	for _, n := range o.Netdevs {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, name := range names {
		l, err := h.Net.LinkByName(name)
		if errors.Is(err, host.ErrLinkNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("ip link show %s: %w", name, err)
		}
		addrs, err := h.Net.AddrList(name)
		if errors.Is(err, host.ErrNoNetlink) {
			// An offline tree (--root) has no addresses to tell: an
			// interface captured without them would claim it has none.
			return nil
		}
		if err != nil {
			return fmt.Errorf("ip addr show dev %s: %w", name, err)
		}
		var static []netip.Prefix
		for _, a := range addrs {
			if a.Global && !a.Dynamic && !a.Prefix.Addr().IsLinkLocalUnicast() {
				static = append(static, a.Prefix)
			}
		}
		sortPrefixes(static)
		it := schema.Interface{Name: name, State: stateWord(l.AdminUp), Addresses: []string{}}
		if l.MTU > 0 {
			mtu := l.MTU
			it.MTU = &mtu
		}
		for _, a := range static {
			it.Addresses = append(it.Addresses, a.String())
		}
		spec.Interfaces = append(spec.Interfaces, it)
	}
	return nil
}
