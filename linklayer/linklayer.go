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
