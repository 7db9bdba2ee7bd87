package host

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// LinkSetName implements Net. Equivalent to: ip link set OLD name NEW
func (n *Netlink) LinkSetName(old, name string) error {
	l, err := n.link(old)
	if err != nil {
		return err
	}
	if err := n.h.LinkSetName(l, name); err != nil {
		return fmt.Errorf("ip link set %s name %s: %w", old, name, err)
	}
	return nil
}

// RdmaDevSetName implements Net. Equivalent to: rdma dev set OLD name NEW
// A missing device is ENODEV.
func (n *Netlink) RdmaDevSetName(old, name string) error {
	ls, err := redump(n.h.RdmaLinkList)
	if err != nil {
		return rdmaErr(err)
	}
	for _, l := range ls {
		if l.Attrs.Name == old {
			if err := n.h.RdmaLinkSetName(l, name); err != nil {
				return fmt.Errorf("rdma dev set %s name %s: %w", old, name, rdmaErr(err))
			}
			return nil
		}
	}
	return fmt.Errorf("rdma dev set %s name %s: %w", old, name, unix.ENODEV)
}

// RdmaNetnsMode implements Net. Equivalent to: rdma system show netns
func (n *Netlink) RdmaNetnsMode() (string, error) {
	m, err := n.h.RdmaSystemGetNetnsMode()
	if err != nil {
		return "", fmt.Errorf("rdma system show netns: %w", rdmaErr(err))
	}
	return m, nil
}

// RdmaSetNetnsMode implements Net. Equivalent to: rdma system set netns MODE
func (n *Netlink) RdmaSetNetnsMode(mode string) error {
	if mode != NetnsShared && mode != NetnsExclusive {
		return fmt.Errorf("rdma system set netns %q: the mode is shared or exclusive", mode)
	}
	if err := n.h.RdmaSystemSetNetnsMode(mode); err != nil {
		return fmt.Errorf("rdma system set netns %s: %w", mode, rdmaErr(err))
	}
	return nil
}

// The RDMA subsystem's network namespace modes, as `rdma system` spells
// them.
const (
	NetnsShared    = "shared"
	NetnsExclusive = "exclusive"
)

// LinkSetName implements Net: an offline tree cannot rename.
func (n *OfflineNet) LinkSetName(old, name string) error {
	return &OfflineError{Op: "ip link set " + old + " name " + name}
}

// RdmaDevSetName implements Net: an offline tree cannot rename.
func (n *OfflineNet) RdmaDevSetName(old, name string) error {
	return &OfflineError{Op: "rdma dev set " + old + " name " + name}
}

// RdmaNetnsMode implements Net from ib_core's netns_mode parameter
// (Y shared, N exclusive; the kernel keeps it current with rdma system set).
//
// Equivalent to: cat /sys/module/ib_core/parameters/netns_mode
func (n *OfflineNet) RdmaNetnsMode() (string, error) {
	v, err := ReadAttr(n.FS, "/sys/module/ib_core/parameters/netns_mode")
	if err != nil {
		return "", fmt.Errorf("reading ib_core's netns_mode: %w", ErrNoRDMA)
	}
	switch v {
	case "Y", "1":
		return NetnsShared, nil
	case "N", "0":
		return NetnsExclusive, nil
	}
	return "", fmt.Errorf("ib_core's netns_mode reads %q, not Y or N", v)
}

// RdmaSetNetnsMode implements Net: an offline tree cannot switch.
func (n *OfflineNet) RdmaSetNetnsMode(mode string) error {
	return &OfflineError{Op: "rdma system set netns " + mode}
}
