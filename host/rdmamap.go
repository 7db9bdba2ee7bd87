package host

import (
	"github.com/Mellanox/rdmamap"
)

// RdmaDeviceForNetdev asks rdmamap which RDMA device a netdev belongs to.
// rdmamap reads the fixed paths /sys/class/{infiniband,net} and
// /sys/bus/pci/devices, so it answers only for a live host; a rooted or
// simulated host answers false and the caller maps netdevs from its own
// tree.
func (h *Host) RdmaDeviceForNetdev(netdev string) (string, bool) {
	if h.FS.Root() != "/" || h.Name != "live" {
		return "", false
	}
	dev, err := rdmamap.GetRdmaDeviceForNetdevice(netdev)
	if err != nil || dev == "" {
		return "", false
	}
	return dev, true
}
