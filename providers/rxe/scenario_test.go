package rxe_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/sim"
)

// rf runs rdmaform as a user would and returns its exit code and output.
func rf(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return clitest.Run(t, args...)
}

func newSim(t *testing.T, profile string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "host")
	if code, _, errs := rf(t, "sim", "new", dir, "--profile", profile); code != 0 {
		t.Fatalf("sim new: exit %d: %s", code, errs)
	}
	return dir
}

func writeSpec(t *testing.T, text string) string {
	t.Helper()
	return clitest.WriteSpec(t, text)
}

// jsonChange is the part of a JSON plan change a scenario compares.
type jsonChange struct {
	Address    string `json:"address"`
	Action     string `json:"action"`
	Activation string `json:"activation"`
	// plan.Attr reads typed values (106, true, null) back as text.
	Attributes []plan.Attr `json:"attributes"`
	DependsOn  []string    `json:"depends_on"`
}

// planJSON plans and returns the changes in a compact form, one a line:
// "action address activation name:before->after ... after:DEPS".
func planJSON(t *testing.T, dir, spec string, wantCode int) []string {
	t.Helper()
	code, out, errs := rf(t, "--sim", dir, "plan", "-f", spec, "-o", "json")
	if code != wantCode {
		t.Fatalf("plan: exit %d, want %d\n%s%s", code, wantCode, out, errs)
	}
	var p struct {
		Changes []jsonChange `json:"changes"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("plan JSON: %v\n%s", err, out)
	}
	var lines []string
	for _, c := range p.Changes {
		s := c.Action + " " + c.Address + " " + c.Activation
		for _, a := range c.Attributes {
			s += " " + a.Name + ":" + a.Before + "->" + a.After
		}
		if len(c.DependsOn) > 0 {
			s += " after:" + strings.Join(c.DependsOn, ",")
		}
		lines = append(lines, s)
	}
	return lines
}

// applyThenEmpty applies, then requires the plan to be empty.
func applyThenEmpty(t *testing.T, dir, spec string) {
	t.Helper()
	if code, out, errs := rf(t, "--sim", dir, "apply", "-f", spec, "--yes"); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := rf(t, "--sim", dir, "plan", "-f", spec); code != 0 || !strings.Contains(out, "No changes.") {
		t.Fatalf("plan after apply: exit %d, want 0 and no changes\n%s%s", code, out, errs)
	}
}

func rxeLinks(t *testing.T, dir string) map[string]string {
	t.Helper()
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range s.State().Devices {
		if d.Driver == "rxe" {
			out[d.Name] = d.Parent
		}
	}
	return out
}

// TestSoftRoCEOnAVM is seed 004's Soft-RoCE procedure on a VM with no
// adapter: rdma_rxe loaded and listed for boot, rxe0 on enp1s0, RoCE v2
// with ToS 106 on rxe0.
func TestSoftRoCEOnAVM(t *testing.T) {
	dir := newSim(t, "vm-soft")
	spec := writeSpec(t, `version: 1
modules: [rdma-rxe]
rxe:
  - name: rxe0
    netdev: enp1s0
devices:
  - name: rxe0
    ports:
      - port: 1
        roce: {mode: v2, tos: 106}
`)
	want := []string{
		"create module[rdma_rxe] now loaded:false->true load_at_boot:false->true",
		"create rxe[rxe0] runtime netdev:->enp1s0 after:module[rdma_rxe]",
		"create rdma_cm[rxe0/1] runtime mode:->v2 tos:->106 after:rxe[rxe0]",
	}
	if d := cmp.Diff(want, planJSON(t, dir, spec, 2)); d != "" {
		t.Errorf("plan (-want +got):\n%s", d)
	}
	applyThenEmpty(t, dir, spec)

	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st := s.State()
	if d := cmp.Diff(map[string]string{"rxe0": "enp1s0"}, rxeLinks(t, dir)); d != "" {
		t.Errorf("rxe links (-want +got):\n%s", d)
	}
	if !st.ModuleLoaded("rdma_rxe") {
		t.Errorf("rdma_rxe is not loaded: %v", st.Modules)
	}
	conf, err := os.ReadFile(filepath.Join(dir, "etc/modules-load.d/rdmaform.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if got := lastLines(string(conf)); !cmp.Equal([]string{"rdma_rxe"}, got) {
		t.Errorf("rdmaform.conf lists %v, want [rdma_rxe]:\n%s", got, conf)
	}
	parent, err := os.ReadFile(filepath.Join(dir, "sys/class/infiniband/rxe0/parent"))
	if err != nil || string(parent) != "enp1s0\n" {
		t.Errorf("sysfs rxe0/parent = %q, %v; want enp1s0", parent, err)
	}
}

func lastLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

// TestWrongNetdevReplaced: an rxe link bound to another netdev than the
// spec says is deleted and created again on the right one; then the spec
// removes it.
func TestWrongNetdevReplaced(t *testing.T) {
	dir := newSim(t, "cx5-roce")
	applyThenEmpty(t, dir, writeSpec(t, "version: 1\nrxe:\n  - name: rxe0\n    netdev: ens1f1np1\n"))
	if d := cmp.Diff(map[string]string{"rxe0": "ens1f1np1"}, rxeLinks(t, dir)); d != "" {
		t.Fatalf("setup (-want +got):\n%s", d)
	}

	spec := writeSpec(t, "version: 1\nrxe:\n  - name: rxe0\n    netdev: ens1f0np0\n")
	want := []string{"update rxe[rxe0] runtime netdev:ens1f1np1->ens1f0np0"}
	if d := cmp.Diff(want, planJSON(t, dir, spec, 2)); d != "" {
		t.Errorf("plan (-want +got):\n%s", d)
	}
	applyThenEmpty(t, dir, spec)
	if d := cmp.Diff(map[string]string{"rxe0": "ens1f0np0"}, rxeLinks(t, dir)); d != "" {
		t.Errorf("after apply (-want +got):\n%s", d)
	}

	gone := writeSpec(t, "version: 1\nrxe:\n  - name: rxe0\n    netdev: ens1f0np0\n    state: absent\n")
	if d := cmp.Diff([]string{"delete rxe[rxe0] runtime netdev:ens1f0np0->"}, planJSON(t, dir, gone, 2)); d != "" {
		t.Errorf("plan absent (-want +got):\n%s", d)
	}
	applyThenEmpty(t, dir, gone)
	if d := cmp.Diff(map[string]string{}, rxeLinks(t, dir)); d != "" {
		t.Errorf("after absent (-want +got):\n%s", d)
	}
}

// TestSwapAndEvict: two links swap netdevs, and a link takes the netdev of
// one the spec removes, whatever order their addresses sort in.
func TestSwapAndEvict(t *testing.T) {
	dir := newSim(t, "cx5-roce")
	applyThenEmpty(t, dir, writeSpec(t, "version: 1\nrxe:\n  - name: rxe0\n    netdev: ens1f0np0\n  - name: rxe1\n    netdev: ens1f1np1\n"))

	swap := writeSpec(t, "version: 1\nrxe:\n  - name: rxe0\n    netdev: ens1f1np1\n  - name: rxe1\n    netdev: ens1f0np0\n")
	applyThenEmpty(t, dir, swap)
	if d := cmp.Diff(map[string]string{"rxe0": "ens1f1np1", "rxe1": "ens1f0np0"}, rxeLinks(t, dir)); d != "" {
		t.Errorf("after swap (-want +got):\n%s", d)
	}

	// rxe[rxe0] applies before rxe[rxe1]'s delete and frees ens1f0np0 itself.
	take := writeSpec(t, "version: 1\nrxe:\n  - name: rxe0\n    netdev: ens1f0np0\n  - name: rxe1\n    netdev: ens1f0np0\n    state: absent\n")
	applyThenEmpty(t, dir, take)
	if d := cmp.Diff(map[string]string{"rxe0": "ens1f0np0"}, rxeLinks(t, dir)); d != "" {
		t.Errorf("after evict (-want +got):\n%s", d)
	}
}

// TestRoCEv1OnSoftRoCEIsAPlanError: rxe ports make RoCE v2 GIDs only and
// the kernel refuses RoCE v1 as their default (EINVAL, seen on 6.1); plan
// says so at the spec line, for a link that exists and for one the same
// plan creates. Removing a link needs no netdev; then plan is empty.
func TestRoCEv1OnSoftRoCEIsAPlanError(t *testing.T) {
	dir := newSim(t, "vm-soft")
	create := writeSpec(t, `version: 1
modules: [rdma_rxe]
rxe:
  - {name: rxe0, netdev: enp1s0}
devices:
  - name: rxe0
    ports:
      - port: 1
        roce: {mode: v1}
`)
	code, out, errs := rf(t, "--sim", dir, "plan", "-f", create)
	if code != 1 || !strings.Contains(out+errs, "host.yaml:9:22: error: $.devices[0].ports[0].roce.mode: rxe0 is a Soft-RoCE device") {
		t.Errorf("plan of v1 on an rxe link to be made: exit %d\n%s%s", code, out, errs)
	}
	up := writeSpec(t, "version: 1\nmodules: [rdma_rxe]\nrxe:\n  - {name: rxe0, netdev: enp1s0}\n")
	applyThenEmpty(t, dir, up)
	exists := writeSpec(t, "version: 1\ndevices:\n  - name: rxe0\n    ports:\n      - port: 1\n        roce: {mode: v1}\n")
	code, out, errs = rf(t, "--sim", dir, "plan", "-f", exists)
	if code != 1 || !strings.Contains(out+errs, "host.yaml:6:22: error: $.devices[0].ports[0].roce.mode: port 1 of rxe0 has no IB/RoCE v1 GID (its GID types: RoCE v2)") {
		t.Errorf("plan of v1 on an existing rxe link: exit %d\n%s%s", code, out, errs)
	}
	gone := writeSpec(t, "version: 1\nrxe:\n  - {name: rxe0, state: absent}\n")
	applyThenEmpty(t, dir, gone)
	if d := cmp.Diff(map[string]string{}, rxeLinks(t, dir)); d != "" {
		t.Errorf("rxe links after state: absent (-want +got):\n%s", d)
	}
}
