package rdmacm

import (
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
)

// TestLinkTypeHintNamesCardPort: RoCE asked on an InfiniBand port names
// the firmware parameter of the card's physical port: the second PCI
// function of a dual-port ConnectX-4+ is port 2 (LINK_TYPE_P2), though
// its RDMA port is 1; a ConnectX-3's port 2 is LINK_TYPE_P2 of its one
// function. Following a wrong hint would switch the card's other port.
func TestLinkTypeHintNamesCardPort(t *testing.T) {
	ib := func(n int) *inventory.Port { return &inventory.Port{Num: n, LinkLayer: "InfiniBand"} }
	for _, tc := range []struct {
		name, spec, want string
		dev              *inventory.Device
	}{
		{name: "ConnectX-4+ function 0", spec: "name: mlx5_0\n    ports:\n      - port: 1\n",
			dev: &inventory.Device{Name: "mlx5_0", PCI: "0000:3b:00.0", Ports: []*inventory.Port{ib(1)}}, want: "LINK_TYPE_P1: ETH"},
		{name: "ConnectX-4+ function 1", spec: "pci: \"0000:3b:00.1\"\n    ports:\n      - port: 1\n",
			dev: &inventory.Device{Name: "mlx5_1", PCI: "0000:3b:00.1", Ports: []*inventory.Port{ib(1)}}, want: "LINK_TYPE_P2: ETH"},
		{name: "ConnectX-3 port 2", spec: "name: mlx4_0\n    ports:\n      - port: 2\n",
			dev: &inventory.Device{Name: "mlx4_0", PCI: "0000:81:00.0", Ports: []*inventory.Port{ib(1), ib(2)}}, want: "LINK_TYPE_P2: ETH"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := parse(t, "version: 1\ndevices:\n  - "+tc.spec+"        roce: {mode: v2}\n")
			req := request(t, spec, &inventory.Inventory{Devices: []*inventory.Device{tc.dev}})
			prop := (&Provider{}).Plan(req, &Observed{Ports: map[string]PortValues{}}, plan.NewFacts())
			if len(prop.Errors) != 1 || !strings.Contains(prop.Errors[0].Message, "firmware "+tc.want+")") {
				t.Fatalf("findings %v, want one naming %s", prop.Errors, tc.want)
			}
		})
	}
}
