package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/sim"
)

// matchHost makes a simulated host of a profile in dir, letting mutate
// change its state first.
func matchHost(t *testing.T, dir, profile string, adapters int, mutate func(*sim.State)) string {
	t.Helper()
	st, err := sim.NewState(profile, "node1", adapters)
	if err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(st)
	}
	h := filepath.Join(dir, profile)
	if _, err := sim.Create(h, st); err != nil {
		t.Fatal(err)
	}
	return h
}

func writeSpec(t *testing.T, dir, name, spec string) string {
	t.Helper()
	f := filepath.Join(dir, name)
	if err := os.WriteFile(f, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// planAddresses plans spec on h and returns the addresses of its changes
// and pending items, sorted, with the exit code.
func planAddresses(t *testing.T, h, spec string) (int, []string) {
	t.Helper()
	code, out, errs := runCLI(t, "--sim", h, "plan", "-o", "json", "-f", spec)
	var p struct {
		Changes []struct{ Address string } `json:"changes"`
		Pending []struct{ Address string } `json:"pending"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("plan -o json: %v\n%s%s", err, out, errs)
	}
	var addrs []string
	for _, c := range p.Changes {
		addrs = append(addrs, c.Address)
	}
	for _, c := range p.Pending {
		addrs = append(addrs, "pending "+c.Address)
	}
	sort.Strings(addrs)
	return code, addrs
}

// TestMatchRoCE: one entry with match sets RoCE on every function of the
// matching card of a ConnectX-5 host (model and PSID, the kernel's
// hca_type and board_id), at the entry's lines; apply, then plan is
// empty, and the audit passes.
func TestMatchRoCE(t *testing.T) {
	dir := t.TempDir()
	h := matchHost(t, dir, "cx5-roce", 0, nil)
	spec := writeSpec(t, dir, "roce.yaml", `version: 1
devices:
  - match: {model: MT4119, psid: MT_0000000008}
    ports:
      - port: 1
        roce: {mode: v1, tos: 106}
`)
	code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec)
	if code != 2 {
		t.Fatalf("plan: exit %d, want 2\n%s%s", code, out, errs)
	}
	for _, want := range []string{"rdma_cm[mlx5_0/1]", "rdma_cm[mlx5_1/1]", spec + ":6:15"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 0 || !strings.Contains(out, "No changes") {
		t.Fatalf("plan after apply: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "audit", "-f", spec); code != 0 {
		t.Errorf("audit: exit %d\n%s%s", code, out, errs)
	}
}

// TestMatchClasses: a GPU node with two cards of one class and one of
// another: one spec, an entry per class (by part number, by PSID),
// selects each class's functions and stages each its firmware; apply,
// reboot, then plan is empty.
func TestMatchClasses(t *testing.T) {
	dir := t.TempDir()
	h := matchHost(t, dir, "gpu-node", 3, func(st *sim.State) {
		// The third card: another part number and PSID.
		for _, d := range st.Devices[4:6] {
			d.PartNumber, d.BoardID = "MCX75310AAS-NEAT", "MT_0000000839"
		}
	})
	spec := writeSpec(t, dir, "fleet.yaml", `version: 1
devices:
  - match: {part_number: MCX755106AS-HEAT}
    firmware:
      params: {SRIOV_EN: true, NUM_OF_VFS: 8}
  - match: {psid: MT_0000000839}
    firmware:
      params: {SRIOV_EN: true, NUM_OF_VFS: 4}
  - match: {psid: MT_9999999999}
    optional: true
    firmware:
      params: {SRIOV_EN: false}
`)
	code, got := planAddresses(t, h, spec)
	want := []string{"firmware[0000:10:00.0]", "firmware[0000:10:00.1]", "firmware[0000:20:00.0]", "firmware[0000:20:00.1]", "firmware[0000:30:00.0]", "firmware[0000:30:00.1]"}
	if code != 2 || !cmp.Equal(want, got) {
		t.Fatalf("plan: exit %d, changes %v, want 2 and %v", code, got, want)
	}
	_, out, _ := runCLI(t, "--sim", h, "plan", "-f", spec)
	if !strings.Contains(out, "NUM_OF_VFS: 0 -> 4") || !strings.Contains(out, "NUM_OF_VFS: 0 -> 8") {
		t.Errorf("plan does not stage each class its own NUM_OF_VFS:\n%s", out)
	}
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 3 {
		t.Fatalf("apply: exit %d, want 3 (staged)\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "sim", "reboot", h); code != 0 {
		t.Fatalf("sim reboot: exit %d\n%s%s", code, out, errs)
	}
	if code, got := planAddresses(t, h, spec); code != 0 || len(got) != 0 {
		t.Fatalf("plan after apply and reboot: exit %d, %v", code, got)
	}
}

// TestMatchErrors: what a match may not do, each a plan error at its
// line (exit 1, the host unchanged), and the limits of its values.
func TestMatchErrors(t *testing.T) {
	dir := t.TempDir()
	h := matchHost(t, dir, "cx5-roce", 0, nil)
	for _, tc := range []struct {
		name, spec string
		code       int
		want       string
	}{{
		name: "selects nothing",
		spec: "version: 1\ndevices:\n  - match: {part_number: MCX653106A-HDAT}\n    ports: [{port: 1, roce: {tos: 106}}]\n",
		code: 1,
		want: `:3:12: error: $.devices[0].match: no adapter on this host matches part_number MCX653106A-HDAT (found: mlx5_0 at 0000:5e:00.0: part_number "MCX516A-CCAT", psid "MT_0000000008", model "MT4119"; mlx5_1 at 0000:5e:00.1: part_number "MCX516A-CCAT", psid "MT_0000000008", model "MT4119")`,
	}, {
		name: "a model of another card",
		spec: "version: 1\ndevices:\n  - match: {model: MT4123, psid: MT_0000000008}\n    ports: [{port: 1, roce: {tos: 106}}]\n",
		code: 1,
		want: `:3:12: error: $.devices[0].match: no adapter on this host matches psid MT_0000000008, model MT4123 (found: `,
	}, {
		name: "selects nothing, optional",
		spec: "version: 1\ndevices:\n  - match: {part_number: MCX653106A-HDAT}\n    optional: true\n    ports: [{port: 1, roce: {tos: 106}}]\n",
		code: 0,
		want: "No changes",
	}, {
		name: "a match and a PCI address select one adapter",
		spec: "version: 1\ndevices:\n  - pci: \"0000:5e:00.0\"\n    ports: [{port: 1, roce: {tos: 106}}]\n  - match: {psid: MT_0000000008}\n    ports: [{port: 1, roce: {tos: 26}}]\n",
		code: 1,
		want: `:5:12: error: $.devices[1].match: mlx5_0 (0000:5e:00.0) is already selected by $.devices[0] at `,
	}, {
		name: "two matches select one adapter",
		spec: "version: 1\ndevices:\n  - match: {model: MT4119}\n    ports: [{port: 1, roce: {tos: 106}}]\n  - match: {psid: MT_0000000008}\n    ports: [{port: 1, roce: {tos: 26}}]\n",
		code: 1,
		want: `:5:12: error: $.devices[1].match: mlx5_0 (0000:5e:00.0) is already selected by $.devices[0] at `,
	}, {
		name: "a name and a PCI address select one adapter",
		spec: "version: 1\ndevices:\n  - pci: \"0000:5e:00.1\"\n    ports: [{port: 1, roce: {tos: 106}}]\n  - name: mlx5_1\n    ports: [{port: 1, roce: {tos: 26}}]\n",
		code: 1,
		want: `:5:11: error: $.devices[1].name: mlx5_1 (0000:5e:00.1) is already selected by $.devices[0] at `,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			spec := writeSpec(t, t.TempDir(), "spec.yaml", tc.spec)
			before, _ := os.ReadFile(filepath.Join(h, "sim.yaml"))
			code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec)
			if code != tc.code || !strings.Contains(out+errs, tc.want) {
				t.Errorf("plan: exit %d, want %d and %q\n%s%s", code, tc.code, tc.want, out, errs)
			}
			if tc.code == 1 {
				if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 1 {
					t.Errorf("apply: exit %d, want 1\n%s%s", code, out, errs)
				}
				if after, _ := os.ReadFile(filepath.Join(h, "sim.yaml")); string(after) != string(before) {
					t.Errorf("a refused apply changed the host")
				}
			}
		})
	}
}
