package host

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Netlink is Net over a real netlink handle (vishvananda/netlink).
type Netlink struct {
	h *netlink.Handle
}

var _ Net = (*Netlink)(nil)

// NewNetlink wraps a handle; nil means the current network namespace.
func NewNetlink(h *netlink.Handle) *Netlink {
	if h == nil {
		h = &netlink.Handle{}
	}
	return &Netlink{h: h}
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
	as, err := n.h.AddrList(l, netlink.FAMILY_ALL)
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

func rdmaErr(err error) error {
	if errors.Is(err, unix.EPROTONOSUPPORT) {
		return ErrNoRDMA
	}
	return err
}

// RdmaLinkList implements Net: the rxe devices and the netdev each is bound to.
func (n *Netlink) RdmaLinkList() ([]RdmaLink, error) {
	ls, err := n.h.RdmaLinkList()
	if err != nil {
		return nil, rdmaErr(err)
	}
	var out []RdmaLink
	for _, l := range ls {
		// The netdev of a software link is reported by the "parent" sysfs
		// file; netlink's device list does not carry it.
		out = append(out, RdmaLink{Name: l.Attrs.Name})
	}
	return out, nil
}

// RdmaLinkAdd implements Net.
func (n *Netlink) RdmaLinkAdd(name, netdev string) error {
	return rdmaErr(n.h.RdmaLinkAdd(name, "rxe", netdev))
}

// RdmaLinkDel implements Net.
func (n *Netlink) RdmaLinkDel(name string) error {
	return rdmaErr(n.h.RdmaLinkDel(name))
}

type netIPNet = net.IPNet

func cidrMask(ones, bits int) net.IPMask { return net.CIDRMask(ones, bits) }
