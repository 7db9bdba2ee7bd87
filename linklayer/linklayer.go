// Package linklayer names the two link layers of an RDMA port, spelled as
// the kernel spells them in /sys/class/infiniband/DEV/ports/N/link_layer
// and as a spec writes them (link_layer: InfiniBand | Ethernet). Every
// package says these words through this one, so the spelling cannot drift.
package linklayer

import (
	"strconv"
	"strings"
)

// LinkLayer is a port's link layer as sysfs spells it (the inventory
// keeps /sys/class/infiniband/DEV/ports/N/link_layer as it reads it); ""
// is unknown (a setting with no fixed link layer, such as auto-sensing).
type LinkLayer string

const (
	// InfiniBand is an InfiniBand port (IPoIB, P_Keys, a subnet manager).
	InfiniBand LinkLayer = "InfiniBand"
	// Ethernet is an Ethernet port (RoCE).
	Ethernet LinkLayer = "Ethernet"
)

// OfMlx4Type is the link layer an mlx4 (ConnectX-3) port type gives: ib
// is InfiniBand, eth is Ethernet; "" for auto or anything else.
func OfMlx4Type(t string) LinkLayer {
	switch t {
	case "ib":
		return InfiniBand
	case "eth":
		return Ethernet
	}
	return ""
}

// OfLinkType is the link layer a firmware LINK_TYPE_Pn value gives a port,
// in any form mlxconfig and specs write it: IB, 1, IB(1), 0x1 for
// InfiniBand; ETH, 2, ETH(2), 0x2 for Ethernet (names in any case; in
// NAME(n) the number counts, as it is what a set sends). It is "" for
// VPI/3 (ConnectX-3 auto-sensing) and anything else.
func OfLinkType(v string) LinkLayer {
	s := strings.ToUpper(strings.TrimSpace(v))
	name, num := s, ""
	if i := strings.IndexByte(s, '('); i >= 0 && strings.HasSuffix(s, ")") {
		name, num = s[:i], s[i+1:len(s)-1]
	} else if s != "" && (s[0] >= '0' && s[0] <= '9') {
		name, num = "", s
	}
	byName := map[string]LinkLayer{"IB": InfiniBand, "ETH": Ethernet}
	byNum := map[int64]LinkLayer{1: InfiniBand, 2: Ethernet}
	if num == "" {
		return byName[name]
	}
	n, err := strconv.ParseInt(num, 0, 64)
	if err != nil {
		return ""
	}
	// The number is what a set sends (NAME(n) is written as n).
	return byNum[n]
}
