package host

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// dumpTries bounds how often a dump is read when the kernel says it was
// interrupted (NLM_F_DUMP_INTR: the table changed while it was read, as
// when an address is added or IPv6 configures one just then).
const dumpTries = 10

// redump reads a netlink dump until the kernel did not interrupt it, at
// most dumpTries times; the last error stands after that.
// vishvananda/netlink returns such a dump's partial results with
// netlink.ErrDumpInterrupted.
func redump[T any](dump func() (T, error)) (T, error) {
	var v T
	var err error
	for range dumpTries {
		if v, err = dump(); !errors.Is(err, netlink.ErrDumpInterrupted) {
			break
		}
	}
	return v, err
}

// Netlink is Net over a real netlink handle (vishvananda/netlink).
type Netlink struct {
	h *netlink.Handle
	// sysfs is where /sys/class/infiniband/NAME/parent is read; nil means
	// the live /sys.
	sysfs FS
}

var _ Net = (*Netlink)(nil)

// NewNetlink wraps a handle; nil means the current network namespace.
// Software links' netdevs are read from the live /sys.
func NewNetlink(h *netlink.Handle) *Netlink {
	return NewNetlinkSysfs(h, nil)
}

// NewNetlinkSysfs wraps a handle and reads the netdev of software RDMA
// links (the rxe "parent" attribute) through sysfs; nil means the live /sys.
func NewNetlinkSysfs(h *netlink.Handle, sysfs FS) *Netlink {
	if h == nil {
		h = &netlink.Handle{}
	}
	return &Netlink{h: h, sysfs: sysfs}
}

func (n *Netlink) link(name string) (netlink.Link, error) {
	l, err := n.h.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) || errors.Is(err, unix.ENODEV) {
			return nil, fmt.Errorf("%s: %w", name, ErrLinkNotFound)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return l, nil
}

// LinkByName implements Net.
func (n *Netlink) LinkByName(name string) (Link, error) {
	l, err := n.link(name)
	if err != nil {
		return Link{}, err
	}
	a := l.Attrs()
	return Link{
		Name: a.Name, Index: a.Index, MTU: a.MTU,
		AdminUp:   a.Flags&unix.IFF_UP != 0,
		OperState: a.OperState.String(),
		Type:      l.Type(),
		HWAddr:    a.HardwareAddr.String(),
	}, nil
}

// LinkSetUp implements Net.
func (n *Netlink) LinkSetUp(name string, up bool) error {
	l, err := n.link(name)
	if err != nil {
		return err
	}
	if up {
		return n.h.LinkSetUp(l)
	}
	return n.h.LinkSetDown(l)
}

// LinkSetMTU implements Net.
func (n *Netlink) LinkSetMTU(name string, mtu int) error {
	l, err := n.link(name)
	if err != nil {
		return err
	}
	return n.h.LinkSetMTU(l, mtu)
}

// AddrList implements Net.
func (n *Netlink) AddrList(name string) ([]Addr, error) {
	l, err := n.link(name)
	if err != nil {
		return nil, err
	}
	as, err := redump(func() ([]netlink.Addr, error) { return n.h.AddrList(l, netlink.FAMILY_ALL) })
	if err != nil {
		return nil, err
	}
	out := make([]Addr, 0, len(as))
	for _, a := range as {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			continue
		}
		ones, _ := a.Mask.Size()
		out = append(out, Addr{
			Prefix:  netip.PrefixFrom(ip.Unmap(), ones),
			Global:  a.Scope == unix.RT_SCOPE_UNIVERSE,
			Dynamic: a.Flags&unix.IFA_F_PERMANENT == 0,
		})
	}
	return out, nil
}

func toNetlinkAddr(p netip.Prefix) *netlink.Addr {
	ip := p.Addr()
	bits := 32
	if ip.Is6() {
		bits = 128
	}
	return &netlink.Addr{IPNet: &netIPNet{IP: ip.AsSlice(), Mask: cidrMask(p.Bits(), bits)}}
}

// AddrAdd implements Net.
func (n *Netlink) AddrAdd(name string, p netip.Prefix) error {
	l, err := n.link(name)
	if err != nil {
		return err
	}
	return n.h.AddrAdd(l, toNetlinkAddr(p))
}

// AddrDel implements Net.
func (n *Netlink) AddrDel(name string, p netip.Prefix) error {
	l, err := n.link(name)
	if err != nil {
		return err
	}
	return n.h.AddrDel(l, toNetlinkAddr(p))
}

// rdmaErr maps the kernel's answer when no RDMA netlink family is
// registered (no ib_core): socket(AF_NETLINK, NETLINK_RDMA) fails with
// EPROTONOSUPPORT. The errno stays wrapped for errors.Is.
func rdmaErr(err error) error {
	if errors.Is(err, unix.EPROTONOSUPPORT) {
		return fmt.Errorf("%w: %w", ErrNoRDMA, err)
	}
	return err
}

