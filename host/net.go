package host

import (
	"errors"
	"fmt"
	"net/netip"
)

// ErrLinkNotFound is returned for a netdev that does not exist.
var ErrLinkNotFound = errors.New("no such network interface")

// ErrNoRDMA is returned when the kernel has no RDMA netlink (ib_core or the
// rdma_rxe module is not loaded): RDMA netlink answers EPROTONOSUPPORT.
// Errors wrapping it from a real kernel also wrap the errno.
var ErrNoRDMA = errors.New("the kernel has no RDMA netlink support (ib_core/rdma_rxe not loaded; install the kernel's rdma_rxe module, e.g. linux-modules-extra, and run modprobe rdma_rxe)")

// ErrNoNetlink is returned by hosts without netlink (a --root tree).
var ErrNoNetlink = errors.New("netlink is not available on this host (--root)")

// Link is one network interface as netlink reports it.
type Link struct {
	Name      string
	Index     int
	MTU       int
	AdminUp   bool   // IFF_UP
	OperState string // "up", "down", "lowerlayerdown", ...
	Type      string // "veth", "ipoib", "device", ...
	HWAddr    string
}

// Addr is one address on an interface.
type Addr struct {
	Prefix netip.Prefix
	// Global is true for scope global; link-local and host addresses are not.
	Global bool
	// Dynamic is true for addresses with a finite lifetime (DHCP, SLAAC) and
	// addresses the kernel made: rdmaform never removes those.
	Dynamic bool
}

// RdmaLink is one RDMA device as `rdma link show` lists it.
type RdmaLink struct {
	Name string
	// Netdev is the netdev a software link (rxe) is bound to, from
	// /sys/class/infiniband/NAME/parent; "" for hardware devices, whose
	// netdevs the inventory maps.
	Netdev string
}

// Software reports whether the link is a software (rxe) link.
func (l RdmaLink) Software() bool { return l.Netdev != "" }

// Net is kernel networking through netlink.
type Net interface {
	// LinkByName is equivalent to: ip link show NAME
	LinkByName(name string) (Link, error)
	// LinkSetUp is equivalent to: ip link set NAME up (or down)
	LinkSetUp(name string, up bool) error
	// LinkSetMTU is equivalent to: ip link set NAME mtu MTU
	LinkSetMTU(name string, mtu int) error
	// AddrList is equivalent to: ip addr show dev NAME
	AddrList(name string) ([]Addr, error)
	// AddrAdd is equivalent to: ip addr add PREFIX dev NAME
	AddrAdd(name string, p netip.Prefix) error
	// AddrDel is equivalent to: ip addr del PREFIX dev NAME
	AddrDel(name string, p netip.Prefix) error
	// RdmaLinkList is equivalent to: rdma link show, with the netdev of
	// each software link. Sorted by name. ErrNoRDMA without RDMA netlink.
	RdmaLinkList() ([]RdmaLink, error)
	// RdmaLinkAdd is equivalent to: rdma link add NAME type rxe netdev NETDEV
	RdmaLinkAdd(name, netdev string) error
	// RdmaLinkDel is equivalent to: rdma link delete NAME
	RdmaLinkDel(name string) error
	// LinkSetVF sets what c gives of virtual function vf of the physical
	// function's netdev pf, one netlink request per setting. Equivalent
	// to: ip link set dev PF vf N [node_guid G] [port_guid G] [mac M]
	// [trust on|off] [spoofchk on|off] [state auto|enable|disable]
	LinkSetVF(pf string, vf int, c VFConfig) error
	// LinkSetName is equivalent to: ip link set OLD name NEW (the kernel
	// refuses it with EBUSY while the netdev is up).
	LinkSetName(old, name string) error
	// RdmaDevSetName is equivalent to: rdma dev set OLD name NEW
	RdmaDevSetName(old, name string) error
	// RdmaNetnsMode is equivalent to: rdma system show netns; it answers
	// "shared" or "exclusive". ErrNoRDMA without RDMA netlink.
	RdmaNetnsMode() (string, error)
	// RdmaSetNetnsMode is equivalent to: rdma system set netns MODE. The
	// kernel refuses a switch with EBUSY while a network namespace other
	// than the initial one exists.
	RdmaSetNetnsMode(mode string) error
	// Router: policy-routing rules and the routes of their tables.
	Router
}

// VFConfig is what LinkSetVF sets; nil and "" leave a setting alone.
// GUIDs and MACs are colon-separated hex (8 and 6 bytes).
type VFConfig struct {
	NodeGUID, PortGUID string
	MAC                string
	Trust, Spoofchk    *bool
	State              string // auto, enable, disable
}

// Rule is one IPv4 policy-routing rule (ip rule), as far as rdmaform
// compares rules: its priority, its source selector and the table it looks
// up.
type Rule struct {
	Priority int
	// Table is the table the rule looks up (1-4294967295).
	Table int
	// Src is the "from" selector; the zero Prefix is "from all".
	Src netip.Prefix
	// Other describes the rule's other selectors and actions (to, iif,
	// oif, fwmark, not, goto, a type other than lookup), "" for none: a
	// rule with any is never one rdmaform makes.
	Other string
}

// String is the rule as ip rule prints it.
func (r Rule) String() string {
	from := "all"
	if r.Src.IsValid() {
		from = r.Src.String()
		if r.Src.Bits() == r.Src.Addr().BitLen() {
			from = r.Src.Addr().String()
		}
	}
	s := fmt.Sprintf("%d: from %s", r.Priority, from)
	if r.Other != "" {
		s += " " + r.Other
	}
	return s + fmt.Sprintf(" lookup %d", r.Table)
}

// Route is one IPv4 unicast route of a table (ip route show table N).
type Route struct {
	Table int
	Dst   netip.Prefix
	// Dev is the netdev the route leaves through.
	Dev string
	// Src is the preferred source address; the zero Addr is none.
	Src netip.Addr
	// Gw is the gateway; the zero Addr is a directly connected route
	// (scope link).
	Gw netip.Addr
}

// String is the route as ip route prints it.
func (r Route) String() string {
	s := r.Dst.String()
	if r.Gw.IsValid() {
		s += " via " + r.Gw.String()
	}
	s += " dev " + r.Dev
	if r.Src.IsValid() {
		s += " src " + r.Src.String()
	}
	return s
}

// Router is policy routing through netlink: the rules and the routes of
// tables other than main (multi-rail hosts whose rails share a subnet).
type Router interface {
	// RuleList lists the IPv4 rules. Equivalent to: ip -4 rule show
	RuleList() ([]Rule, error)
	// RuleAdd is equivalent to: ip -4 rule add priority P from SRC lookup TABLE
	RuleAdd(r Rule) error
	// RuleDel is equivalent to: ip -4 rule del priority P from SRC lookup TABLE
	RuleDel(r Rule) error
	// RouteList lists the IPv4 unicast routes of one table. Equivalent
	// to: ip -4 route show table TABLE
	RouteList(table int) ([]Route, error)
	// RouteAdd is equivalent to: ip route add DST [via GW] dev DEV
	// [src SRC] table TABLE (scope link without a gateway)
	RouteAdd(r Route) error
	// RouteDel is equivalent to: ip route del DST [via GW] dev DEV table TABLE
	RouteDel(r Route) error
}
