package inventory

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/host"
)

// PortOfNetdev returns the RDMA device and port a netdev belongs to, or
// nils.
func (inv *Inventory) PortOfNetdev(netdev string) (*Device, *Port) {
	if inv == nil {
		return nil, nil
	}
	for _, d := range inv.Devices {
		for _, p := range d.Ports {
			for _, n := range p.Netdevs {
				if n == netdev {
					return d, p
				}
			}
		}
	}
	return nil, nil
}

// ReadPKeys reads a port's P_Key table, leaving out empty slots and
// repeats, sorted. A slot that vanishes while being read is skipped.
//
// Equivalent to: cat /sys/class/infiniband/DEV/ports/N/pkeys/*
func ReadPKeys(f host.FS, dev string, port int) ([]int, error) {
	dir := path.Join(ClassInfiniband, dev, "ports", strconv.Itoa(port), "pkeys")
	entries, err := f.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the P_Key table of port %d of %s: %w", port, dev, err)
	}
	seen := map[int]bool{}
	var keys []int
	for _, e := range entries {
		s, err := host.ReadAttr(f, path.Join(dir, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s/%s: %w", dir, e.Name(), err)
		}
		v, err := strconv.ParseInt(s, 0, 32)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %q is not a P_Key", dir, e.Name(), s)
		}
		if v&0x7fff == 0 || seen[int(v)] {
			continue
		}
		seen[int(v)] = true
		keys = append(keys, int(v))
	}
	sort.Ints(keys)
	return keys, nil
}

// HasPKey reports whether a P_Key table holds the partition of the
// full-member key want, as a full or a limited member.
func HasPKey(table []int, want int) bool {
	for _, k := range table {
		if k|0x8000 == want {
			return true
		}
	}
	return false
}

// FullMemberOf reports whether a P_Key table holds the full-member key
// of a partition (want with bit 0x8000 set), not only the limited one.
func FullMemberOf(table []int, want int) bool {
	for _, k := range table {
		if k == want|0x8000 {
			return true
		}
	}
	return false
}

// FormatPKeys lists a P_Key table for messages ("0x8002, 0xffff").
func FormatPKeys(table []int) string {
	if len(table) == 0 {
		return "empty"
	}
	s := make([]string, len(table))
	for i, k := range table {
		s[i] = fmt.Sprintf("0x%04x", k)
	}
	return strings.Join(s, ", ")
}

// PortGUIDOfGID is the port GUID in an InfiniBand port's GID 0 (the
// subnet prefix, then the GUID: fe80:0000:0000:0000:0002:c903:000a:1b2c),
// written 0x0002c903000a1b2c; "" when the GID is not of that form.
func PortGUIDOfGID(gid string) string {
	groups := strings.Split(gid, ":")
	if len(groups) != 8 {
		return ""
	}
	s := strings.Join(groups[4:], "")
	if len(s) != 16 || strings.Trim(strings.ToLower(s), "0123456789abcdef") != "" || s == "0000000000000000" {
		return ""
	}
	return "0x" + strings.ToLower(s)
}
