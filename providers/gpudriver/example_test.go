package gpudriver_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// The GPU-node example and the simulated host it names.
const (
	exampleSpec = "../../examples/gpu-direct.yaml"
	exampleHost = "../../examples/hosts/gpu-switch/sim.yaml"
)

func exampleDir(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(exampleHost)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "host")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sim.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// bootUnit runs, by hand, what the boot unit runs at boot (sim reboot
// --help lists its commands).
func bootUnit(t *testing.T, dir string) {
	t.Helper()
	help := clitest.MustRun(t, 0, "sim", "reboot", "--help")
	n := 0
	for _, l := range strings.Split(help, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "rdmaform --sim DIR ") {
			clitest.MustRun(t, 0, strings.Fields(strings.ReplaceAll(l, "DIR", dir))[1:]...)
			n++
		}
	}
	if n == 0 {
		t.Fatalf("sim reboot --help gives no boot commands:\n%s", help)
	}
}

// acsControls is every bridge's ACS Control on the simulated host.
func acsControls(t *testing.T, dir string) map[string]uint16 {
	t.Helper()
	out := map[string]uint16{}
	for _, b := range simtest.State(t, dir).Bridges {
		out[b.PCI] = b.ACSControl
	}
	return out
}

// rdmaformFiles are the files the example writes, by path, with their
// content ("" for absent).
var rdmaformFiles = []string{
	"etc/modprobe.d/rdmaform-nvidia.conf", "etc/modules-load.d/rdmaform-gpu.conf",
	"etc/systemd/system/rdmaform.service", "etc/rdmaform/boot.yaml",
}

func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range rdmaformFiles {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err == nil {
			out[f] = string(b)
		}
	}
	return out
}

// TestGPUNodeExample is the GPU node's scenario on the gpu-switch
// profile, with examples/gpu-direct.yaml: plan, apply (the NICs' firmware
// and the driver's parameter staged, ACS open now and the boot unit
// installed), plan has nothing to change; the reboot brings the firmware
// and the driver's parameter and the kernel's ACS back; the boot unit
// opens ACS again; the plan is empty. A reboot that runs the boot unit
// itself ends the same.
func TestGPUNodeExample(t *testing.T) {
	dir := exampleDir(t)
	out := clitest.MustRun(t, 2, "--sim", dir, "plan", "-f", exampleSpec)
	has(t, out, "~ firmware[0000:18:00.0]", "PCI_WR_ORDERING: per_mkey -> force_relax", "+ gpu_driver[modprobe.d]",
		"~ acs[0000:17:00.0]", "+ boot_unit[rdmaform.service]")
	out = clitest.MustRun(t, 3, "--sim", dir, "apply", "--yes", "--allow-firmware", "-f", exampleSpec)
	has(t, out, "gpu_param[NVreg_EnablePCIERelaxedOrderingMode] value staged for next boot (current 0, next 1), after driver-reload")
	out = clitest.MustRun(t, 3, "--sim", dir, "plan", "-f", exampleSpec)
	has(t, out, "Plan: 0 to add, 0 to change, 0 to remove.")
	open := acsControls(t, dir)
	if open["0000:17:00.0"] != 0x0011 || open["0000:db:01.0"] != 0x0011 {
		t.Fatalf("ACS after apply: %#04x %#04x", open["0000:17:00.0"], open["0000:db:01.0"])
	}

	clitest.MustRun(t, 0, "sim", "reboot", dir, "--no-boot-unit")
	st := simtest.State(t, dir)
	if st.NVIDIA.Params["EnablePCIERelaxedOrderingMode"] != 1 {
		t.Errorf("the driver's parameter after the reboot: %v", st.NVIDIA.Params)
	}
	if got := acsControls(t, dir); got["0000:17:00.0"] != 0x001d {
		t.Errorf("ACS after the reboot: %#04x, want the kernel's 0x001d", got["0000:17:00.0"])
	}
	out = clitest.MustRun(t, 2, "--sim", dir, "plan", "-f", exampleSpec)
	if strings.Contains(out, "firmware[") || strings.Contains(out, "gpu_") {
		t.Errorf("after the reboot only ACS is left:\n%s", out)
	}
	bootUnit(t, dir)
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", exampleSpec)
	for b, v := range acsControls(t, dir) {
		if open[b] != v {
			t.Errorf("bridge %s after the boot unit: %#04x, %#04x after apply", b, v, open[b])
		}
	}
	clitest.MustRun(t, 0, "sim", "reboot", dir)
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", exampleSpec)
	clitest.MustRun(t, 0, "--sim", dir, "audit", "-f", exampleSpec)
}

// TestGPUNodeExampleRollback: an unconfirmed apply of the example puts
// every bridge's ACS Control and every file it wrote back as they were.
func TestGPUNodeExampleRollback(t *testing.T) {
	dir := exampleDir(t)
	before, beforeFiles := acsControls(t, dir), files(t, dir)
	out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "--allow-firmware", "--confirm-timeout", "1s", "-f", exampleSpec)
	has(t, out, "Reverted")
	after := acsControls(t, dir)
	var bridges []string
	for b := range before {
		bridges = append(bridges, b)
	}
	sort.Strings(bridges)
	for _, b := range bridges {
		if after[b] != before[b] {
			t.Errorf("bridge %s: %#04x after the rollback, %#04x before", b, after[b], before[b])
		}
	}
	if len(bridges) < 16 {
		t.Errorf("only %d bridges", len(bridges))
	}
	afterFiles := files(t, dir)
	for _, f := range rdmaformFiles {
		if afterFiles[f] != beforeFiles[f] {
			t.Errorf("%s after the rollback: %q, before %q", f, afterFiles[f], beforeFiles[f])
		}
	}
}

// TestBootUnitDespiteDriverFailure: a driver parameter that did not take
// (an initramfs with an older modprobe.d) does not keep the boot unit
// from opening ACS again at boot; plan still names the failure (exit 1).
func TestBootUnitDespiteDriverFailure(t *testing.T) {
	dir := exampleDir(t)
	clitest.MustRun(t, 3, "--sim", dir, "apply", "--yes", "--allow-firmware", "-f", exampleSpec)
	staleInitramfs(t, dir)
	clitest.MustRun(t, 0, "sim", "reboot", dir)
	if got := acsControls(t, dir); got["0000:17:00.0"] != 0x0011 {
		t.Errorf("ACS after the boot: %#04x, want 0x0011 (the boot unit's)", got["0000:17:00.0"])
	}
	out := clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", exampleSpec)
	has(t, out, "driver parameter NVreg_EnablePCIERelaxedOrderingMode=1 did not take")
	if strings.Contains(out, "acs[") {
		t.Errorf("ACS left to do after the boot:\n%s", out)
	}
}

// staleInitramfs gives the simulated host an initramfs that loads the
// driver at boot with none of rdmaform's parameters (sim.NVIDIADriver's
// StaleInitramfs), by editing its state file.
func staleInitramfs(t *testing.T, dir string) {
	t.Helper()
	f := filepath.Join(dir, "sim.yaml")
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "\nnvidia:\n", "\nnvidia:\n    stale_initramfs: {EnableMSI: 1}\n", 1)
	if s == string(b) {
		t.Fatal("no nvidia: in the state file")
	}
	if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	if simtest.State(t, dir).NVIDIA.StaleInitramfs == nil {
		t.Fatal("the stale initramfs did not take")
	}
}
