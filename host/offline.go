package host

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"path"
	"sort"
	"strconv"
	"strings"
)

// OfflineError is an operation an offline tree (--root) cannot carry out:
// there is no running kernel to ask or to change. It matches ErrNoNetlink.
type OfflineError struct {
	// Op is the operation, in the words of its command line.
	Op string
}

// Error is ErrNoNetlink's text: callers name the operation, as they do
// for netlink's own errors.
func (e *OfflineError) Error() string { return ErrNoNetlink.Error() }

// Is makes errors.Is(err, ErrNoNetlink) hold.
func (e *OfflineError) Is(target error) bool { return target == ErrNoNetlink }

// OfflineNet is the network door of a tree that is not a running host
// (--root): it answers what sysfs in the tree shows (links, RDMA links and
// the netdevs software links are bound to) and refuses every change, and
// every read sysfs cannot answer (addresses), with an *OfflineError.
type OfflineNet struct {
	FS FS
}

var _ Net = (*OfflineNet)(nil)

const (
	classNet         = "/sys/class/net"
	classInfiniband  = "/sys/class/infiniband"
	arphrdInfiniband = "32"
	iffUp            = 0x1
)

// LinkByName implements Net from /sys/class/net/NAME: ifindex, mtu, flags,
// operstate, address, and the kind as far as sysfs tells it (ipoib for
// ARPHRD_INFINIBAND, device for a netdev with a device link).
//
// Equivalent to: cat /sys/class/net/NAME/{ifindex,mtu,flags,operstate,address,type}
func (n *OfflineNet) LinkByName(name string) (Link, error) {
	if name == "" || name == "." || name == ".." || len(name) > 15 || strings.ContainsAny(name, "/\x00 ") {
		return Link{}, fmt.Errorf("%q is not a netdev name", name)
	}
	dir := path.Join(classNet, name)
	if !Exists(n.FS, dir) {
		return Link{}, fmt.Errorf("%s: %w", name, ErrLinkNotFound)
	}
	attr := func(a string) string {
		s, _ := ReadAttr(n.FS, path.Join(dir, a))
		return s
	}
	l := Link{Name: name, OperState: attr("operstate"), HWAddr: attr("address")}
	l.Index, _ = strconv.Atoi(attr("ifindex"))
	l.MTU, _ = strconv.Atoi(attr("mtu"))
	if f, err := strconv.ParseUint(attr("flags"), 0, 32); err == nil {
		l.AdminUp = f&iffUp != 0
	}
	switch {
	case attr("type") == arphrdInfiniband:
		l.Type = "ipoib"
	case Exists(n.FS, path.Join(dir, "device")):
		l.Type = "device"
	}
	return l, nil
}

// RdmaLinkList implements Net from /sys/class/infiniband: every RDMA
// device, with the netdev a software link names in its parent file.
//
// Equivalent to: ls /sys/class/infiniband; cat /sys/class/infiniband/*/parent
func (n *OfflineNet) RdmaLinkList() ([]RdmaLink, error) {
	ents, err := n.FS.ReadDir(classInfiniband)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", classInfiniband, ErrNoRDMA)
	}
	if err != nil {
		return nil, err
	}
	var out []RdmaLink
	for _, e := range ents {
		parent, _ := ReadAttr(n.FS, path.Join(classInfiniband, e.Name(), "parent"))
		out = append(out, RdmaLink{Name: e.Name(), Netdev: parent})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// AddrList implements Net: addresses are not in sysfs.
func (n *OfflineNet) AddrList(name string) ([]Addr, error) {
	return nil, &OfflineError{Op: "ip addr show dev " + name}
}

// LinkSetUp implements Net: refused.
func (n *OfflineNet) LinkSetUp(name string, up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	return &OfflineError{Op: "ip link set " + name + " " + state}
}

// LinkSetMTU implements Net: refused.
func (n *OfflineNet) LinkSetMTU(name string, mtu int) error {
	return &OfflineError{Op: fmt.Sprintf("ip link set %s mtu %d", name, mtu)}
}

// AddrAdd implements Net: refused.
func (n *OfflineNet) AddrAdd(name string, p netip.Prefix) error {
	return &OfflineError{Op: fmt.Sprintf("ip addr add %s dev %s", p, name)}
}

// AddrDel implements Net: refused.
func (n *OfflineNet) AddrDel(name string, p netip.Prefix) error {
	return &OfflineError{Op: fmt.Sprintf("ip addr del %s dev %s", p, name)}
}

// RdmaLinkAdd implements Net: refused.
func (n *OfflineNet) RdmaLinkAdd(name, netdev string) error {
	return &OfflineError{Op: fmt.Sprintf("rdma link add %s type rxe netdev %s", name, netdev)}
}

// RdmaLinkDel implements Net: refused.
func (n *OfflineNet) RdmaLinkDel(name string) error {
	return &OfflineError{Op: "rdma link delete " + name}
}

// LinkSetVF implements Net: refused.
func (n *OfflineNet) LinkSetVF(pf string, vf int, _ VFConfig) error {
	return &OfflineError{Op: fmt.Sprintf("ip link set dev %s vf %d", pf, vf)}
}
