package host

import (
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// RuleList implements Router: the IPv4 rules, with every selector
// rdmaform does not make summed up in Other.
func (n *Netlink) RuleList() ([]Rule, error) {
	rs, err := redump(func() ([]netlink.Rule, error) { return n.h.RuleList(netlink.FAMILY_V4) })
	if err != nil {
		return nil, err
	}
	out := make([]Rule, 0, len(rs))
	for _, r := range rs {
		o := Rule{Priority: r.Priority, Table: r.Table}
		if r.Src != nil {
			if p, ok := prefixOf(r.Src); ok {
				o.Src = p
			}
		}
		var other []string
		if r.Dst != nil {
			other = append(other, "to "+r.Dst.String())
		}
		if r.IifName != "" {
			other = append(other, "iif "+r.IifName)
		}
		if r.OifName != "" {
			other = append(other, "oif "+r.OifName)
		}
		if r.Mark != 0 || r.Mask != nil {
			other = append(other, fmt.Sprintf("fwmark %#x", r.Mark))
		}
		if r.Invert {
			other = append(other, "not")
		}
		if r.Tos != 0 {
			other = append(other, fmt.Sprintf("tos %#x", r.Tos))
		}
		if r.Goto > 0 {
			other = append(other, fmt.Sprintf("goto %d", r.Goto))
		}
		if r.IPProto != 0 || r.Dport != nil || r.Sport != nil || r.UIDRange != nil || r.TunID != 0 {
			other = append(other, "(more selectors)")
		}
		if r.SuppressPrefixlen >= 0 || r.SuppressIfgroup >= 0 {
			other = append(other, "suppress")
		}
		o.Other = strings.Join(other, " ")
		out = append(out, o)
	}
	return out, nil
}

func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	ip, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(ip.Unmap(), ones), true
}

func toNetlinkRule(r Rule) (*netlink.Rule, error) {
	if r.Other != "" {
		return nil, fmt.Errorf("rule %s: only rules of a source and a table are made here", r)
	}
	nr := netlink.NewRule()
	nr.Family = netlink.FAMILY_V4
	nr.Priority = r.Priority
	nr.Table = r.Table
	if r.Src.IsValid() {
		if !r.Src.Addr().Is4() {
			return nil, fmt.Errorf("rule %s: not IPv4", r)
		}
		nr.Src = &net.IPNet{IP: r.Src.Addr().AsSlice(), Mask: net.CIDRMask(r.Src.Bits(), 32)}
	}
	return nr, nil
}

// RuleAdd implements Router.
func (n *Netlink) RuleAdd(r Rule) error {
	nr, err := toNetlinkRule(r)
	if err != nil {
		return err
	}
	return n.h.RuleAdd(nr)
}

// RuleDel implements Router.
func (n *Netlink) RuleDel(r Rule) error {
	nr, err := toNetlinkRule(r)
	if err != nil {
		return err
	}
	return n.h.RuleDel(nr)
}

// RouteList implements Router.
func (n *Netlink) RouteList(table int) ([]Route, error) {
	rs, err := redump(func() ([]netlink.Route, error) {
		return n.h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: table}, netlink.RT_FILTER_TABLE)
	})
	if err != nil {
		return nil, err
	}
	var out []Route
	for _, r := range rs {
		if r.Type != unix.RTN_UNICAST || r.Table != table {
			continue
		}
		o := Route{Table: r.Table, Dst: netip.PrefixFrom(netip.IPv4Unspecified(), 0)}
		if r.Dst != nil {
			if p, ok := prefixOf(r.Dst); ok {
				o.Dst = p
			}
		}
		if a, ok := netip.AddrFromSlice(r.Src); ok {
			o.Src = a.Unmap()
		}
		if a, ok := netip.AddrFromSlice(r.Gw); ok {
			o.Gw = a.Unmap()
		}
		if r.LinkIndex > 0 {
			if l, err := n.h.LinkByIndex(r.LinkIndex); err == nil {
				o.Dev = l.Attrs().Name
			} else {
				o.Dev = fmt.Sprintf("if%d", r.LinkIndex)
			}
		}
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

func (n *Netlink) toNetlinkRoute(r Route) (*netlink.Route, error) {
	l, err := n.link(r.Dev)
	if err != nil {
		return nil, err
	}
	if !r.Dst.Addr().Is4() {
		return nil, fmt.Errorf("route %s: not IPv4", r)
	}
	nr := &netlink.Route{
		LinkIndex: l.Attrs().Index,
		Table:     r.Table,
		Dst:       &net.IPNet{IP: r.Dst.Addr().AsSlice(), Mask: net.CIDRMask(r.Dst.Bits(), 32)},
		Scope:     netlink.SCOPE_LINK,
		Protocol:  unix.RTPROT_STATIC,
		Family:    netlink.FAMILY_V4,
	}
	if r.Src.IsValid() {
		nr.Src = r.Src.AsSlice()
	}
	if r.Gw.IsValid() {
		nr.Gw = r.Gw.AsSlice()
		nr.Scope = netlink.SCOPE_UNIVERSE
	}
	return nr, nil
}

// RouteAdd implements Router.
func (n *Netlink) RouteAdd(r Route) error {
	nr, err := n.toNetlinkRoute(r)
	if err != nil {
		return err
	}
	return n.h.RouteAdd(nr)
}

// RouteDel implements Router.
func (n *Netlink) RouteDel(r Route) error {
	nr, err := n.toNetlinkRoute(r)
	if err != nil {
		return err
	}
	return n.h.RouteDel(nr)
}

// RuleList implements Router: the rules are not in the tree.
func (n *OfflineNet) RuleList() ([]Rule, error) { return nil, &OfflineError{Op: "ip -4 rule show"} }

// RuleAdd implements Router: refused.
func (n *OfflineNet) RuleAdd(r Rule) error {
	return &OfflineError{Op: fmt.Sprintf("ip -4 rule add priority %d from %s lookup %d", r.Priority, r.Src, r.Table)}
}

// RuleDel implements Router: refused.
func (n *OfflineNet) RuleDel(r Rule) error {
	return &OfflineError{Op: fmt.Sprintf("ip -4 rule del priority %d from %s lookup %d", r.Priority, r.Src, r.Table)}
}

// RouteList implements Router: the routes are not in the tree.
func (n *OfflineNet) RouteList(table int) ([]Route, error) {
	return nil, &OfflineError{Op: fmt.Sprintf("ip -4 route show table %d", table)}
}

// RouteAdd implements Router: refused.
func (n *OfflineNet) RouteAdd(r Route) error {
	return &OfflineError{Op: fmt.Sprintf("ip route add %s table %d", r, r.Table)}
}

// RouteDel implements Router: refused.
func (n *OfflineNet) RouteDel(r Route) error {
	return &OfflineError{Op: fmt.Sprintf("ip route del %s table %d", r, r.Table)}
}
