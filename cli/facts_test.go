package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/sim"
)

// TestFacts: rdmaform facts on simulated hosts, each field from the host
// (the VPD's part number and serial, board_id, hca_type, numa_node, the
// ports' link layers, GUIDs and netdevs), the firmware staged for the
// next boot listed on both functions of the card until a reboot
// activates it; a Soft-RoCE device has no PCI address and no NUMA node.
func TestFacts(t *testing.T) {
	s := loadSchemas(t)
	dir := t.TempDir()
	h := matchHost(t, dir, "cx6-vpi-ib", 0, func(st *sim.State) { st.Devices[1].NUMANode = 1 })
	doc := s.check(t, "facts", "facts", runJSON(t, "", 0, "--sim", h, "facts", "-o", "json"))
	devs := doc["devices"].([]any)
	if len(devs) != 2 {
		t.Fatalf("facts: %d devices, want 2: %v", len(devs), doc)
	}
	want := map[string]any{
		"pci": "0000:3b:00.1", "rdma": "mlx5_1", "netdevs": []any{"ib1"}, "link_layers": []any{"InfiniBand"},
		"guids":      map[string]any{"node": "b859:9f03:0022:626f", "ports": map[string]any{"1": "0xb8599f030022626f"}},
		"fw_version": "20.35.1012", "psid": "MT_0000000222", "part_number": "MCX653106A-HDAT", "serial": "MT2028X01234",
		"model": "MT4123", "numa_node": 1.0, "pending": []any{}, "gpu_affinity": []any{}, "bridges": []any{},
	}
	if diff := cmp.Diff(want, devs[1]); diff != "" {
		t.Errorf("mlx5_1 (-want +got):\n%s", diff)
	}
	if n := devs[0].(map[string]any)["numa_node"]; n != 0.0 {
		t.Errorf("mlx5_0: numa_node %v, want 0", n)
	}
	// The text says the same: NUMA node 0 is a node (none is -1).
	wantText := `mlx5_0 (0000:3b:00.0)
  netdevs:     ib0
  link layers: InfiniBand
  node GUID:   b859:9f03:0022:626e
  firmware:    20.35.1012
  PSID:        MT_0000000222
  part number: MCX653106A-HDAT
  serial:      MT2028X01234
  model:       MT4123
  NUMA node:   0

mlx5_1 (0000:3b:00.1)
  netdevs:     ib1
  link layers: InfiniBand
  node GUID:   b859:9f03:0022:626f
  firmware:    20.35.1012
  PSID:        MT_0000000222
  part number: MCX653106A-HDAT
  serial:      MT2028X01234
  model:       MT4123
  NUMA node:   1
`
	if code, out, errs := runCLI(t, "--sim", h, "facts"); code != 0 || out != wantText {
		t.Errorf("facts text: exit %d, stderr %q\n%s", code, errs, cmp.Diff(wantText, out))
	}

	// Stage LINK_TYPE_P1=ETH: both functions of the card list it.
	spec := writeSpec(t, dir, "eth.yaml", "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params: {LINK_TYPE_P1: ETH}\n")
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 3 {
		t.Fatalf("apply: exit %d, want 3\n%s%s", code, out, errs)
	}
	doc = s.check(t, "facts, staged", "facts", runJSON(t, "", 0, "--sim", h, "facts", "-o", "json"))
	for _, d := range doc["devices"].([]any) {
		p := d.(map[string]any)["pending"].([]any)
		if len(p) != 1 || p[0].(map[string]any)["attribute"] != "LINK_TYPE_P1" || p[0].(map[string]any)["next_boot"] != "ETH" {
			t.Errorf("%s: pending %v, want LINK_TYPE_P1 -> ETH", d.(map[string]any)["rdma"], p)
		}
	}
	if code, out, _ := runCLI(t, "--sim", h, "facts"); code != 0 || strings.Count(out, "  pending:     firmware[0000:3b:00.0] LINK_TYPE_P1: IB -> ETH (next boot)\n") != 2 {
		t.Errorf("facts text, staged: exit %d; want the staged value on both functions\n%s", code, out)
	}
	if code, out, errs := runCLI(t, "sim", "reboot", h); code != 0 {
		t.Fatalf("sim reboot: %d\n%s%s", code, out, errs)
	}
	doc = s.check(t, "facts, rebooted", "facts", runJSON(t, "", 0, "--sim", h, "facts", "-o", "json"))
	d0 := doc["devices"].([]any)[0].(map[string]any)
	if len(d0["pending"].([]any)) != 0 || !cmp.Equal(d0["link_layers"], []any{"Ethernet"}) {
		t.Errorf("after the reboot: pending %v, link layers %v; want none and Ethernet", d0["pending"], d0["link_layers"])
	}
	if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 0 {
		t.Errorf("plan after apply and reboot: exit %d\n%s%s", code, out, errs)
	}

	soft := filepath.Join(dir, "soft")
	runJSON(t, "", 0, "sim", "new", soft, "--profile", "vm-soft")
	spec = writeSpec(t, dir, "rxe.yaml", "version: 1\nmodules: [rdma_rxe]\nrxe:\n  - {name: rxe0, netdev: enp1s0}\n")
	if code, out, errs := runCLI(t, "--sim", soft, "apply", "--yes", "-f", spec); code != 0 {
		t.Fatalf("apply rxe: exit %d\n%s%s", code, out, errs)
	}
	doc = s.check(t, "facts, Soft-RoCE", "facts", runJSON(t, "", 0, "--sim", soft, "facts", "-o", "json"))
	rxe := doc["devices"].([]any)[0].(map[string]any)
	if rxe["rdma"] != "rxe0" || rxe["pci"] != "" || rxe["numa_node"] != -1.0 || rxe["psid"] != "" {
		t.Errorf("rxe0: %v", rxe)
	}
	// Soft-RoCE: no PCI address, no NUMA node, nothing it lacks printed.
	if code, out, _ := runCLI(t, "--sim", soft, "facts"); code != 0 || !strings.HasPrefix(out, "rxe0 (no PCI address)\n  netdevs:     enp1s0\n  link layers: Ethernet\n") ||
		!strings.HasSuffix(out, "  NUMA node:   none\n") || strings.Contains(out, "PSID:") || strings.Contains(out, "firmware:") {
		t.Errorf("facts text, Soft-RoCE: exit %d\n%s", code, out)
	}
}
