package inventory_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/sysfsns"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/schema"
)

var update = flag.Bool("update", false, "rewrite golden files")

// The fixture host: one dual-port ConnectX-6 (PCI 15b3:101b, MT4123) as two
// PCI functions behind root port 0000:3a:00.0. Function 0 (mlx5_0) runs
// InfiniBand with the IPoIB netdev ibp59s0f0; function 1 (mlx5_1) runs
// Ethernet with the RoCE netdev enp59s0f1np1. Bus 0x3b = 59, hence the
// predictable names.
const (
	labHostname = "lab-host"
	ipoibNetdev = "ibp59s0f0"
	roceNetdev  = "enp59s0f1np1"
	roceMAC     = "b8:ce:f6:12:34:57"
	pciRoot     = "devices/pci0000:3a/0000:3a:00.0"
	pf0         = pciRoot + "/0000:3b:00.0"
	pf1         = pciRoot + "/0000:3b:00.1"
	ib0         = pf0 + "/infiniband/mlx5_0"
	ib1         = pf1 + "/infiniband/mlx5_1"
)

// cx6Fixture is the /sys of the fixture host, in formats.md §3's formats:
// every attribute ends with "\n", /sys/class and /sys/bus entries are
// relative symlinks into /sys/devices, and each RDMA device and netdev has
// a `device` symlink to its PCI function. An empty file stands for a GID
// slot whose read fails with EINVAL on a real kernel (empty slot, or an IB
// port's ndev).
var cx6Fixture = []sysfsns.Entry{
	sysfsns.Link("class/infiniband/mlx5_0", "../../"+ib0),
	sysfsns.Link("class/infiniband/mlx5_1", "../../"+ib1),
	sysfsns.Link("class/net/"+ipoibNetdev, "../../"+pf0+"/net/"+ipoibNetdev),
	sysfsns.Link("class/net/"+roceNetdev, "../../"+pf1+"/net/"+roceNetdev),
	sysfsns.Link("bus/pci/devices/0000:3b:00.0", "../../../"+pf0),
	sysfsns.Link("bus/pci/devices/0000:3b:00.1", "../../../"+pf1),

	// PCI function 0, InfiniBand controller.
	sysfsns.File(pf0+"/vendor", "0x15b3\n"),
	sysfsns.File(pf0+"/device", "0x101b\n"),
	sysfsns.File(pf0+"/class", "0x020700\n"),
	// Its NUMA node (numa_node; function 1 says -1, as the kernel does
	// when it knows none).
	sysfsns.File(pf0+"/numa_node", "1\n"),
	// The card's VPD, binary (function 1 has no vpd file: a function
	// whose VPD cannot be read has no part number or serial).
	sysfsns.Binary(pf0+"/vpd", mellanoxVPD("ConnectX-6 VPI adapter card, HDR IB (200Gb/s) and 200GbE, dual-port QSFP56", "MCX653106A-HDAT", "MT2031X09876")),
	sysfsns.Link(ib0+"/device", "../../../0000:3b:00.0"),
	sysfsns.File(ib0+"/node_type", "1: CA\n"),
	sysfsns.File(ib0+"/node_guid", "b8ce:f603:0012:3456\n"),
	sysfsns.File(ib0+"/sys_image_guid", "b8ce:f603:0012:3456\n"),
	sysfsns.File(ib0+"/fw_ver", "20.35.1012\n"),
	sysfsns.File(ib0+"/hca_type", "MT4123\n"),
	sysfsns.File(ib0+"/board_id", "MT_0000000222\n"),
	sysfsns.File(ib0+"/hw_rev", "0\n"),
	sysfsns.File(ib0+"/node_desc", "lab-host mlx5_0\n"),
	sysfsns.File(ib0+"/ports/1/state", "4: ACTIVE\n"),
	sysfsns.File(ib0+"/ports/1/phys_state", "5: LinkUp\n"),
	sysfsns.File(ib0+"/ports/1/link_layer", "InfiniBand\n"),
	sysfsns.File(ib0+"/ports/1/rate", "200 Gb/sec (4X HDR)\n"),
	sysfsns.File(ib0+"/ports/1/lid", "0x3\n"),
	sysfsns.File(ib0+"/ports/1/sm_lid", "0x1\n"),
	sysfsns.File(ib0+"/ports/1/lid_mask_count", "0\n"),
	sysfsns.File(ib0+"/ports/1/sm_sl", "0\n"),
	sysfsns.File(ib0+"/ports/1/cap_mask", "0xa651e848\n"),
	sysfsns.File(ib0+"/ports/1/gids/0", "fe80:0000:0000:0000:b8ce:f603:0012:3456\n"),
	sysfsns.File(ib0+"/ports/1/gids/1", "0000:0000:0000:0000:0000:0000:0000:0000\n"),
	sysfsns.File(ib0+"/ports/1/gid_attrs/types/0", "IB/RoCE v1\n"),
	sysfsns.File(ib0+"/ports/1/gid_attrs/types/1", ""),
	sysfsns.File(ib0+"/ports/1/gid_attrs/ndevs/0", ""),
	sysfsns.File(ib0+"/ports/1/gid_attrs/ndevs/1", ""),
	sysfsns.File(ib0+"/ports/1/pkeys/0", "0xffff\n"),
	sysfsns.File(ib0+"/ports/1/pkeys/1", "0x0000\n"),
	// Its IPoIB netdev (enhanced IPoIB: no RC flag in byte 0; the last
	// 8 bytes are the port GUID).
	sysfsns.Link(pf0+"/net/"+ipoibNetdev+"/device", "../../../0000:3b:00.0"),
	sysfsns.File(pf0+"/net/"+ipoibNetdev+"/type", "32\n"),
	sysfsns.File(pf0+"/net/"+ipoibNetdev+"/addr_len", "20\n"),
	sysfsns.File(pf0+"/net/"+ipoibNetdev+"/address", "00:00:10:49:fe:80:00:00:00:00:00:00:b8:ce:f6:03:00:12:34:56\n"),
	sysfsns.File(pf0+"/net/"+ipoibNetdev+"/broadcast", "00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff\n"),
	sysfsns.File(pf0+"/net/"+ipoibNetdev+"/mode", "datagram\n"),
	sysfsns.File(pf0+"/net/"+ipoibNetdev+"/pkey", "0xffff\n"),
	sysfsns.File(pf0+"/net/"+ipoibNetdev+"/umcast", "0\n"),
	sysfsns.File(pf0+"/net/"+ipoibNetdev+"/dev_id", "0x0\n"),
	sysfsns.File(pf0+"/net/"+ipoibNetdev+"/dev_port", "0\n"),
	sysfsns.File(pf0+"/net/"+ipoibNetdev+"/mtu", "4092\n"),

	// PCI function 1, Ethernet controller.
	sysfsns.File(pf1+"/vendor", "0x15b3\n"),
	sysfsns.File(pf1+"/numa_node", "-1\n"),
	sysfsns.File(pf1+"/device", "0x101b\n"),
	sysfsns.File(pf1+"/class", "0x020000\n"),
	sysfsns.Link(ib1+"/device", "../../../0000:3b:00.1"),
	sysfsns.File(ib1+"/node_type", "1: CA\n"),
	sysfsns.File(ib1+"/node_guid", "b8ce:f603:0012:3457\n"),
	sysfsns.File(ib1+"/sys_image_guid", "b8ce:f603:0012:3456\n"),
	sysfsns.File(ib1+"/fw_ver", "20.35.1012\n"),
	sysfsns.File(ib1+"/hca_type", "MT4123\n"),
	sysfsns.File(ib1+"/board_id", "MT_0000000222\n"),
	sysfsns.File(ib1+"/hw_rev", "0\n"),
	sysfsns.File(ib1+"/node_desc", "lab-host mlx5_1\n"),
	sysfsns.File(ib1+"/ports/1/state", "4: ACTIVE\n"),
	sysfsns.File(ib1+"/ports/1/phys_state", "5: LinkUp\n"),
	sysfsns.File(ib1+"/ports/1/link_layer", "Ethernet\n"),
	sysfsns.File(ib1+"/ports/1/rate", "100 Gb/sec (4X EDR)\n"),
	sysfsns.File(ib1+"/ports/1/lid", "0x0\n"),
	sysfsns.File(ib1+"/ports/1/sm_lid", "0x0\n"),
	sysfsns.File(ib1+"/ports/1/lid_mask_count", "0\n"),
	sysfsns.File(ib1+"/ports/1/sm_sl", "0\n"),
	// Link-local GIDs of the netdev's MAC, RoCE v1 and v2; no IPv4 yet.
	sysfsns.File(ib1+"/ports/1/gids/0", "fe80:0000:0000:0000:bace:f6ff:fe12:3457\n"),
	sysfsns.File(ib1+"/ports/1/gids/1", "fe80:0000:0000:0000:bace:f6ff:fe12:3457\n"),
	sysfsns.File(ib1+"/ports/1/gids/2", "0000:0000:0000:0000:0000:0000:0000:0000\n"),
	sysfsns.File(ib1+"/ports/1/gids/3", "0000:0000:0000:0000:0000:0000:0000:0000\n"),
	sysfsns.File(ib1+"/ports/1/gid_attrs/types/0", "IB/RoCE v1\n"),
	sysfsns.File(ib1+"/ports/1/gid_attrs/types/1", "RoCE v2\n"),
	sysfsns.File(ib1+"/ports/1/gid_attrs/types/2", ""),
	sysfsns.File(ib1+"/ports/1/gid_attrs/types/3", ""),
	sysfsns.File(ib1+"/ports/1/gid_attrs/ndevs/0", roceNetdev+"\n"),
	sysfsns.File(ib1+"/ports/1/gid_attrs/ndevs/1", roceNetdev+"\n"),
	sysfsns.File(ib1+"/ports/1/gid_attrs/ndevs/2", ""),
	sysfsns.File(ib1+"/ports/1/gid_attrs/ndevs/3", ""),
	sysfsns.File(ib1+"/ports/1/pkeys/0", "0xffff\n"),
	// Its RoCE netdev.
	sysfsns.Link(pf1+"/net/"+roceNetdev+"/device", "../../../0000:3b:00.1"),
	sysfsns.File(pf1+"/net/"+roceNetdev+"/type", "1\n"),
	sysfsns.File(pf1+"/net/"+roceNetdev+"/addr_len", "6\n"),
	sysfsns.File(pf1+"/net/"+roceNetdev+"/address", roceMAC+"\n"),
	sysfsns.File(pf1+"/net/"+roceNetdev+"/broadcast", "ff:ff:ff:ff:ff:ff\n"),
	sysfsns.File(pf1+"/net/"+roceNetdev+"/dev_id", "0x0\n"),
	sysfsns.File(pf1+"/net/"+roceNetdev+"/dev_port", "0\n"),
	sysfsns.File(pf1+"/net/"+roceNetdev+"/phys_port_name", "p1\n"),
	sysfsns.File(pf1+"/net/"+roceNetdev+"/mtu", "1500\n"),
}

