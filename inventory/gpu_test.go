package inventory

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
)

// pciTree writes a sysfs tree of PCI functions: each path is the
// function's directory under /sys/devices (host bridge, bridges,
// function), with its attributes and its /sys/bus/pci/devices link, as
// drivers/pci lays them out.
func pciTree(t *testing.T, root string, fns map[string]map[string]string) {
	t.Helper()
	for p, attrs := range fns {
		dir := filepath.Join(root, "sys/devices", p)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for k, v := range attrs {
			if err := os.WriteFile(filepath.Join(dir, k), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		bus := filepath.Join(root, "sys/bus/pci/devices")
		if err := os.MkdirAll(bus, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../../../devices/"+p, filepath.Join(bus, filepath.Base(p))); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGPUAffinity: each relation of nvidia-smi's legend from where the
// functions sit: below one switch (PIX), below two levels of switches
// (PXB, and behind a PCI bridge below the switch: two bridges), below two root ports of one host bridge (PHB), below two host
// bridges of one NUMA node (NODE) and of two (SYS); the bridges listed are
// those between the two; functions of other classes or vendors are no
// GPUs, and a function without a host bridge in its path gets none.
func TestGPUAffinity(t *testing.T) {
	root := t.TempDir()
	gpu := func(numa string) map[string]string {
		return map[string]string{"vendor": "0x10de", "class": "0x030200", "numa_node": numa}
	}
	nic := map[string]string{"vendor": "0x15b3", "class": "0x020700", "numa_node": "0"}
	sw := "pci0000:10/0000:10:01.0/0000:11:00.0"
	pciTree(t, root, map[string]map[string]string{
		sw + "/0000:12:00.0/0000:13:00.0": nic,
		sw + "/0000:12:01.0/0000:14:00.0": gpu("0"), // PIX
		// a second switch below the first: PXB
		sw + "/0000:12:02.0/0000:15:00.0/0000:16:00.0/0000:17:00.0": gpu("0"),
		// a PCI bridge (no switch) below the switch: two bridges, PXB
		sw + "/0000:12:03.0/0000:1a:00.0/0000:1b:00.0": gpu("0"),
		"pci0000:10/0000:10:02.0/0000:20:00.0":         map[string]string{"vendor": "0x1002", "class": "0x030000", "numa_node": "0"}, // PHB, AMD VGA
		"pci0000:30/0000:30:01.0/0000:31:00.0":         gpu("0"),                                                                     // NODE
		"pci0000:80/0000:80:01.0/0000:81:00.0":         gpu("1"),                                                                     // SYS
		"pci0000:10/0000:10:03.0/0000:40:00.0":         map[string]string{"vendor": "0x10de", "class": "0x040300", "numa_node": "0"}, // audio: no GPU
		"pci0000:10/0000:10:04.0/0000:41:00.0":         map[string]string{"vendor": "0x8086", "class": "0x030000", "numa_node": "0"}, // Intel VGA: no GPU
	})
	fs, err := host.NewRootFS(root)
	if err != nil {
		t.Fatal(err)
	}
	inv := &Inventory{Devices: []*Device{{Name: "mlx5_0", PCI: "0000:13:00.0", NUMANode: 0}, {Name: "rxe0", Parent: "eth0"}}}
	discoverGPUs(fs, inv)
	var gpus []string
	for _, g := range inv.GPUs {
		gpus = append(gpus, g.PCI+" "+g.Vendor)
	}
	if diff := cmp.Diff([]string{"0000:14:00.0 0x10de", "0000:17:00.0 0x10de", "0000:1b:00.0 0x10de", "0000:20:00.0 0x1002", "0000:31:00.0 0x10de", "0000:81:00.0 0x10de"}, gpus); diff != "" {
		t.Errorf("GPUs (-want +got):\n%s", diff)
	}
	if g := inv.GPU("0000:81:00.0"); g == nil || g.NUMANode != 1 {
		t.Errorf("GPU 0000:81:00.0: %+v", g)
	}
	d := inv.Devices[0]
	if diff := cmp.Diff([]string{"0000:12:00.0", "0000:11:00.0", "0000:10:01.0"}, d.Bridges); diff != "" {
		t.Errorf("bridges (-want +got):\n%s", diff)
	}
	want := []Affinity{
		{GPU: "0000:14:00.0", Relation: RelationPIX, Bridges: []string{"0000:12:00.0", "0000:11:00.0", "0000:12:01.0"}},
		{GPU: "0000:17:00.0", Relation: RelationPXB, Bridges: []string{"0000:12:00.0", "0000:11:00.0", "0000:12:02.0", "0000:15:00.0", "0000:16:00.0"}},
		{GPU: "0000:1b:00.0", Relation: RelationPXB, Bridges: []string{"0000:12:00.0", "0000:11:00.0", "0000:12:03.0", "0000:1a:00.0"}},
		{GPU: "0000:20:00.0", Relation: RelationPHB, Bridges: []string{"0000:12:00.0", "0000:11:00.0", "0000:10:01.0", "0000:10:02.0"}},
		{GPU: "0000:31:00.0", Relation: RelationNODE, Bridges: []string{"0000:12:00.0", "0000:11:00.0", "0000:10:01.0", "0000:30:01.0"}},
		{GPU: "0000:81:00.0", Relation: RelationSYS, Bridges: []string{"0000:12:00.0", "0000:11:00.0", "0000:10:01.0", "0000:80:01.0"}},
	}
	if diff := cmp.Diff(want, d.GPUAffinity); diff != "" {
		t.Errorf("affinity (-want +got):\n%s", diff)
	}
	if got := d.AffinityText(); got != "GPU 0000:14:00.0 PIX" {
		t.Errorf("AffinityText: %q", got)
	}
	if inv.Devices[1].GPUAffinity != nil || inv.Devices[1].Bridges != nil {
		t.Errorf("a software device got a path: %+v", inv.Devices[1])
	}
}

// TestGPUAffinityUnknownNUMA: a kernel that knows no NUMA node (-1)
// has one: two host bridges are NODE, not SYS. A link without a host
// bridge directory gives the function no path.
func TestGPUAffinityUnknownNUMA(t *testing.T) {
	root := t.TempDir()
	pciTree(t, root, map[string]map[string]string{
		"pci0000:00/0000:00:02.0/0000:01:00.0": {"vendor": "0x15b3", "class": "0x020000", "numa_node": "-1"},
		"pci0000:40/0000:40:01.0/0000:41:00.0": {"vendor": "0x10de", "class": "0x030200", "numa_node": "-1"},
		"platform/0000:50:00.0":                {"vendor": "0x10de", "class": "0x030200", "numa_node": "-1"},
	})
	fs, err := host.NewRootFS(root)
	if err != nil {
		t.Fatal(err)
	}
	inv := &Inventory{Devices: []*Device{{Name: "mlx5_0", PCI: "0000:01:00.0", NUMANode: -1}}}
	discoverGPUs(fs, inv)
	if len(inv.GPUs) != 2 {
		t.Fatalf("GPUs: %+v", inv.GPUs)
	}
	want := []Affinity{{GPU: "0000:41:00.0", Relation: RelationNODE, Bridges: []string{"0000:00:02.0", "0000:40:01.0"}}}
	if diff := cmp.Diff(want, inv.Devices[0].GPUAffinity); diff != "" {
		t.Errorf("affinity (-want +got):\n%s", diff)
	}
}

// TestGPUsWithoutRDMACore: a host whose RDMA core is not loaded (no
// /sys/class/infiniband) has no RDMA devices, and its GPUs are found all
// the same, with the path of any function to them (the kernel lab's
// virtio NIC and ati-vga, below two root ports: PHB).
func TestGPUsWithoutRDMACore(t *testing.T) {
	root := t.TempDir()
	pciTree(t, root, map[string]map[string]string{
		"pci0000:00/0000:00:01.0/0000:01:00.0": {"vendor": "0x1af4", "class": "0x020000", "numa_node": "-1"},
		"pci0000:00/0000:00:03.0/0000:03:00.0": {"vendor": "0x1002", "class": "0x030000", "numa_node": "-1"},
	})
	fs, err := host.NewRootFS(root)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := Discover(context.Background(), &host.Host{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Devices) != 0 || len(inv.GPUs) != 1 || inv.GPUs[0].PCI != "0000:03:00.0" {
		t.Fatalf("devices %v, GPUs %+v; want none and 0000:03:00.0", inv.Devices, inv.GPUs)
	}
	_, aff, ok := inv.FunctionPath(fs, "0000:01:00.0")
	want := []Affinity{{GPU: "0000:03:00.0", Relation: RelationPHB, Bridges: []string{"0000:00:01.0", "0000:00:03.0"}}}
	if diff := cmp.Diff(want, aff); !ok || diff != "" {
		t.Errorf("path of the NIC (ok %v; -want +got):\n%s", ok, diff)
	}
}
