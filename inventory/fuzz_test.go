package inventory

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/fstree"
)

// FuzzDiscoverPort writes fuzzed sysfs attribute contents for one port of
// one device (and the dev_port of its netdev) into a fixture tree and
// reads it: Discover never panics or fails on what the files say, finds
// the port, trims the state names and maps the netdev only to a port
// that exists.
func FuzzDiscoverPort(f *testing.F) {
	f.Add("4: ACTIVE", "5: LinkUp", "InfiniBand", "0x10", "0x1", "200 Gb/sec (4X HDR)", "0")
	f.Add("1: DOWN\n", "3: Disabled", "Ethernet", "0x0", "", "", "1")
	f.Add("", "", "", "zz", "-0x8000000000", "\x00", "-1")
	f.Add(": ", "7:  ", "IB", "99999999999", "0x", "x", "99999999999999999999")
	f.Fuzz(func(t *testing.T, state, phys, ll, lid, smlid, rate, devPort string) {
		dir := t.TempDir()
		pci := "/sys/devices/pci0000:00/0000:00:01.0/0000:3b:00.0"
		files := map[string]string{
			"sys/class/infiniband/mlx5_0/ports/1/state":      state,
			"sys/class/infiniband/mlx5_0/ports/1/phys_state": phys,
			"sys/class/infiniband/mlx5_0/ports/1/link_layer": ll,
			"sys/class/infiniband/mlx5_0/ports/1/lid":        lid,
			"sys/class/infiniband/mlx5_0/ports/1/sm_lid":     smlid,
			"sys/class/infiniband/mlx5_0/ports/1/rate":       rate,
			"sys/class/infiniband/mlx5_0/node_guid":          "b859:9f03:0022:626e",
			"sys/class/net/ib0/dev_port":                     devPort,
		}
		fstree.Write(t, dir, files)
		if err := os.MkdirAll(filepath.Join(dir, pci), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, link := range []string{"sys/class/infiniband/mlx5_0/device", "sys/class/net/ib0/device"} {
			if err := os.Symlink(pci, filepath.Join(dir, link)); err != nil {
				t.Fatal(err)
			}
		}
		h, err := host.NewRooted(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		inv, err := Discover(context.Background(), h)
		if err != nil {
			t.Fatalf("Discover: %v", err)
		}
		d := inv.Device("mlx5_0")
		if d == nil || d.PCI != "0000:3b:00.0" || len(d.Ports) != 1 || d.Ports[0].Num != 1 {
			t.Fatalf("device read as %+v", d)
		}
		p := d.Ports[0]
		for _, s := range []string{string(p.State), string(p.PhysState)} {
			if s != strings.TrimSpace(s) {
				t.Fatalf("state %q not trimmed", s)
			}
		}
		if len(p.Netdevs) > 1 || (len(p.Netdevs) == 1 && p.Netdevs[0] != "ib0") {
			t.Fatalf("netdevs %q", p.Netdevs)
		}
	})
}
