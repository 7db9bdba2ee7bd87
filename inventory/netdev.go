package inventory

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/host"
)

// ARPHRDInfiniband is /sys/class/net/X/type of an IPoIB netdev (1 is
// Ethernet).
const ARPHRDInfiniband = 32

// Netdev is what sysfs says of one network interface.
type Netdev struct {
	Name string
	Type int    // type: 32 for IPoIB, 1 for Ethernet
	MTU  int    // mtu
	Mode string // mode: datagram or connected ("" when not IPoIB)
	// Flags is the first byte of address: on IPoIB, 0x80 means the
	// interface can run connected mode; enhanced IPoIB (ConnectX-4 and
	// later) has 0x00. -1 when unreadable.
	Flags int
}

// Enhanced reports whether the IPoIB interface runs enhanced IPoIB
// (datagram only): its hardware address lacks the connected-mode flag.
func (n Netdev) Enhanced() bool {
	return n.Type == ARPHRDInfiniband && n.Flags >= 0 && n.Flags&0x80 == 0
}

// ReadNetdev reads a netdev's type, MTU and, for IPoIB, its mode and
// address flags; false when there is no such netdev.
//
// Equivalent to: cat /sys/class/net/NAME/{type,mtu,mode,address}
func ReadNetdev(f host.FS, name string) (Netdev, bool, error) {
	base := path.Join(ClassNet, name)
	if !host.Exists(f, base) {
		return Netdev{}, false, nil
	}
	n := Netdev{Name: name, Flags: -1}
	num := func(attr string) (int, error) {
		s, err := host.ReadAttr(f, path.Join(base, attr))
		if err != nil {
			return 0, fmt.Errorf("reading %s of %s: %w", attr, name, err)
		}
		v, err := strconv.Atoi(s)
		if err != nil {
			return 0, fmt.Errorf("%s/%s: %q is not a number", base, attr, s)
		}
		return v, nil
	}
	var err error
	if n.Type, err = num("type"); err != nil {
		return n, false, err
	}
	if n.MTU, err = num("mtu"); err != nil {
		return n, false, err
	}
	if n.Type != ARPHRDInfiniband {
		return n, true, nil
	}
	if m, err := host.ReadAttr(f, path.Join(base, "mode")); err == nil {
		n.Mode = m
	}
	if a, err := host.ReadAttr(f, path.Join(base, "address")); err == nil {
		first, _, _ := strings.Cut(a, ":")
		if v, err := strconv.ParseUint(first, 16, 8); err == nil && len(first) == 2 {
			n.Flags = int(v)
		}
	}
	return n, true, nil
}
