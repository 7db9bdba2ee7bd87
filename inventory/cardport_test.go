package inventory

import "testing"

// TestCardPort: a card's physical port n and the RDMA port of a function
// are the two directions of one mapping (function N of a ConnectX-4+ is
// port N+1; a ConnectX-3's one function has ports 1 and 2), so a
// LINK_TYPE_Pn named for a port sets that same port.
func TestCardPort(t *testing.T) {
	one := func(pci string) *Device { return &Device{Name: "mlx5", PCI: pci, Ports: []*Port{{Num: 1}}} }
	mlx4 := &Device{Name: "mlx4_0", PCI: "0000:81:00.0", Ports: []*Port{{Num: 1}, {Num: 2}}}
	rxe := &Device{Name: "rxe0", Ports: []*Port{{Num: 1}}}
	for _, tc := range []struct {
		dev  *Device
		port int
		card int
	}{
		{one("0000:3b:00.0"), 1, 1},
		{one("0000:3b:00.1"), 1, 2},
		{one("0000:3b:00.3"), 1, 4},
		{mlx4, 1, 1},
		{mlx4, 2, 2},
		{rxe, 1, 1},
	} {
		if got := tc.dev.CardPort(tc.port); got != tc.card {
			t.Errorf("%s port %d: card port %d, want %d", tc.dev.PCI, tc.port, got, tc.card)
		}
		if tc.dev.PCI == "" {
			continue
		}
		// Asked through the card's first function, the way the firmware
		// tools address the card.
		first := tc.dev.PCI[:len(tc.dev.PCI)-1] + "0"
		asked := tc.dev
		if len(tc.dev.Ports) == 1 {
			asked = one(first)
		}
		fn, port := FunctionOfCardPort(first, tc.card, asked)
		if fn != tc.dev.PCI || port != tc.port {
			t.Errorf("card port %d of %s: %s port %d, want %s port %d", tc.card, first, fn, port, tc.dev.PCI, tc.port)
		}
	}
}
