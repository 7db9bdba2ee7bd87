package plan_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
)

// TestPortsOf: the ports of one link layer, of every resolved device, in
// spec order with the device's spec index; an unresolved device is passed
// over.
func TestPortsOf(t *testing.T) {
	vpi := &inventory.Device{Name: "mlx4_0", Ports: []*inventory.Port{
		{Num: 1, LinkLayer: linklayer.InfiniBand}, {Num: 2, LinkLayer: linklayer.Ethernet}}}
	eth := &inventory.Device{Name: "mlx5_0", Ports: []*inventory.Port{{Num: 1, LinkLayer: linklayer.Ethernet}}}
	req := &plan.Request{Devices: []*inventory.Device{vpi, nil, eth}}
	type got struct {
		Index int
		Dev   string
		Port  int
	}
	list := func(ll linklayer.LinkLayer) []got {
		var out []got
		for _, p := range req.PortsOf(ll) {
			out = append(out, got{p.Index, p.Device.Name, p.Port.Num})
		}
		return out
	}
	if d := cmp.Diff([]got{{0, "mlx4_0", 2}, {2, "mlx5_0", 1}}, list(linklayer.Ethernet)); d != "" {
		t.Errorf("Ethernet ports (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]got{{0, "mlx4_0", 1}}, list(linklayer.InfiniBand)); d != "" {
		t.Errorf("InfiniBand ports (-want +got):\n%s", d)
	}
}
