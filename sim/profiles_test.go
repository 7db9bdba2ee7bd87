package sim

import "testing"

// TestGPUNodeManyAdapters: past the 15 buses of PCI domain 0, cards go on
// to domain 1, 2, ... with unique addresses and netdev names the kernel
// accepts (at most 15 bytes).
func TestGPUNodeManyAdapters(t *testing.T) {
	for _, n := range []int{1, 15, 16, 32, 64} {
		st, err := NewState("gpu-node", "node1", n)
		if err != nil {
			t.Fatalf("%d adapters: %v", n, err)
		}
		if got := len(st.Devices); got != 2*n {
			t.Errorf("%d adapters: %d PCI functions, want %d", n, got, 2*n)
		}
		seen := map[string]bool{}
		for _, d := range st.Devices {
			p := d.Ports[0]
			for _, name := range []string{d.PCI, d.NodeGUID, p.NetdevIB, p.NetdevEth} {
				if seen[name] {
					t.Errorf("%d adapters: %s used twice", n, name)
				}
				seen[name] = true
			}
			for _, nd := range []string{p.NetdevIB, p.NetdevEth} {
				if len(nd) > 15 {
					t.Errorf("%d adapters: netdev name %s is longer than 15 bytes", n, nd)
				}
			}
		}
	}
	if _, err := NewState("gpu-node", "node1", 65); err == nil {
		t.Error("65 adapters: no error")
	}
}
