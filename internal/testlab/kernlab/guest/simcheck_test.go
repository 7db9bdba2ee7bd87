//go:build kernlab

package guest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSimMatchesKernel runs one Soft-RoCE scenario on the simulator (a
// vm-soft host, whose NIC is enp1s0) and on this kernel (a veth named
// enp1s0), and compares what rdmaform sees and decides: the sysfs values
// it reads, the GID types, the plan's resources and findings, and show's
// capture. The kernel is the truth; a difference is a simulator bug.
func TestSimMatchesKernel(t *testing.T) {
	veth(t, "enp1s0", "enp1s0p")
	simDir := filepath.Join(t.TempDir(), "sim")
	mustCode(t, 0, "sim", "new", simDir, "--profile", "vm-soft")

	spec := writeSpec(t, `version: 1
modules: [rdma_rxe]
rxe:
  - {name: rxe0, netdev: enp1s0}
devices:
  - name: rxe0
    ports:
      - port: 1
        roce: {mode: v2, tos: 106}
`)
	// Both sides converge the same way.
	for _, args := range [][]string{{}, {"--sim", simDir}} {
		mustCode(t, 0, append(args, "apply", "--yes", "-f", spec)...)
		out, _ := mustCode(t, 0, append(args, "plan", "-f", spec)...)
		if !strings.Contains(out, "No changes") {
			t.Fatalf("%v: plan after apply is not empty:\n%s", args, out)
		}
	}

	// The sysfs files rdmaform reads, byte for byte (GUIDs and addresses
	// differ by construction and are compared by shape).
	dev := "/sys/class/infiniband/rxe0"
	simDev := filepath.Join(simDir, dev)
	for _, f := range []string{"node_type", "fw_ver", "node_desc", "parent", "ports/1/state", "ports/1/phys_state", "ports/1/link_layer", "ports/1/lid", "ports/1/sm_lid", "ports/1/cap_mask"} {
		real, err := os.ReadFile(filepath.Join(dev, f))
		if err != nil {
			t.Errorf("kernel: %v", err)
			continue
		}
		sim, err := os.ReadFile(filepath.Join(simDev, f))
		if err != nil {
			t.Errorf("simulator: %v (the kernel has %s = %q)", err, f, real)
			continue
		}
		if string(real) != string(sim) {
			t.Errorf("%s: kernel %q, simulator %q", f, real, sim)
		}
	}
	// GID types of the entries in use, in order.
	gidTypes := func(root string) []string {
		var out []string
		for i := 0; i < 16; i++ {
			g, err := os.ReadFile(filepath.Join(root, "ports/1/gids", strconv.Itoa(i)))
			if err != nil || strings.TrimSpace(string(g)) == "0000:0000:0000:0000:0000:0000:0000:0000" {
				continue
			}
			typ, _ := os.ReadFile(filepath.Join(root, "ports/1/gid_attrs/types", strconv.Itoa(i)))
			out = append(out, strings.TrimSpace(string(typ)))
		}
		return out
	}
	// The simulated NIC has a DHCP address too; compare the link-local
	// entry's types and that every entry is RoCE v2.
	realTypes, simTypes := gidTypes(dev), gidTypes(simDev)
	if len(realTypes) == 0 || len(simTypes) == 0 || realTypes[0] != simTypes[0] {
		t.Errorf("GID types: kernel %v, simulator %v", realTypes, simTypes)
	}
	for _, ty := range simTypes {
		if ty != "RoCE v2" {
			t.Errorf("simulator GID types %v; the kernel's rxe has RoCE v2 only (%v)", simTypes, realTypes)
			break
		}
	}

	// The same bad request gets the same class of answer: RoCE v1 on an
	// rxe port is a plan error at the spec line on both.
	v1 := writeSpec(t, "version: 1\ndevices:\n  - name: rxe0\n    ports:\n      - port: 1\n        roce: {mode: v1}\n")
	for _, args := range [][]string{{}, {"--sim", simDir}} {
		code, out, errs := rdmaform(t, append(args, "plan", "-f", v1)...)
		if code != 1 || !strings.Contains(out+errs, "host.yaml:6:") {
			t.Errorf("%v: plan of RoCE v1 on rxe0: exit %d, want 1 with a finding at host.yaml:6", args, code)
		}
	}

	// show's capture of the RDMA side agrees.
	capture := func(args ...string) map[string]any {
		out, _ := mustCode(t, 0, append(args, "show", "-o", "json")...)
		var doc map[string]any
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%v: show -o json: %v\n%s", args, err, out)
		}
		keep := map[string]any{"rxe": doc["rxe"]}
		if devs, ok := doc["devices"].([]any); ok {
			for _, d := range devs {
				if m, ok := d.(map[string]any); ok && m["name"] == "rxe0" {
					keep["device"] = m
				}
			}
		}
		return keep
	}
	if d := cmp.Diff(capture(), capture("--sim", simDir)); d != "" {
		t.Errorf("show of rxe0 (-kernel +simulator):\n%s", d)
	}
	mustCode(t, 0, "apply", "--yes", "-f", writeSpec(t, "version: 1\nrxe:\n  - {name: rxe0, state: absent}\n"))
}
