package netdev

import (
	"net/netip"

	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

var _ plan.TypedCapturer[*Observed] = (*Provider)(nil)

// CaptureNetdevs are the netdevs show describes (plan.Request's
// RDMANetdevs): those of RDMA ports and the parents of Soft-RoCE links.
func CaptureNetdevs(req *plan.Request) []string { return req.RDMANetdevs() }

// showNetdevs are CaptureNetdevs and the netdevs show is asked for
// besides (a rollback journal records every interface its plan touches).
func showNetdevs(req *plan.Request) []string { return req.ShowNetdevs() }

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
