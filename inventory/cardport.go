package inventory

import (
	"strconv"
	"strings"
)

// The ports of a card and the ports of its RDMA devices are numbered
// differently. Firmware parameters such as LINK_TYPE_Pn belong to the
// card: every PCI function of it shows the same LINK_TYPE_P1 and
// LINK_TYPE_P2, and n is the card's physical port. On mlx4 (ConnectX-3)
// one PCI function carries both ports, so physical port n is RDMA port n
// of that function. On mlx5 (ConnectX-4 and later) each physical port is
// a PCI function of its own with one RDMA port: function N of the slot is
// physical port N+1 (0000:3b:00.1 is port 2), and its RDMA port is 1.
// CardPort and FunctionOfCardPort are the two directions of that mapping;
// everything that names a LINK_TYPE_Pn or reads one uses them.

// CardPort is the card's physical port (the n of LINK_TYPE_Pn) that RDMA
// port `port` of d is. A device with more than one port (mlx4) or without
// a PCI function (rxe) keeps its port number.
func (d *Device) CardPort(port int) int {
	if len(d.Ports) > 1 {
		return port
	}
	if fn, ok := pciFunction(d.PCI); ok {
		return fn + 1
	}
	return port
}

// FunctionOfCardPort is CardPort's inverse: the PCI function and RDMA
// port that physical port n of the card is, asked through its function
// pci; dev is the inventory device at pci (nil if unknown, which reads as
// one port per function).
func FunctionOfCardPort(pci string, n int, dev *Device) (string, int) {
	if dev != nil && len(dev.Ports) > 1 {
		return pci, n
	}
	i := strings.LastIndexByte(pci, '.')
	if i < 0 {
		return pci, n
	}
	return pci[:i+1] + strconv.FormatInt(int64(n-1), 16), 1
}

// pciFunction is the function number of a PCI address (DDDD:BB:DD.F).
func pciFunction(pci string) (int, bool) {
	i := strings.LastIndexByte(pci, '.')
	if i < 0 {
		return 0, false
	}
	fn, err := strconv.ParseUint(pci[i+1:], 16, 8)
	if err != nil {
		return 0, false
	}
	return int(fn), true
}