// liveResult is what the child reports from inside its namespaces.
type liveResult struct {
	// Netdevs is what /sys/class/net lists in the child.
	Netdevs []string
	// Rdmamap is rdmamap's answer for each netdev, through the live host
	// ("" when it has none).
	Rdmamap   map[string]string
	Inventory *inventory.Inventory
	Show      string
	ShowExit  int
	ShowErr   string
}

// liveChild runs in the child: the live host (root "/", rdmamap, netlink)
// on the fixture.
func liveChild(ctx context.Context) (any, error) {
	h, err := host.NewLive(os.Environ())
	if err != nil {
		return nil, err
	}
	var res liveResult
	entries, err := h.FS.ReadDir(inventory.ClassNet)
	if err != nil {
		return nil, err
	}
	res.Rdmamap = map[string]string{}
	for _, e := range entries {
		res.Netdevs = append(res.Netdevs, e.Name())
		dev, _ := h.RdmaDeviceForNetdev(e.Name())
		res.Rdmamap[e.Name()] = dev
	}
	if res.Inventory, err = inventory.Discover(ctx, h); err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	// The fixture has no firmware to read: run show with a PATH holding no
	// firmware tool (this machine may have Debian's mstconfig, which would
	// rightly fail to open the fixture's adapter).
	res.ShowExit = cli.Run([]string{"show"}, cli.Env{Stdout: &stdout, Stderr: &stderr, Environ: []string{"PATH=/nonexistent/rdmaform-test-path"}, Ctx: ctx})
	res.Show, res.ShowErr = stdout.String(), stderr.String()
	return res, nil
}

