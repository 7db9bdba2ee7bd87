package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/sim"
)

// activateHost is a simulated cx6-vpi-ib host (mlxconfig, mlxfwreset)
// with SR-IOV enabled in the firmware (and rebooted), mutated first.
func activateHost(t *testing.T, mutate func(st *sim.State)) (dir, h string) {
	t.Helper()
	dir = t.TempDir()
	h = filepath.Join(dir, "host")
	st, err := sim.NewState("cx6-vpi-ib", "node1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(st)
	}
	if _, err := sim.Create(h, st); err != nil {
		t.Fatal(err)
	}
	vf := filepath.Join(dir, "vf.yaml")
	writeActivateSpec(t, vf, "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params: {SRIOV_EN: true, NUM_OF_VFS: 4}\n")
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", vf); code != 3 {
		t.Fatalf("apply SR-IOV: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := runCLI(t, "sim", "reboot", h); code != 0 {
		t.Fatalf("sim reboot: %s", errs)
	}
	return dir, h
}

func writeActivateSpec(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ethSpec switches port 1 to Ethernet with two VFs and RoCE settings on
// the new netdev.
const ethSpec = `version: 1
devices:
  - pci: "0000:3b:00.0"
    firmware:
      params: {SRIOV_EN: true, NUM_OF_VFS: 4, LINK_TYPE_P1: ETH}
    sriov:
      num_vfs: 2
`

func numVFs(t *testing.T, h string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h, "sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestActivateFWResetWithVFs: LINK_TYPE_P1=ETH is staged on a card with
// two VFs; activate resets the card (mlxfwreset at level 3): the VFs are
// set to 0 first (the reset would be refused with them: a vfs fault) and
// are back afterwards, the port runs Ethernet, the plan is empty, exit 0,
// and the JSON document says so.
func TestActivateFWResetWithVFs(t *testing.T) {
	dir, h, spec := stagedEthHost(t)
	if n := numVFs(t, h); n != "2" {
		t.Fatalf("sriov_numvfs %s before activate, want 2", n)
	}
	if code, _, errs := runCLI(t, "sim", "fault", h, "--reset", "vfs"); code != 0 {
		t.Fatal(errs)
	}
	calls := filepath.Join(dir, "calls")
	code, out, errs := runCLIEnv(t, []string{"RDMAFORM_SIM_CALLS=" + calls}, "--sim", h, "activate", "-f", spec, "-o", "json")
	if code != 0 {
		t.Fatalf("activate: exit %d, want 0\n%s%s", code, out, errs)
	}
	loadSchemas(t).check(t, "activate -o json", "activate", out)
	var doc struct {
		By    string `json:"by"`
		Cards []struct {
			Card, By, Result string
			Level            int
			VFs              map[string]int `json:"vfs"`
		} `json:"cards"`
		Pending []any `json:"pending"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.By != "fw-reset" || len(doc.Cards) != 1 || doc.Cards[0].Card != "0000:3b:00" || doc.Cards[0].Result != "reset" ||
		doc.Cards[0].Level != 3 || doc.Cards[0].VFs["0000:3b:00.0"] != 2 || len(doc.Pending) != 0 {
		t.Errorf("activate -o json:\n%s", out)
	}
	c, _ := os.ReadFile(calls)
	if strings.Count(string(c), "mlxfwreset -d 0000:3b:00.0 reset -y --level 3") != 1 {
		t.Errorf("want one reset of the card, calls:\n%s", c)
	}
	if n := numVFs(t, h); n != "2" {
		t.Errorf("sriov_numvfs %s after activate, want 2 (restored)", n)
	}
	if ll, _ := os.ReadFile(filepath.Join(h, "sys/class/infiniband/mlx5_0/ports/1/link_layer")); strings.TrimSpace(string(ll)) != "Ethernet" {
		t.Errorf("link_layer %q after activate, want Ethernet", ll)
	}
	if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 0 {
		t.Errorf("plan after activate: exit %d, want 0\n%s%s", code, out, errs)
	}
}

// TestActivateRestoresVFSettings: a VF's MAC, set outside the spec, is
// the same after the reset (the spec stages a value that keeps the link
// layer, so the VFs are of the same kind).
func TestActivateRestoresVFSettings(t *testing.T) {
	dir, h := activateHost(t, nil)
	spec := filepath.Join(dir, "vfs8.yaml")
	writeActivateSpec(t, spec, "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params: {SRIOV_EN: true, NUM_OF_VFS: 8}\n    sriov:\n      num_vfs: 2\n")
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 3 {
		t.Fatalf("apply: exit %d, want 3\n%s%s", code, out, errs)
	}
	s, err := sim.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	hh, err := s.Host()
	if err != nil {
		t.Fatal(err)
	}
	const guid = "11:22:33:44:55:66:77:88"
	if err := hh.Net.LinkSetVF("ib0", 1, host.VFConfig{NodeGUID: guid, PortGUID: guid}); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI(t, "--sim", h, "activate", "--by", "fw-reset", "-f", spec); code != 0 || !strings.Contains(out, "VFs restored: 0000:3b:00.0 2") {
		t.Fatalf("activate: exit %d, want 0\n%s%s", code, out, errs)
	}
	s, err = sim.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	d := s.State().DeviceByPCI("0000:3b:00.0")
	if d.SRIOV == nil || len(d.SRIOV.VFs) != 2 || d.SRIOV.VFs[1].PortGUID != guid {
		t.Errorf("VFs after activate: %+v, want VF 1 with port GUID %s", d.SRIOV, guid)
	}
	if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 0 {
		t.Errorf("plan after activate: exit %d, want 0\n%s%s", code, out, errs)
	}
}

// TestActivateRefusedForHolder: while NVMe over RDMA holds the RDMA core
// a firmware reset is refused, named, and nothing changes (the value is
// still pending, the VFs are there); --force resets; then the plan is
// empty.
func TestActivateRefusedForHolder(t *testing.T) {
	_, h, spec := stagedEthHost(t)
	if code, out, errs := runCLI(t, "sim", "tool", h, "--", "modprobe", "nvme_rdma"); code != 0 {
		t.Fatalf("modprobe: %s%s", out, errs)
	}
	code, out, errs := runCLI(t, "--sim", h, "activate", "--by", "fw-reset", "-f", spec)
	if code != 1 || !strings.Contains(out+errs, "nvme_rdma (NVMe over RDMA (initiator))") || !strings.Contains(out+errs, "Nothing was changed") || !strings.Contains(out+errs, "--force") {
		t.Errorf("activate with nvme_rdma: exit %d, want 1 naming it\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 3 || numVFs(t, h) != "2" {
		t.Errorf("after the refusal: plan exit %d (want 3: still pending), VFs %s\n%s%s", code, numVFs(t, h), out, errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "activate", "--force", "-f", spec); code != 0 {
		t.Errorf("activate --force: exit %d, want 0\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 0 {
		t.Errorf("plan after activate: exit %d, want 0\n%s%s", code, out, errs)
	}
}

// TestActivatePowerCycle: firmware that reports no reset level can only
// be activated by a power cycle: activate says so, changes nothing,
// exits 1, with and without --by fw-reset. The fault gone (the host was
// power-cycled into firmware that resets), activate activates; then the
// plan is empty.
func TestActivatePowerCycle(t *testing.T) {
	dir, h, spec := stagedEthHost(t)
	if code, _, errs := runCLI(t, "sim", "fault", h, "--reset", "power-cycle"); code != 0 {
		t.Fatal(errs)
	}
	for _, args := range [][]string{{"activate", "-f", spec}, {"activate", "--by", "fw-reset", "-f", spec}, {"activate"}} {
		calls := filepath.Join(dir, "calls")
		_ = os.Remove(calls)
		code, out, errs := runCLIEnv(t, []string{"RDMAFORM_SIM_CALLS=" + calls}, append([]string{"--sim", h}, args...)...)
		if code != 1 || !strings.Contains(out+errs, "only a power cycle") || !strings.Contains(out+errs, "There is no supported reset-level") {
			t.Errorf("%v: exit %d, want 1 naming the power cycle\n%s%s", args, code, out, errs)
		}
		if c, _ := os.ReadFile(calls); strings.Contains(string(c), " reset ") {
			t.Errorf("%v reset a card:\n%s", args, c)
		}
	}
	if code, _, errs := runCLI(t, "sim", "fault", h, "--clear"); code != 0 {
		t.Fatal(errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "activate", "-f", spec); code != 0 {
		t.Errorf("activate: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 0 {
		t.Errorf("plan after activate: exit %d, want 0\n%s%s", code, out, errs)
	}
}

// TestActivateLeavesRebootOnly: a card whose firmware resets only by a
// warm reboot (level 4) is left by --by fw-reset (exit 3: a reboot is
// still needed); without --by the cheapest way is the reboot, which
// --by reboot --yes makes; then the plan is empty. Without --yes and a
// terminal, the reboot is refused and nothing changes.
func TestActivateLeavesRebootOnly(t *testing.T) {
	dir, h := activateHost(t, func(st *sim.State) {
		for _, a := range st.Firmware {
			a.ResetLevels = []int{4}
		}
	})
	spec := filepath.Join(dir, "eth.yaml")
	writeActivateSpec(t, spec, ethSpec)
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 3 || !strings.Contains(out, "after reboot") {
		t.Fatalf("apply: exit %d, want 3 with the item after reboot\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "activate", "--by", "fw-reset", "-f", spec); code != 3 || !strings.Contains(out, "left for a reboot") {
		t.Errorf("activate --by fw-reset: exit %d, want 3\n%s%s", code, out, errs)
	}
	boot, _ := os.ReadFile(filepath.Join(h, "proc/sys/kernel/random/boot_id"))
	if code, out, errs := runCLI(t, "--sim", h, "activate", "-f", spec); code != 1 || !strings.Contains(out+errs, "--yes") {
		t.Errorf("activate (a reboot) without --yes: exit %d, want 1\n%s%s", code, out, errs)
	}
	if now, _ := os.ReadFile(filepath.Join(h, "proc/sys/kernel/random/boot_id")); string(now) != string(boot) {
		t.Fatal("the host rebooted without --yes")
	}
	if code, out, errs := runCLI(t, "--sim", h, "activate", "--by", "reboot", "--yes", "-f", spec); code != 0 || !strings.Contains(out, "Reboot started.") {
		t.Errorf("activate --by reboot --yes: exit %d\n%s%s", code, out, errs)
	}
	if now, _ := os.ReadFile(filepath.Join(h, "proc/sys/kernel/random/boot_id")); string(now) == string(boot) {
		t.Error("activate --by reboot did not reboot")
	}
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 0 {
		t.Errorf("apply after the reboot: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 0 {
		t.Errorf("plan after the reboot: exit %d, want 0\n%s%s", code, out, errs)
	}
}

// TestActivateRefusesBlueField: a BlueField DPU is not reset.
func TestActivateRefusesBlueField(t *testing.T) {
	dir, h := activateHost(t, func(st *sim.State) {
		for _, d := range st.Devices {
			d.PCIID = "0xa2d6"
		}
	})
	spec := filepath.Join(dir, "eth.yaml")
	writeActivateSpec(t, spec, ethSpec)
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 3 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := runCLI(t, "--sim", h, "activate", "--by", "fw-reset", "-f", spec)
	if code != 1 || !strings.Contains(out+errs, "BlueField-2 DPU") || !strings.Contains(out+errs, "--by reboot") {
		t.Errorf("activate on a BlueField: exit %d, want 1\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "activate", "--by", "reboot", "--yes", "-f", spec); code != 0 {
		t.Errorf("activate --by reboot: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 0 {
		t.Errorf("apply after the reboot: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 0 {
		t.Errorf("plan: exit %d, want 0\n%s%s", code, out, errs)
	}
}

// TestActivateFlagLimits: --wait at its limits and one past them, --by's
// values, --confirm-timeout refused with the reason, --force with --by
// reboot; on a host with nothing staged.
func TestActivateFlagLimits(t *testing.T) {
	h := filepath.Join(t.TempDir(), "host")
	if code, _, errs := runCLI(t, "sim", "new", h, "--profile", "cx6-vpi-ib"); code != 0 {
		t.Fatal(errs)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 0, "Nothing is staged"},
		{[]string{"--wait", "1s"}, 0, "Nothing is staged"},
		{[]string{"--wait", "999ms"}, 1, "--wait 999ms: between 1s and 1h0m0s"},
		{[]string{"--wait", "1h"}, 0, "Nothing is staged"},
		{[]string{"--wait", "1h0m1s"}, 1, "--wait 1h0m1s: between 1s and 1h0m0s"},
		{[]string{"--by", "fw-reset"}, 0, "Nothing is staged"},
		{[]string{"--by", "reboot"}, 0, "Nothing is staged"},
		{[]string{"--by", "power-cycle"}, 1, "cannot power-cycle"},
		{[]string{"--by", "kexec"}, 1, `--by "kexec": the ways are fw-reset and reboot`},
		// An empty way is refused, not read as the default.
		{[]string{"--by", ""}, 1, `--by "": the ways are fw-reset and reboot`},
		{[]string{"--by="}, 1, `--by "": the ways are fw-reset and reboot`},
		{[]string{"--confirm-timeout", "5m"}, 1, "a firmware reset cannot be undone"},
		{[]string{"--by", "reboot", "--force"}, 1, "a reboot has none"},
		{[]string{"--force"}, 0, "Nothing is staged"},
	} {
		code, out, errs := runCLI(t, append([]string{"--sim", h, "activate"}, tt.args...)...)
		if code != tt.code || !strings.Contains(out+errs, tt.want) {
			t.Errorf("activate %v: exit %d, want %d with %q\n%s%s", tt.args, code, tt.code, tt.want, out, errs)
		}
	}
}

// TestDocsActivate runs the console example of docs/guides/firmware.md's
// "Activating staged changes" on a copy of examples/hosts/cx6-vpi-ib: each command
// exits as its "# exit N" says and prints every line shown under it.
func TestDocsActivate(t *testing.T) {
	readme, err := os.ReadFile("../docs/guides/firmware.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	i := strings.Index(text, "\n## Activating staged changes\n")
	if i < 0 {
		t.Fatal(`docs/guides/firmware.md has no section "Activating staged changes"`)
	}
	text = text[i:]
	c := strings.Index(text, "```console run\n")
	if c < 0 {
		t.Fatal("the section has no console example")
	}
	block := text[c+len("```console run\n"):]
	block = block[:strings.Index(block, "```")]
	dir := t.TempDir()
	h := copyHost(t, "examples/hosts/cx6-vpi-ib", dir)
	type step struct {
		args []string
		exit int
		want []string
	}
	var steps []*step
	for _, l := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
		cmd, ok := strings.CutPrefix(l, "$ ")
		if !ok {
			if len(steps) == 0 {
				t.Fatalf("output before a command: %q", l)
			}
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, l)
			continue
		}
		if strings.HasPrefix(cmd, "cp -r ") {
			continue // copyHost made the host
		}
		cmd, exit, _ := strings.Cut(cmd, "# exit ")
		f := strings.Fields(cmd)
		if len(f) < 3 || f[0] != "bin/rdmaform" || f[1] != "--sim" || f[2] != "/tmp/node9" {
			t.Fatalf("unexpected command %q", cmd)
		}
		args := []string{"--sim", h}
		for _, a := range f[3:] {
			if strings.HasPrefix(a, "examples/") {
				a = filepath.Join("..", a)
			}
			args = append(args, a)
		}
		n, err := strconv.Atoi(strings.TrimSpace(exit))
		if err != nil {
			t.Fatalf("%q: no '# exit N'", l)
		}
		steps = append(steps, &step{args: args, exit: n})
	}
	if len(steps) != 3 {
		t.Fatalf("%d commands in the example, want apply, activate, plan", len(steps))
	}
	for _, s := range steps {
		code, out, errs := runCLI(t, s.args...)
		if code != s.exit {
			t.Errorf("%v: exit %d, the docs say %d\n%s%s", s.args[2:], code, s.exit, out, errs)
		}
		for _, w := range s.want {
			if w == "..." {
				continue // lines left out
			}
			if !strings.Contains(out, w+"\n") {
				t.Errorf("%v: no line %q in its output:\n%s", s.args[2:], w, out)
			}
		}
	}
}

// TestActivatePowerCycleSaidBySet: the card's firmware refuses the warm
// boot trigger, so mlxconfig's set says "Please power cycle machine to
// load new configurations." (mstflint's loadConfigurationGetStr). The
// ledger records it; the pending item says "after power-cycle" in plan,
// apply and status, although the reset query lists level 3; activate
// resets nothing (exit 1); after a warm reboot that did not reload the
// firmware, the activation failure says to power-cycle (not to reset or
// reboot), and activate still refuses; a cold boot activates it, then
// apply and plan are empty.
func TestActivatePowerCycleSaidBySet(t *testing.T) {
	dir, h := activateHost(t, func(st *sim.State) {
		for _, a := range st.Firmware {
			a.WarmBootRefused = true
		}
	})
	spec := filepath.Join(dir, "eth.yaml")
	writeActivateSpec(t, spec, ethSpec)
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 3 || !strings.Contains(out, "LINK_TYPE_P1 staged for next boot (current IB, next ETH), after power-cycle") {
		t.Fatalf("apply: exit %d, want 3 with the item after power-cycle\n%s%s", code, out, errs)
	}
	if b, _ := os.ReadFile(filepath.Join(h, "var/lib/rdmaform/staged.json")); !strings.Contains(string(b), `"activation": "power-cycle"`) {
		t.Errorf("the ledger does not record the tool's power cycle notice:\n%s", b)
	}
	s := loadSchemas(t)
	for _, args := range [][]string{{"plan", "-o", "json", "-f", spec}, {"status", "-o", "json", "-f", spec}, {"status", "-o", "json"}} {
		name := args[0]
		doc := s.check(t, name, name, runJSON(t, "", 3, append([]string{"--sim", h}, args...)...))
		found := false
		for _, p := range doc["pending"].([]any) {
			pe := p.(map[string]any)
			if pe["attribute"] != "LINK_TYPE_P1" {
				continue
			}
			found = true
			act, _ := pe["activation"].(map[string]any)
			if act["by"] != "power-cycle" || !strings.Contains(act["why"].(string), "Please power cycle machine to load new configurations.") {
				t.Errorf("%v: LINK_TYPE_P1's activation %v, want power-cycle because the tool said so", args, act)
			}
		}
		if !found {
			t.Errorf("%v: no pending LINK_TYPE_P1", args)
		}
	}
	if code, out, errs := runCLI(t, "--sim", h, "status"); code != 3 || !strings.Contains(out, "waits for a power cycle (mlxconfig said so when it staged it)") {
		t.Errorf("status: exit %d, want 3 with the ledger entry waiting for a power cycle\n%s%s", code, out, errs)
	}
	noReset := func(args ...string) {
		t.Helper()
		calls := filepath.Join(dir, "calls")
		_ = os.Remove(calls)
		code, out, errs := runCLIEnv(t, []string{"RDMAFORM_SIM_CALLS=" + calls}, append([]string{"--sim", h}, args...)...)
		if code != 1 || !strings.Contains(out+errs, "only a power cycle") || !strings.Contains(out+errs, "Please power cycle machine") {
			t.Errorf("%v: exit %d, want 1 naming the tool's power cycle notice\n%s%s", args, code, out, errs)
		}
		if c, _ := os.ReadFile(calls); strings.Contains(string(c), " reset ") {
			t.Errorf("%v reset a card:\n%s", args, c)
		}
	}
	noReset("activate", "-f", spec)
	noReset("activate", "--by", "fw-reset", "-f", spec)
	if code, _, errs := runCLI(t, "sim", "reboot", h, "--keep-firmware"); code != 0 {
		t.Fatal(errs)
	}
	code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec)
	if code != 1 || !strings.Contains(out+errs, `when mlxconfig said "Please power cycle machine to load new configurations."`) ||
		!strings.Contains(out+errs, "power-cycle the host") || strings.Contains(out+errs, "mstfwreset -d") {
		t.Errorf("plan after a warm reboot: exit %d, want 1 saying to power-cycle (not to reset)\n%s%s", code, out, errs)
	}
	st := s.check(t, "status", "status", runJSON(t, "", 1, "--sim", h, "status", "-o", "json", "-f", spec))
	afs, _ := st["activation_failures"].([]any)
	if len(afs) != 1 || afs[0].(map[string]any)["activation"].(map[string]any)["by"] != "power-cycle" {
		t.Errorf("status -f: activation_failures %v, want LINK_TYPE_P1's with activation power-cycle", afs)
	}
	noReset("activate", "-f", spec)
	if code, _, errs := runCLI(t, "sim", "reboot", h); code != 0 {
		t.Fatal(errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 0 {
		t.Errorf("apply after the cold boot: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 0 {
		t.Errorf("plan after the cold boot: exit %d, want 0\n%s%s", code, out, errs)
	}
}

// TestActivateRefusedForRDMAUsers: kernel users of RDMA that hold no
// module of their own in ib_core's holders are found where the kernel
// shows them, and a firmware reset is refused, naming each, with nothing
// changed: an NFS mount over RDMA (/proc/mounts), an NVMe over RDMA
// controller (/sys/class/nvme/*/transport), an rdma_cm ID a kernel user
// holds (`rdma -j resource show cm_id`, when rdma is installed). An NVMe
// controller over TCP, or a kernel cm_id with no rdma tool to show it,
// is not refused. --force resets; then the plan is empty.
func TestActivateRefusedForRDMAUsers(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(st *sim.State)
		want   string // "" : not refused
	}{
		{"nfs", func(st *sim.State) {
			st.Mounts = append(st.Mounts, sim.Mount{Device: "10.0.0.1:/export", Dir: "/mnt/data", Type: "nfs4", Options: "rw,relatime,vers=4.2,proto=rdma,port=20049,timeo=600,retrans=2,sec=sys,addr=10.0.0.1"})
		}, "NFS over RDMA mount 10.0.0.1:/export on /mnt/data (/proc/mounts: proto=rdma)"},
		{"nfs-tcp", func(st *sim.State) {
			st.Mounts = append(st.Mounts, sim.Mount{Device: "10.0.0.1:/export", Dir: "/mnt/data", Type: "nfs4", Options: "rw,relatime,vers=4.2,proto=tcp,port=0"})
		}, ""},
		{"nvme", func(st *sim.State) {
			st.NVMe = append(st.NVMe, sim.NVMeController{Name: "nvme0", Transport: "pcie"}, sim.NVMeController{Name: "nvme1", Transport: "rdma"})
		}, "NVMe over RDMA controller nvme1 (/sys/class/nvme/nvme1/transport: rdma)"},
		{"nvme-tcp", func(st *sim.State) {
			st.NVMe = append(st.NVMe, sim.NVMeController{Name: "nvme1", Transport: "tcp"})
		}, ""},
		{"cm_id", func(st *sim.State) {
			st.Tools = append(st.Tools, "rdma")
			st.KernelCMIDs = append(st.KernelCMIDs, sim.CMID{Dev: "mlx5_0", Port: 1, Comm: "ko2iblnd", State: "CONNECT", PS: "TCP", SrcAddr: "10.0.0.2:987"})
		}, "ko2iblnd (Lustre LNet (o2ib)) on mlx5_0/1 (rdma resource show cm_id)"},
		{"cm_id-no-rdma-tool", func(st *sim.State) {
			st.KernelCMIDs = append(st.KernelCMIDs, sim.CMID{Dev: "mlx5_0", Port: 1, Comm: "ko2iblnd", State: "CONNECT", PS: "TCP", SrcAddr: "10.0.0.2:987"})
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, h := activateHost(t, c.mutate)
			spec := filepath.Join(dir, "eth.yaml")
			writeActivateSpec(t, spec, ethSpec)
			if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 3 {
				t.Fatalf("apply: exit %d\n%s%s", code, out, errs)
			}
			args := []string{"--sim", h, "activate", "--by", "fw-reset", "-f", spec}
			if c.want != "" {
				code, out, errs := runCLI(t, args...)
				if code != 1 || !strings.Contains(out+errs, c.want) || !strings.Contains(out+errs, "Nothing was changed") || !strings.Contains(out+errs, "--force") {
					t.Errorf("activate: exit %d, want 1 naming %q\n%s%s", code, c.want, out, errs)
				}
				if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 3 || numVFs(t, h) != "2" {
					t.Errorf("after the refusal: plan exit %d (want 3: still pending), VFs %s\n%s%s", code, numVFs(t, h), out, errs)
				}
				args = append(args, "--force")
			}
			if code, out, errs := runCLI(t, args...); code != 0 {
				t.Errorf("%v: exit %d, want 0\n%s%s", args[2:], code, out, errs)
			}
			if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 0 {
				t.Errorf("plan after activate: exit %d, want 0\n%s%s", code, out, errs)
			}
		})
	}
}

// stagedEthHost is an activateHost with ethSpec (eth.yaml in dir) applied:
// LINK_TYPE_P1=ETH staged for the next activation (apply exit 3).
func stagedEthHost(t *testing.T) (dir, h, spec string) {
	t.Helper()
	dir, h = activateHost(t, nil)
	spec = filepath.Join(dir, "eth.yaml")
	writeActivateSpec(t, spec, ethSpec)
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 3 {
		t.Fatalf("apply: exit %d, want 3\n%s%s", code, out, errs)
	}
	return dir, h, spec
}

// TestActivateWithoutSpecSettles: activate without -f resets the card;
// what was staged runs now, so nothing waits for a reboot: the staged
// ledger has no entry left, /run/reboot-required is gone, and status
// exits 0.
func TestActivateWithoutSpecSettles(t *testing.T) {
	_, h, _ := stagedEthHost(t)
	if !exists(filepath.Join(h, "run/reboot-required")) || len(ledgerParams(t, h)) == 0 {
		t.Fatal("apply left no reboot marker or ledger entry")
	}
	if code, out, errs := runCLI(t, "--sim", h, "activate", "--by", "fw-reset"); code != 0 || !strings.Contains(out, "Every staged value is current.") {
		t.Fatalf("activate: exit %d, want 0\n%s%s", code, out, errs)
	}
	if exists(filepath.Join(h, "run/reboot-required")) {
		t.Error("/run/reboot-required is left after the activation")
	}
	if got := ledgerParams(t, h); len(got) != 0 {
		t.Errorf("ledger after the activation: %v, want empty", got)
	}
	if code, out, errs := runCLI(t, "--sim", h, "status"); code != 0 || !strings.Contains(out, "Nothing waits for a reboot.") {
		t.Errorf("status after the activation: exit %d, want 0\n%s%s", code, out, errs)
	}
}

// TestActivateNamesTheLockHolder: while another process holds the host's
// apply lock, activate says who holds it (as the holder recorded it: pid,
// command, since when) before it waits, and names it again when it gives
// up after --lock-timeout.
func TestActivateNamesTheLockHolder(t *testing.T) {
	h := filepath.Join(t.TempDir(), "host")
	if code, _, errs := runCLI(t, "sim", "new", h, "--profile", "cx6-vpi-ib"); code != 0 {
		t.Fatal(errs)
	}
	s, err := sim.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	hh, err := s.Host()
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := hh.LockWaiting(context.Background(), time.Second, "rdmaform activate --by fw-reset", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	code, out, errs := runCLI(t, "--sim", h, "activate", "--lock-timeout", "1s")
	holder := fmt.Sprintf("pid %d, rdmaform activate --by fw-reset, since ", os.Getpid())
	if code != 1 || !strings.Contains(errs, "waiting up to 1s for the host's apply lock ("+host.LockFile+"), held by "+holder) {
		t.Errorf("activate beside a holder: exit %d, want 1 naming %q before the wait\n%s%s", code, holder, out, errs)
	}
	if !strings.Contains(errs, "held by "+holder) || strings.Count(errs, holder) < 2 {
		t.Errorf("activate's timeout does not name the holder %q\n%s", holder, errs)
	}
}

// TestActivateByRebootSaysWhatIsLost: activate --by reboot --yes on a
// host without rdmaform's boot unit does not promise that a boot unit
// applies the runtime state: it says there is none and names what the
// reboot loses (the two VFs), text and JSON; after the reboot the plan
// indeed shows the VFs again (exit 2), and the apply it names converges.
// With the boot unit installed and enabled (persistence: boot-unit), it
// names the unit instead.
func TestActivateByRebootSaysWhatIsLost(t *testing.T) {
	for _, output := range []string{"text", "json"} {
		t.Run(output, func(t *testing.T) {
			dir, h, spec := stagedEthHost(t)
			if n := numVFs(t, h); n != "2" {
				t.Fatalf("sriov_numvfs %s, want 2", n)
			}
			code, out, errs := runCLI(t, "--sim", h, "activate", "--by", "reboot", "--yes", "-f", spec, "-o", output)
			if code != 0 {
				t.Fatalf("activate --by reboot --yes: exit %d\n%s%s", code, out, errs)
			}
			lost := "the 2 VFs of 0000:3b:00.0 (mlx5_0) and their settings"
			if output == "json" {
				loadSchemas(t).check(t, "activate -o json", "activate", out)
				var doc struct {
					Lost []string `json:"lost"`
				}
				if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Lost) != 2 || doc.Lost[0] != lost {
					t.Errorf("activate -o json: %v, want lost [%q, the runtime settings]\n%s", err, lost, out)
				}
			} else {
				for _, w := range []string{"This host has no enabled boot unit", lost, "After the boot, rdmaform --sim " + h + " apply -f " + spec + " sets"} {
					if !strings.Contains(out, w) {
						t.Errorf("activate --by reboot: want %q in\n%s", w, out)
					}
				}
				if strings.Contains(out, "the boot unit applies") {
					t.Errorf("activate --by reboot promises a boot unit the host lacks:\n%s", out)
				}
			}
			if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 2 || !strings.Contains(out, "sriov[0000:3b:00.0]") {
				t.Errorf("plan after the reboot: exit %d, want 2 with the VFs lost\n%s%s", code, out, errs)
			}
			if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 0 {
				t.Errorf("apply after the reboot: exit %d\n%s%s", code, out, errs)
			}
			if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 0 {
				t.Errorf("plan at the end: exit %d\n%s%s", code, out, errs)
			}

			// With the boot unit: a spec that stages again, keeps the two
			// VFs and installs the unit. The simulated reboot runs it, as
			// systemd does at boot: the VFs are back, the plan is empty.
			unit := filepath.Join(dir, "unit.yaml")
			writeActivateSpec(t, unit, "version: 1\npersistence: boot-unit\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params: {SRIOV_EN: true, NUM_OF_VFS: 4, LINK_TYPE_P1: IB}\n    sriov:\n      num_vfs: 2\n")
			if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", unit); code != 3 {
				t.Fatalf("apply with the boot unit: exit %d, want 3\n%s%s", code, out, errs)
			}
			code, out, errs = runCLI(t, "--sim", h, "activate", "--by", "reboot", "--yes", "-f", unit, "-o", output)
			if output == "json" {
				loadSchemas(t).check(t, "activate -o json", "activate", out)
				if code != 0 || strings.Contains(out, `"lost"`) || !strings.Contains(errs, "rdmaform.service: started") {
					t.Errorf("activate --by reboot -o json with the boot unit: exit %d, want 0, nothing lost, the unit's lines on stderr\n%s%s", code, out, errs)
				}
			} else if code != 0 || !strings.Contains(out, "the boot unit (rdmaform.service, with /etc/rdmaform/boot.yaml) applies the runtime state again") ||
				strings.Contains(out, "no enabled boot unit") || !strings.Contains(out, "rdmaform.service: started") {
				t.Errorf("activate --by reboot with the boot unit: exit %d\n%s%s", code, out, errs)
			}
			if n := numVFs(t, h); n != "2" {
				t.Errorf("sriov_numvfs %s after the reboot with the boot unit, want 2", n)
			}
			if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", unit); code != 0 {
				t.Errorf("plan after the reboot with the boot unit: exit %d, want 0\n%s%s", code, out, errs)
			}
		})
	}
}

