// Package linklayer names the two link layers of an RDMA port, spelled as
// the kernel spells them in /sys/class/infiniband/DEV/ports/N/link_layer
// and as a spec writes them (link_layer: InfiniBand | Ethernet). Every
// package says these words through this one, so the spelling cannot drift.
package linklayer

const (
	// InfiniBand is an InfiniBand port (IPoIB, P_Keys, a subnet manager).
	InfiniBand = "InfiniBand"
	// Ethernet is an Ethernet port (RoCE).
	Ethernet = "Ethernet"
)

// OfMlx4Type is the link layer an mlx4 (ConnectX-3) port type gives: ib
// is InfiniBand, eth is Ethernet; "" for auto or anything else.
func OfMlx4Type(t string) string {
	switch t {
	case "ib":
		return InfiniBand
	case "eth":
		return Ethernet
	}
	return ""
}
