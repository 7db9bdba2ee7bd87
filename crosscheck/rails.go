package crosscheck

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/schema"
)

// RailFinding is what SharedSubnets says of one interface: a path in
// the spec and a message; Warning when the interface has half of what
// a rail sharing a subnet needs.
type RailFinding struct {
	Path    string
	Message string
	Warning bool
}

// ARP values a rail sharing a subnet needs (Documentation/networking/
// ip-sysctl.rst): arp_ignore 1 "reply only if the target IP address is
// local address configured on the incoming interface" (2 adds "and both
// with the sender's IP address are part from same subnet"); arp_announce
// 2 "always use the best local address for this target" as the source
// of ARP requests, never another interface's address.
func arpSet(in *schema.SysctlInterface) bool {
	return in != nil && in.ArpIgnore != nil && (*in.ArpIgnore == 1 || *in.ArpIgnore == 2) &&
		in.ArpAnnounce != nil && *in.ArpAnnounce == 2
}

// SharedSubnets finds the interfaces of one spec whose IPv4 addresses
// share a subnet with another interface's (rails of a multi-rail host)
// and that lack the settings such rails need: the ARP settings in
// sysctl.interfaces and a table of their own in rails. Without both,
// the kernel answers ARP for any rail's address on every rail of the
// subnet and sends the traffic of every address by the main table's one
// route of the subnet: rdma_cm's connections from the other rails leave
// by the wrong port. Neither set is an error; one of the two a warning.
// Findings are in spec order.
func SharedSubnets(spec *schema.Spec) []RailFinding {
	type member struct {
		iface int
		addr  int
	}
	bySubnet := map[netip.Prefix][]member{}
	var subnets []netip.Prefix
	for i, it := range spec.Interfaces {
		for j, a := range it.Addresses {
			p, err := netip.ParsePrefix(a)
			if err != nil || !p.Addr().Is4() || p.Bits() == 32 {
				continue
			}
			s := p.Masked()
			if bySubnet[s] == nil {
				subnets = append(subnets, s)
			}
			bySubnet[s] = append(bySubnet[s], member{i, j})
		}
	}
	arp := map[string]*schema.SysctlInterface{}
	if spec.Sysctl != nil {
		for k := range spec.Sysctl.Interfaces {
			arp[spec.Sysctl.Interfaces[k].Name] = &spec.Sysctl.Interfaces[k]
		}
	}
	table := map[string]bool{}
	for _, r := range spec.Rails {
		table[r.Interface] = true
	}
	var out []RailFinding
	for _, s := range subnets {
		ms := bySubnet[s]
		names := map[string]bool{}
		for _, m := range ms {
			names[spec.Interfaces[m.iface].Name] = true
		}
		if len(names) < 2 {
			continue
		}
		for _, m := range ms {
			name := spec.Interfaces[m.iface].Name
			var others []string
			for n := range names {
				if n != name {
					others = append(others, n)
				}
			}
			sort.Strings(others)
			with := fmt.Sprintf("%s shares %s with %s", name, s, strings.Join(others, ", "))
			path := fmt.Sprintf("%s.addresses[%d]", schema.Path("interfaces", m.iface), m.addr)
			hasARP, hasTable := arpSet(arp[name]), table[name]
			switch {
			case !hasARP && !hasTable:
				out = append(out, RailFinding{Path: path, Message: with + ", with neither the ARP settings (sysctl.interfaces: arp_ignore 1, arp_announce 2) nor a routing table of its own (rails:): " +
					"the kernel answers ARP for every rail's address on each of them, and sends the traffic of every address by the main table's one route of the subnet, so rdma_cm connections of the other rails leave by the wrong port"})
			case !hasTable:
				out = append(out, RailFinding{Warning: true, Path: path, Message: with + " and has the ARP settings but no routing table of its own (rails:): traffic from its address leaves by the main table's route of the subnet, which may be another rail's"})
			case !hasARP:
				out = append(out, RailFinding{Warning: true, Path: path, Message: with + " and has a routing table of its own but not the ARP settings (sysctl.interfaces: arp_ignore 1, arp_announce 2): another rail may answer ARP for its address, and peers then send its traffic to the wrong port"})
			}
		}
	}
	return out
}

// rails reports, per host, the rails of a shared subnet that lack their
// ARP settings or their routing table.
func (l *linter) rails() {
	for _, h := range l.hosts {
		for _, f := range SharedSubnets(h.Spec) {
			if f.Warning {
				l.warn(h, f.Path, "%s", f.Message)
			} else {
				l.add(h, f.Path, "%s", f.Message)
			}
		}
	}
}