func (n *Netlink) fs() (FS, error) {
	if n.sysfs != nil {
		return n.sysfs, nil
	}
	return NewRootFS("/")
}

// RdmaLinkList implements Net: every RDMA device, and for software links
// the netdev each is bound to.
//
// Equivalent to: rdma link show; cat /sys/class/infiniband/NAME/parent
func (n *Netlink) RdmaLinkList() ([]RdmaLink, error) {
	ls, err := redump(n.h.RdmaLinkList)
	if err != nil {
		return nil, rdmaErr(err)
	}
	fsys, err := n.fs()
	if err != nil {
		return nil, err
	}
	out := make([]RdmaLink, 0, len(ls))
	for _, l := range ls {
		// The netdev of a software link is the rxe-only "parent" sysfs
		// attribute; the netlink device message does not carry it. A
		// hardware device has no such file.
		parent, _ := ReadAttr(fsys, "/sys/class/infiniband/"+l.Attrs.Name+"/parent")
		out = append(out, RdmaLink{Name: l.Attrs.Name, Netdev: parent})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// RdmaLinkAdd implements Net. The kernel loads rdma_rxe on demand
// (request_module("rdma-link-rxe")).
//
// Equivalent to: rdma link add NAME type rxe netdev NETDEV
func (n *Netlink) RdmaLinkAdd(name, netdev string) error {
	return rdmaErr(n.h.RdmaLinkAdd(name, "rxe", netdev))
}

// RdmaLinkDel implements Net. Equivalent to: rdma link delete NAME
// A missing link is ENODEV, as the kernel answers for a missing index.
func (n *Netlink) RdmaLinkDel(name string) error {
	ls, err := redump(n.h.RdmaLinkList)
	if err != nil {
		return rdmaErr(err)
	}
	for _, l := range ls {
		if l.Attrs.Name == name {
			return rdmaErr(n.h.RdmaLinkDel(name))
		}
	}
	return fmt.Errorf("rdma link delete %s: %w", name, unix.ENODEV)
}

type netIPNet = net.IPNet

func cidrMask(ones, bits int) net.IPMask { return net.CIDRMask(ones, bits) }

// LinkSetVF implements Net. The GUIDs go first: an InfiniBand VF takes
// them only when its driver binds again, which the caller does.
func (n *Netlink) LinkSetVF(pf string, vf int, c VFConfig) error {
	l, err := n.link(pf)
	if err != nil {
		return err
	}
	hw := func(what, s string, size int) (net.HardwareAddr, error) {
		a, err := net.ParseMAC(s)
		if err != nil || len(a) != size {
			return nil, fmt.Errorf("%s %q is not %d colon-separated hex bytes", what, s, size)
		}
		return a, nil
	}
	wrap := func(what string, err error) error {
		if err != nil {
			return fmt.Errorf("ip link set dev %s vf %d %s: %w", pf, vf, what, err)
		}
		return nil
	}
	for _, g := range []struct {
		what, v string
		typ     int
	}{{"node_guid", c.NodeGUID, nl.IFLA_VF_IB_NODE_GUID}, {"port_guid", c.PortGUID, nl.IFLA_VF_IB_PORT_GUID}} {
		if g.v == "" {
			continue
		}
		a, err := hw(g.what, g.v, 8)
		if err != nil {
			return err
		}
		if err := wrap(g.what+" "+g.v, n.h.LinkSetVfGUID(l, vf, a, g.typ)); err != nil {
			return err
		}
	}
	if c.MAC != "" {
		a, err := hw("mac", c.MAC, 6)
		if err != nil {
			return err
		}
		if err := wrap("mac "+c.MAC, n.h.LinkSetVfHardwareAddr(l, vf, a)); err != nil {
			return err
		}
	}
	if c.Trust != nil {
		if err := wrap("trust "+onOff(*c.Trust), n.h.LinkSetVfTrust(l, vf, *c.Trust)); err != nil {
			return err
		}
	}
	if c.Spoofchk != nil {
		if err := wrap("spoofchk "+onOff(*c.Spoofchk), n.h.LinkSetVfSpoofchk(l, vf, *c.Spoofchk)); err != nil {
			return err
		}
	}
	if c.State != "" {
		st, ok := map[string]uint32{"auto": netlink.VF_LINK_STATE_AUTO, "enable": netlink.VF_LINK_STATE_ENABLE, "disable": netlink.VF_LINK_STATE_DISABLE}[c.State]
		if !ok {
			return fmt.Errorf("VF link state %q is not auto, enable or disable", c.State)
		}
		if err := wrap("state "+c.State, n.h.LinkSetVfState(l, vf, st)); err != nil {
			return err
		}
	}
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