// TestActivateRefusesEveryBlueField: each BlueField generation's PCI
// device ID (the kernel writes it in lower case; an upper-case one is the
// same ID) is refused by name, nothing changed (the value is still
// pending); a ConnectX-6 beside them (0x101b) and a device ID one off a
// BlueField's (0xa2d3) are reset.
func TestActivateRefusesEveryBlueField(t *testing.T) {
	for _, tc := range []struct{ id, name string }{
		{"0xa2d2", "BlueField"}, {"0xa2d6", "BlueField-2"}, {"0xa2dc", "BlueField-3"}, {"0xA2DC", "BlueField-3"},
		{"0x101b", ""}, {"0xa2d3", ""},
	} {
		t.Run(tc.id, func(t *testing.T) {
			dir, h := activateHost(t, func(st *sim.State) {
				for _, d := range st.Devices {
					d.PCIID = tc.id
				}
			})
			spec := filepath.Join(dir, "eth.yaml")
			writeActivateSpec(t, spec, ethSpec)
			if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 3 {
				t.Fatalf("apply: exit %d\n%s%s", code, out, errs)
			}
			code, out, errs := runCLI(t, "--sim", h, "activate", "--by", "fw-reset", "-f", spec)
			if tc.name == "" {
				if code != 0 {
					t.Errorf("activate on device %s: exit %d, want 0\n%s%s", tc.id, code, out, errs)
				}
				return
			}
			if code != 1 || !strings.Contains(out+errs, "0000:3b:00.0 is a "+tc.name+" DPU") {
				t.Errorf("activate on a %s (%s): exit %d, want 1 naming it\n%s%s", tc.name, tc.id, code, out, errs)
			}
			if code, out, errs := runCLI(t, "--sim", h, "status", "-f", spec); code != 3 {
				t.Errorf("status after the refusal: exit %d, want 3 (still pending)\n%s%s", code, out, errs)
			}
		})
	}
}