// TestLiveShow runs inventory.Discover and `rdmaform show` on the live host
// (root "/", rdmamap for the netdev mapping) in a child whose /sys is the
// ConnectX-6 fixture, in private mount, network and UTS namespaces.
func TestLiveShow(t *testing.T) {
	if sysfsns.InChild() {
		sysfsns.Child(t, liveChild)
		return
	}
	if testing.Short() {
		t.Skip("lab test (private namespaces and overlay mounts); not in -short")
	}
	fixture := filepath.Join(t.TempDir(), "sys")
	if err := sysfsns.WriteTree(fixture, cx6Fixture); err != nil {
		t.Fatal(err)
	}
	before, err := sysfsns.Digest(fixture)
	if err != nil {
		t.Fatal(err)
	}
	// The fixture's names, as the machine's own sysfs has them (or not).
	probes := []string{"/sys/class/infiniband/mlx5_0", "/sys/class/net/" + ipoibNetdev, "/sys/class/net/" + roceNetdev, "/sys/bus/pci/devices/0000:3b:00.0"}
	machine := exists(probes)
	raw := sysfsns.Run(t, sysfsns.Config{
		Fixture:  fixture,
		Hostname: labHostname,
		// netlink must know the fixture's netdevs by name for rdmamap to
		// look at them; as veths both are "ether" links.
		Veths: []sysfsns.Veth{{Name: ipoibNetdev, Peer: roceNetdev, PeerMAC: roceMAC}},
	})
	var got liveResult
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}

	t.Run("netdevs", func(t *testing.T) {
		want := []string{roceNetdev, ipoibNetdev, "lo"}
		sort.Strings(got.Netdevs)
		sort.Strings(want)
		if d := cmp.Diff(want, got.Netdevs); d != "" {
			t.Errorf("/sys/class/net in the child (-want +got):\n%s", d)
		}
	})

	t.Run("rdmamap", func(t *testing.T) {
		// The RoCE netdev is found in mlx5_1's GID table (gid_attrs/ndevs).
		// The IPoIB netdev is a veth here, an "ether" link, so rdmamap
		// looks for it in GID tables too and finds nothing: its
		// InfiniBand path needs an ARPHRD_INFINIBAND link, which this
		// kernel cannot make. inventory falls back to sysfs for it.
		want := map[string]string{roceNetdev: "mlx5_1", ipoibNetdev: "", "lo": ""}
		if d := cmp.Diff(want, got.Rdmamap); d != "" {
			t.Errorf("rdmamap answers (-want +got):\n%s", d)
		}
	})

	t.Run("inventory", func(t *testing.T) {
		want := &inventory.Inventory{Devices: []*inventory.Device{
			{
				Name: "mlx5_0", PCI: "0000:3b:00.0", NodeGUID: "b8ce:f603:0012:3456", FWVer: "20.35.1012",
				HCAType: "MT4123", PSID: "MT_0000000222", NodeType: "1: CA",
				PartNumber: "MCX653106A-HDAT", Serial: "MT2031X09876", NUMANode: 1,
				Bridges: []string{"0000:3a:00.0"}, // its root port, from the BusPCI link
				Ports: []*inventory.Port{{
					Num: 1, State: "ACTIVE", PhysState: "LinkUp", LinkLayer: "InfiniBand",
					Rate: "200 Gb/sec (4X HDR)", LID: 3, SMLID: 1, GUID: "0xb8cef60300123456", Netdevs: []string{ipoibNetdev},
				}},
			},
			{
				Name: "mlx5_1", PCI: "0000:3b:00.1", NodeGUID: "b8ce:f603:0012:3457", FWVer: "20.35.1012",
				HCAType: "MT4123", PSID: "MT_0000000222", NodeType: "1: CA", NUMANode: -1,
				Bridges: []string{"0000:3a:00.0"},
				Ports: []*inventory.Port{{
					Num: 1, State: "ACTIVE", PhysState: "LinkUp", LinkLayer: "Ethernet",
					Rate: "100 Gb/sec (4X EDR)", Netdevs: []string{roceNetdev},
					// The link-local GIDs of the netdev's MAC, one per RoCE version.
					GIDs: []inventory.GID{
						{Index: 0, GID: "fe80:0000:0000:0000:bace:f6ff:fe12:3457", Type: inventory.GIDRoCEv1, Netdev: roceNetdev},
						{Index: 1, GID: "fe80:0000:0000:0000:bace:f6ff:fe12:3457", Type: inventory.GIDRoCEv2, Netdev: roceNetdev},
					},
				}},
			},
		}}
		if d := cmp.Diff(want, got.Inventory); d != "" {
			t.Errorf("inventory.Discover on the live host (-want +got):\n%s", d)
		}
	})

	t.Run("live_equals_rooted", func(t *testing.T) {
		// The same tree read with --root (no rdmamap, no netlink) gives
		// the same inventory.
		if d := cmp.Diff(rootedInventory(t, fixture), got.Inventory); d != "" {
			t.Errorf("--root inventory vs live inventory (-rooted +live):\n%s", d)
		}
	})

	t.Run("show", func(t *testing.T) {
		// The PATH has no dcb or ethtool: show notes that it leaves the
		// port's qos out, and nothing else.
		if got.ShowExit != 0 || !strings.Contains(got.ShowErr, "qos left out: dcb and ethtool are not installed") || strings.Count(got.ShowErr, "\n") != 1 {
			t.Fatalf("rdmaform show: exit %d, stderr:\n%s", got.ShowExit, got.ShowErr)
		}
		golden := filepath.Join("testdata", "live_show.yaml")
		if *update {
			if err := os.WriteFile(golden, []byte(got.Show), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(string(want), got.Show); d != "" {
			t.Errorf("rdmaform show (-want +got):\n%s", d)
		}
	})

	t.Run("show_is_a_spec", func(t *testing.T) {
		if _, rep := schema.Parse("show.yaml", []byte(got.Show)); len(rep) > 0 {
			t.Errorf("rdmaform show output does not validate as a spec:\n%v\n%s", rep, got.Show)
		}
	})

	t.Run("fixture_unchanged", func(t *testing.T) {
		after, err := sysfsns.Digest(fixture)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(before, after); d != "" {
			t.Errorf("the fixture changed (-before +after):\n%s", d)
		}
	})

	t.Run("machine_untouched", func(t *testing.T) {
		// sysfsns.Run compares the machine's /sys mounts itself; here, the
		// fixture's names did not reach the machine's own sysfs.
		if d := cmp.Diff(machine, exists(probes)); d != "" {
			t.Errorf("the machine's sysfs changed (-before +after):\n%s", d)
		}
	})
}

// exists maps each path to whether it exists (without following a last
// symlink).
func exists(paths []string) map[string]bool {
	m := map[string]bool{}
	for _, p := range paths {
		_, err := os.Lstat(p)
		m[p] = err == nil
	}
	return m
}

// rxeFixture adds Soft-RoCE over the RoCE netdev (rdma link add rxe0 type
// rxe netdev enp59s0f1np1): since Linux 5.11 a virtual device with no
// `device` link, its netdev in `parent` and in its GID table.
var rxeFixture = []sysfsns.Entry{
	sysfsns.Link("class/infiniband/rxe0", "../../devices/virtual/infiniband/rxe0"),
	sysfsns.File("devices/virtual/infiniband/rxe0/node_type", "1: CA\n"),
	sysfsns.File("devices/virtual/infiniband/rxe0/node_guid", "bace:f6ff:fe12:3457\n"),
	sysfsns.File("devices/virtual/infiniband/rxe0/sys_image_guid", "bace:f6ff:fe12:3457\n"),
	sysfsns.File("devices/virtual/infiniband/rxe0/parent", roceNetdev+"\n"),
	sysfsns.File("devices/virtual/infiniband/rxe0/ports/1/state", "4: ACTIVE\n"),
	sysfsns.File("devices/virtual/infiniband/rxe0/ports/1/phys_state", "5: LinkUp\n"),
	sysfsns.File("devices/virtual/infiniband/rxe0/ports/1/link_layer", "Ethernet\n"),
	sysfsns.File("devices/virtual/infiniband/rxe0/ports/1/rate", "100 Gb/sec (4X EDR)\n"),
	sysfsns.File("devices/virtual/infiniband/rxe0/ports/1/lid", "0x0\n"),
	sysfsns.File("devices/virtual/infiniband/rxe0/ports/1/sm_lid", "0x0\n"),
	sysfsns.File("devices/virtual/infiniband/rxe0/ports/1/cap_mask", "0x00010000\n"),
	sysfsns.File("devices/virtual/infiniband/rxe0/ports/1/gids/0", "fe80:0000:0000:0000:bace:f6ff:fe12:3457\n"),
	sysfsns.File("devices/virtual/infiniband/rxe0/ports/1/gids/1", "fe80:0000:0000:0000:bace:f6ff:fe12:3457\n"),
	sysfsns.File("devices/virtual/infiniband/rxe0/ports/1/gid_attrs/types/0", "IB/RoCE v1\n"),
	sysfsns.File("devices/virtual/infiniband/rxe0/ports/1/gid_attrs/types/1", "RoCE v2\n"),
	sysfsns.File("devices/virtual/infiniband/rxe0/ports/1/gid_attrs/ndevs/0", roceNetdev+"\n"),
	sysfsns.File("devices/virtual/infiniband/rxe0/ports/1/gid_attrs/ndevs/1", roceNetdev+"\n"),
}

// TestLiveRxeOverRoCE: with rxe0 over the RoCE netdev, the netdev is in two
// GID tables and rdmamap answers whichever device it lists first. The
// netdev still belongs to mlx5_1's port (and is rxe0's parent).
func TestLiveRxeOverRoCE(t *testing.T) {
	if sysfsns.InChild() {
		sysfsns.Child(t, liveChild)
		return
	}
	if testing.Short() {
		t.Skip("lab test (private namespaces and overlay mounts); not in -short")
	}
	fixture := filepath.Join(t.TempDir(), "sys")
	if err := sysfsns.WriteTree(fixture, append(append([]sysfsns.Entry(nil), cx6Fixture...), rxeFixture...)); err != nil {
		t.Fatal(err)
	}
	raw := sysfsns.Run(t, sysfsns.Config{
		Fixture:  fixture,
		Hostname: labHostname,
		Veths:    []sysfsns.Veth{{Name: ipoibNetdev, Peer: roceNetdev, PeerMAC: roceMAC}},
	})
	var got liveResult
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	t.Logf("rdmamap: %s -> %q", roceNetdev, got.Rdmamap[roceNetdev])
	want := map[string][]string{"mlx5_0/1": {ipoibNetdev}, "mlx5_1/1": {roceNetdev}, "rxe0/1": {roceNetdev}}
	have := map[string][]string{}
	for _, d := range got.Inventory.Devices {
		for _, p := range d.Ports {
			have[d.Name+"/"+strconv.Itoa(p.Num)] = p.Netdevs
		}
	}
	if d := cmp.Diff(want, have); d != "" {
		t.Errorf("netdevs by device/port (-want +got):\n%s", d)
	}
	if d := cmp.Diff(rootedInventory(t, fixture), got.Inventory); d != "" {
		t.Errorf("--root inventory vs live inventory (-rooted +live):\n%s", d)
	}
}

// rootedInventory reads the fixture as a --root tree (fixture is ROOT/sys).
func rootedInventory(t *testing.T, fixture string) *inventory.Inventory {
	t.Helper()
	h, err := host.NewRooted(filepath.Dir(fixture), nil)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := inventory.Discover(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	return inv
}
