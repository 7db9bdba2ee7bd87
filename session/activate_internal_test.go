package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
)

// TestFunctionMissing: what of a reset card's function is not back, read
// from its sysfs directories: its RDMA device (infiniband/), and as many
// netdevs (net/) as its ports had, at the limit and one short; a
// function whose ports had none needs none.
func TestFunctionMissing(t *testing.T) {
	const pci = "0000:3b:00.0"
	one := &inventory.Device{Name: "mlx5_0", PCI: pci, Ports: []*inventory.Port{{Num: 1, Netdevs: []string{"ib0"}}}}
	two := &inventory.Device{Name: "mlx5_0", PCI: pci, Ports: []*inventory.Port{{Num: 1, Netdevs: []string{"ib0"}}, {Num: 2, Netdevs: []string{"ib1"}}}}
	none := &inventory.Device{Name: "mlx5_0", PCI: pci, Ports: []*inventory.Port{{Num: 1}}}
	for _, tc := range []struct {
		name    string
		was     *inventory.Device
		rdma    bool
		netdevs []string
		want    string // "" = nothing missing; else a part of the message
	}{
		{"back", one, true, []string{"ib0"}, ""},
		{"back under another name", one, true, []string{"ens1f0np0"}, ""},
		{"netdev not back", one, true, nil, "the netdevs of 0000:3b:00.0 (were ib0)"},
		{"two ports, both back", two, true, []string{"ib0", "ib1"}, ""},
		{"two ports, one back", two, true, []string{"ib0"}, "the netdevs of 0000:3b:00.0 (were ib0, ib1)"},
		{"RDMA device not back", one, false, nil, "the RDMA device of 0000:3b:00.0 (was mlx5_0) and its netdevs (were ib0)"},
		{"no netdev before, RDMA device back", none, true, nil, ""},
		{"no netdev before, RDMA device not back", none, false, nil, "the RDMA device of 0000:3b:00.0 (was mlx5_0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fn := filepath.Join(dir, "sys/bus/pci/devices", pci)
			if err := os.MkdirAll(fn, 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.rdma {
				if err := os.MkdirAll(filepath.Join(fn, "infiniband", "mlx5_0"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, n := range tc.netdevs {
				if err := os.MkdirAll(filepath.Join(fn, "net", n), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			fs, err := host.NewRootFS(dir)
			if err != nil {
				t.Fatal(err)
			}
			got := functionMissing(&host.Host{FS: fs}, pci, tc.was)
			if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Errorf("functionMissing = %q, want %q", got, tc.want)
			}
		})
	}
}
