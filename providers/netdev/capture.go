package netdev

import (
	"net/netip"
	"slices"
	"sort"

	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.TypedCapturer[*Observed] = (*Provider)(nil)

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

// showNetdevs are CaptureNetdevs and the netdevs show is asked for
// besides (a rollback journal records every interface its plan touches).
func showNetdevs(req *plan.Request) []string {
	names := CaptureNetdevs(req)
	for _, n := range req.Capture.Netdevs {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// CaptureFrom implements plan.TypedCapturer: for each of CaptureNetdevs
// (and the netdevs show is asked for) that exists, its administrative
// state, MTU and static global addresses (an empty list when it has none:
// "no static addresses" is part of a golden config). Dynamic (DHCP,
// SLAAC) and link-local addresses are the kernel's or a client's, never
// captured. An offline tree (--root), whose sysfs has no addresses, has
// nothing captured.
//
// Equivalent to: ip link show NAME; ip addr show dev NAME
func (p *Provider) CaptureFrom(obs *Observed, req *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	if obs == nil || obs.NoAddrs {
		return nil
	}
	for _, name := range showNetdevs(req) {
		ifc := obs.Ifaces[name]
		if ifc == nil {
			continue
		}
		var static []netip.Prefix
		for _, a := range ifc.Addrs {
			if a.Global && !a.Dynamic && !a.Prefix.Addr().IsLinkLocalUnicast() {
				static = append(static, a.Prefix)
			}
		}
		sortPrefixes(static)
		it := schema.Interface{Name: name, State: stateWord(ifc.Link.AdminUp), Addresses: []string{}}
		if ifc.Link.MTU > 0 {
			mtu := ifc.Link.MTU
			it.MTU = &mtu
		}
		for _, a := range static {
			it.Addresses = append(it.Addresses, a.String())
		}
		spec.Interfaces = append(spec.Interfaces, it)
	}
	return nil
}