// TestActivateLevelRefusedAtReset: the query listed level 3, but the
// reset tool refuses it when it comes to the reset (no level at all, or
// not that one, in the device's state then): the card failed, exit 1,
// its way is now a power cycle (JSON "by", and the text says so), its
// two VFs are back, nothing is current. Any other refusal (the tool could
// not clear the VFs) keeps the way a firmware reset.
func TestActivateLevelRefusedAtReset(t *testing.T) {
	for _, tc := range []struct{ name, msg, by string }{
		{"no level", "There is no supported reset-level", "power-cycle"},
		{"level not supported", "Reset-level '3' is not supported in the current state of this device", "power-cycle"},
		{"other", "Reset virtual functions failed! Please reset virtual functions manually and resume operation", "fw-reset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, h, spec := stagedEthHost(t)
			s, err := sim.Open(h)
			if err != nil {
				t.Fatal(err)
			}
			// The tool's own words (mlxemu renders them from mstflint's
			// mstfwreset.py), answered to the reset only, not to the query.
			if err := s.AddFault(sim.Fault{Tool: "mlxfwreset", Match: "reset -y", Exit: 1, Stdout: "-E- " + tc.msg + ".\n"}); err != nil {
				t.Fatal(err)
			}
			code, out, errs := runCLI(t, "--sim", h, "activate", "--by", "fw-reset", "-f", spec, "-o", "json")
			if code != 1 {
				t.Fatalf("activate: exit %d, want 1\n%s%s", code, out, errs)
			}
			loadSchemas(t).check(t, "activate -o json", "activate", out)
			var doc struct {
				Cards []struct {
					By, Result, Reason string
				} `json:"cards"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Cards) != 1 {
				t.Fatalf("%v\n%s", err, out)
			}
			c := doc.Cards[0]
			if c.Result != "failed" || c.By != tc.by || !strings.Contains(c.Reason, tc.msg) ||
				strings.Contains(c.Reason, "only a power cycle") != (tc.by == "power-cycle") {
				t.Errorf("card: %+v, want failed by %s with the tool's message", c, tc.by)
			}
			if n := numVFs(t, h); n != "2" {
				t.Errorf("sriov_numvfs %s after the refused reset, want 2", n)
			}
			if code, out, errs := runCLI(t, "--sim", h, "status", "-f", spec); code != 3 {
				t.Errorf("status: exit %d, want 3 (still pending)\n%s%s", code, out, errs)
			}
		})
	}
}

// TestActivateRestoresOneVF: a PF with exactly one VF (that the spec does
// not ask for) has it set to 0 before the reset, which the tool refuses
// while VFs exist (a vfs reset fault), and back afterwards.
func TestActivateRestoresOneVF(t *testing.T) {
	dir, h := activateHost(t, nil)
	spec := filepath.Join(dir, "vfs8.yaml")
	writeActivateSpec(t, spec, "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params: {SRIOV_EN: true, NUM_OF_VFS: 8}\n")
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 3 {
		t.Fatalf("apply: exit %d, want 3\n%s%s", code, out, errs)
	}
	s, err := sim.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	hh, err := s.Host()
	if err != nil {
		t.Fatal(err)
	}
	if err := hh.FS.WriteAttr("/sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI(t, "sim", "fault", h, "--reset", "vfs"); code != 0 {
		t.Fatal(errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "activate", "--by", "fw-reset", "-f", spec); code != 0 || !strings.Contains(out, "(VFs restored: 0000:3b:00.0 1)") {
		t.Fatalf("activate: exit %d, want 0 with the one VF restored\n%s%s", code, out, errs)
	}
	if n := numVFs(t, h); n != "1" {
		t.Errorf("sriov_numvfs %s after activate, want 1", n)
	}
	if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 0 {
		t.Errorf("plan after activate: exit %d, want 0\n%s%s", code, out, errs)
	}
}

// TestStatusAfterAResetNobodyRecorded: the state a killed activate leaves
// when its reset tool ran to its end without it (the tool is a process of
// its own): the staged value runs, but the ledger entry and rdmaform's
// /run/reboot-required are still there. status does not ask for a reboot
// for it (exit 0, the marker named as left by a run cut short); the next
// activate settles the ledger and removes the marker. A marker another
// package shares still counts.
func TestStatusAfterAResetNobodyRecorded(t *testing.T) {
	for _, other := range []bool{false, true} {
		_, h, spec := stagedEthHost(t)
		if other {
			if err := os.WriteFile(filepath.Join(h, "run/reboot-required.pkgs"), []byte("linux-image-amd64\nrdmaform\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if code, out, errs := runCLI(t, "sim", "tool", h, "--", "mlxfwreset", "-d", "0000:3b:00.0", "reset", "-y", "--level", "3"); code != 0 {
			t.Fatalf("the reset tool: exit %d\n%s%s", code, out, errs)
		}
		code, out, errs := runCLI(t, "--sim", h, "status")
		if other {
			if code != 3 {
				t.Errorf("status with another package's marker: exit %d, want 3\n%s%s", code, out, errs)
			}
			continue
		}
		if code != 0 || !strings.Contains(out, "/run/reboot-required lists only rdmaform, and nothing rdmaform staged waits") || !strings.Contains(out, "Nothing waits for a reboot.") {
			t.Errorf("status after the reset: exit %d, want 0 naming the stale marker\n%s%s", code, out, errs)
		}
		code, out, errs = runCLI(t, "--sim", h, "status", "-o", "json")
		if code != 0 || !strings.Contains(out, `"reboot_required": false`) {
			t.Errorf("status -o json after the reset: exit %d, want 0, reboot_required false\n%s%s", code, out, errs)
		}
		loadSchemas(t).check(t, "status -o json", "status", out)
		// The reset took the VFs (the tool clears them): the plan is not
		// empty, so activate -f says so (exit 2) and settles the rest.
		if code, out, errs := runCLI(t, "--sim", h, "activate", "-f", spec); code != 2 || !strings.Contains(out, "Nothing is staged") {
			t.Errorf("activate after the reset: exit %d, want 2\n%s%s", code, out, errs)
		}
		if exists(filepath.Join(h, "run/reboot-required")) || len(ledgerParams(t, h)) != 0 {
			t.Errorf("activate left the marker or the ledger entry (%v)", ledgerParams(t, h))
		}
	}
}

// TestActivateLeavesADeferral: a spec whose firmware part is staged and
// whose RDMA netns switch the kernel refuses while a container's network
// namespace exists (EBUSY: the switch waits for the boot the modprobe
// file sets it at). activate -f resets the card and applies the spec
// again; the deferral is left, so it exits 3 ("a reboot is still
// needed"), as plan does, and never says the host matches the spec.
func TestActivateLeavesADeferral(t *testing.T) {
	dir, h := activateHost(t, nil)
	s, err := sim.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddNetns("ctr1"); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "eth-exclusive.yaml")
	writeActivateSpec(t, spec, ethSpec+"rdma:\n  netns_mode: exclusive\n")
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 3 {
		t.Fatalf("apply: exit %d, want 3\n%s%s", code, out, errs)
	}
	code, out, errs := runCLI(t, "--sim", h, "activate", "--by", "fw-reset", "-f", spec)
	if code != 3 || !strings.Contains(out, "A reboot is still needed to finish.") || strings.Contains(out, "matches the spec") {
		t.Errorf("activate with the netns switch deferred: exit %d, want 3 and a reboot still needed\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI(t, "--sim", h, "plan", "-f", spec)
	if code != 3 || !strings.Contains(out, "? rdma_netns[runtime]") || strings.Contains(out, "~ ") || strings.Contains(out, "+ ") {
		t.Errorf("plan after activate: exit %d, want 3 with only the deferred switch\n%s%s", code, out, errs)
	}
}
