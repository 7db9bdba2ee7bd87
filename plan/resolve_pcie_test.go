package plan

import (
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/schema"
)

// TestResolvePCIeOnly: an entry with pci and pcie alone may name a PCI
// function that is no RDMA device (the pcie stage reads it); an entry
// that sets anything else for that address still needs an RDMA device.
func TestResolvePCIeOnly(t *testing.T) {
	spec, rep := schema.Parse("h.yaml", []byte(`version: 1
devices:
  - pci: "0000:99:00.0"
    pcie: {max_read_request: 512}
  - pci: "0000:98:00.0"
    pcie: {max_read_request: 512}
    ports: [{port: 1, link_layer: Ethernet}]
`))
	if len(rep) > 0 {
		t.Fatal(rep)
	}
	got := resolveDevices(&Request{Spec: spec, Inv: &inventory.Inventory{}})
	if len(got) != 1 || got[0].Path != "$.devices[1].pci" || !strings.Contains(got[0].Message, "no RDMA device with pci 0000:98:00.0") {
		t.Errorf("findings %v, want one for devices[1] alone", got)
	}
}
