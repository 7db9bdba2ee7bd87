package kcmdline_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

func rf(t *testing.T, args ...string) (int, string) {
	t.Helper()
	code, out, errs := clitest.Run(t, args...)
	return code, out + errs
}

const argsSpec = `version: 1
kernel_args:
  - {arg: iommu=pt}
  - {arg: intel_iommu=on}
  - {arg: numa_balancing=disable}
  - {arg: amd_iommu, absent: true}
`

func reboot(t *testing.T, dir string) {
	t.Helper()
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reboot(); err != nil {
		t.Fatal(err)
	}
}

// TestScenario: plan writes the grub.d file (after reboot), apply runs
// update-grub, the plan after it shows the arguments pending a reboot
// (exit 3), the reboot brings them to /proc/cmdline, and the plan is
// empty. Rollback of an unconfirmed apply removes the file again.
func TestScenario(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	f := clitest.WriteSpec(t, argsSpec)
	code, out := rf(t, "--sim", dir, "plan", "-f", f)
	if code != 2 || !strings.Contains(out, "kernel_cmdline[/etc/default/grub.d/90-rdmaform.cfg]") || !strings.Contains(out, "after reboot") {
		t.Fatalf("plan: exit %d\n%s", code, out)
	}
	if code, out := rf(t, "--sim", dir, "apply", "-f", f, "--yes"); code != 3 {
		t.Fatalf("apply: exit %d, want 3 (a reboot is needed)\n%s", code, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "etc/default/grub.d/90-rdmaform.cfg"))
	if err != nil || !strings.Contains(string(b), `GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX} iommu=pt intel_iommu=on numa_balancing=disable"`) {
		t.Fatalf("grub.d file: %v\n%s", err, b)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "boot/grub/grub.cfg"))
	if err != nil || !strings.Contains(string(cfg), "ro iommu=pt intel_iommu=on numa_balancing=disable quiet") {
		t.Fatalf("update-grub did not run: %v\n%s", err, cfg)
	}
	code, out = rf(t, "--sim", dir, "plan", "-f", f)
	if code != 3 || !strings.Contains(out, "kernel_arg[iommu]") || !strings.Contains(out, "after reboot") {
		t.Fatalf("plan after apply, before the reboot: exit %d, want 3 (pending)\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "var/lib/rdmaform/staged-cmdline.json")); err != nil {
		t.Fatalf("no ledger: %v", err)
	}
	reboot(t, dir)
	pc, _ := os.ReadFile(filepath.Join(dir, "proc/cmdline"))
	if !strings.Contains(string(pc), "iommu=pt intel_iommu=on numa_balancing=disable") {
		t.Fatalf("/proc/cmdline after the reboot: %s", pc)
	}
	if code, out := rf(t, "--sim", dir, "plan", "-f", f); code != 0 {
		t.Fatalf("plan after the reboot: exit %d, want 0\n%s", code, out)
	}
	if code, out := rf(t, "--sim", dir, "apply", "-f", f, "--yes"); code != 0 {
		t.Fatalf("apply after the reboot: exit %d\n%s", code, out)
	}
	if code, out := rf(t, "--sim", dir, "plan", "-f", f); code != 0 {
		t.Fatalf("plan after the last apply: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "var/lib/rdmaform/staged-cmdline.json")); err == nil {
		t.Errorf("the ledger keeps arguments that took")
	}
	// show captures the arguments; audit finds no drift.
	if code, out := rf(t, "--sim", dir, "show"); code != 0 || !strings.Contains(out, "arg: iommu=pt") {
		t.Errorf("show: exit %d\n%s", code, out)
	}
	if code, out := rf(t, "--sim", dir, "audit", "-f", f); code != 0 {
		t.Errorf("audit: exit %d\n%s", code, out)
	}
	// Drift: the file edited by hand is drift the audit names.
	os.WriteFile(filepath.Join(dir, "etc/default/grub.d/90-rdmaform.cfg"), []byte("GRUB_CMDLINE_LINUX=\"${GRUB_CMDLINE_LINUX} iommu=pt\"\n"), 0o644)
	if code, out := rf(t, "--sim", dir, "audit", "-f", f); code == 0 || !strings.Contains(out, "kernel") {
		t.Errorf("audit after a hand edit: exit %d\n%s", code, out)
	}
}

// TestCloudOverride: a file sourced after rdmaform's resets
// GRUB_CMDLINE_LINUX, as a cloud image's can: after the reboot the
// arguments are missing, the plan names each as an activation failure
// (exit 1), and apply does not write them again.
func TestCloudOverride(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	over := filepath.Join(dir, "etc/default/grub.d/99-cloudimg-override.cfg")
	os.MkdirAll(filepath.Dir(over), 0o755)
	if err := os.WriteFile(over, []byte("GRUB_CMDLINE_LINUX=\"console=ttyS0\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := clitest.WriteSpec(t, "version: 1\nkernel_args:\n  - {arg: iommu=pt}\n")
	if code, out := rf(t, "--sim", dir, "apply", "-f", f, "--yes"); code != 3 {
		t.Fatalf("apply: exit %d, want 3 (a reboot is needed)\n%s", code, out)
	}
	reboot(t, dir)
	code, out := rf(t, "--sim", dir, "plan", "-f", f)
	if code != 1 || !strings.Contains(out, "iommu=pt did not take") || !strings.Contains(out, ".yaml:3:") {
		t.Fatalf("plan after the reboot: exit %d, want 1 naming the argument\n%s", code, out)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "boot/grub/grub.cfg"))
	code, out = rf(t, "--sim", dir, "apply", "-f", f, "--yes")
	after, _ := os.ReadFile(filepath.Join(dir, "boot/grub/grub.cfg"))
	if code != 1 || string(before) != string(after) {
		t.Fatalf("apply after the failure: exit %d (want 1), grub.cfg rewritten: %v\n%s", code, string(before) != string(after), out)
	}
}

// TestAbsentSetElsewhere: an argument to make absent that
// /etc/default/grub sets is refused naming the file; nothing is written.
func TestAbsentSetElsewhere(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	os.MkdirAll(filepath.Join(dir, "etc/default"), 0o755)
	os.WriteFile(filepath.Join(dir, "etc/default/grub"), []byte("GRUB_CMDLINE_LINUX_DEFAULT=\"quiet numa_balancing=enable\"\n"), 0o644)
	f := clitest.WriteSpec(t, "version: 1\nkernel_args:\n  - {arg: numa_balancing, absent: true}\n")
	code, out := rf(t, "--sim", dir, "plan", "-f", f)
	if code != 1 || !strings.Contains(out, "/etc/default/grub sets numa_balancing") {
		t.Fatalf("plan: exit %d\n%s", code, out)
	}
}

// TestUnknownBootloader: a host with no bootloader tool rdmaform knows is
// a plan finding; grubby hosts are named.
func TestUnknownBootloader(t *testing.T) {
	for bl, want := range map[string]string{"none": "does not recognise this host's bootloader", "grubby": "written with grubby"} {
		dir := simtest.Dir(t, "cx5-roce", func(st *sim.State) { st.Bootloader = bl })
		f := clitest.WriteSpec(t, "version: 1\nkernel_args:\n  - {arg: iommu=pt}\n")
		code, out := rf(t, "--sim", dir, "plan", "-f", f)
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("%s: plan exit %d\n%s", bl, code, out)
		}
	}
}

// TestRollback: an unconfirmed apply puts the file back as it was
// (none, then a file of the operator's own, byte for byte) and runs
// update-grub again.
func TestRollback(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	own := filepath.Join(dir, "etc/default/grub.d/90-rdmaform.cfg")
	f := clitest.WriteSpec(t, "version: 1\nkernel_args:\n  - {arg: iommu=pt}\n")
	out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "--allow-firmware", "--confirm-timeout", "1s", "-f", f)
	if !strings.Contains(out, "kernel_cmdline[") {
		t.Fatalf("apply did not change the file:\n%s", out)
	}
	if _, err := os.Stat(own); err == nil {
		t.Fatalf("the file stays after the rollback")
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "boot/grub/grub.cfg"))
	if err != nil || strings.Contains(string(cfg), "iommu=pt") {
		t.Fatalf("update-grub did not run again after the rollback: %v\n%s", err, cfg)
	}

	old := "# kept by hand\nGRUB_CMDLINE_LINUX=\"${GRUB_CMDLINE_LINUX} iommu=nopt\"\n"
	if err := os.WriteFile(own, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "--allow-firmware", "--confirm-timeout", "1s", "-f", f)
	if b, _ := os.ReadFile(own); string(b) != old {
		t.Fatalf("the rollback did not put the file back byte for byte:\n%s", b)
	}
	cfg, _ = os.ReadFile(filepath.Join(dir, "boot/grub/grub.cfg"))
	if !strings.Contains(string(cfg), "iommu=nopt") || strings.Contains(string(cfg), "iommu=pt") {
		t.Fatalf("grub.cfg after the second rollback:\n%s", cfg)
	}
}

// TestAbsentOnlyRunning: an argument to make absent that is on
// /proc/cmdline but in no file rdmaform reads needs no write: it is
// pending, apply records it in the ledger, and when the reboot keeps it
// (the boot entry itself has it) the plan names the failure.
func TestAbsentOnlyRunning(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", func(st *sim.State) { st.Cmdline = sim.DefaultCmdline + " amd_iommu=off" })
	f := clitest.WriteSpec(t, "version: 1\nkernel_args:\n  - {arg: amd_iommu, absent: true}\n")
	if code, out := rf(t, "--sim", dir, "plan", "-f", f); code != 3 || !strings.Contains(out, "kernel_arg[amd_iommu]") {
		t.Fatalf("plan: exit %d, want 3 (pending)\n%s", code, out)
	}
	if code, out := rf(t, "--sim", dir, "apply", "--yes", "-f", f); code != 3 {
		t.Fatalf("apply: exit %d, want 3\n%s", code, out)
	}
	reboot(t, dir)
	if code, out := rf(t, "--sim", dir, "plan", "-f", f); code != 1 || !strings.Contains(out, "amd_iommu did not take") || !strings.Contains(out, "is still on /proc/cmdline") {
		t.Fatalf("plan after the reboot: exit %d, want 1\n%s", code, out)
	}
}

// TestPresentSetElsewhere: an argument whose key another GRUB file sets
// to another value is refused naming the file (the kernel takes a key's
// last value, and GRUB_CMDLINE_LINUX_DEFAULT comes last on the line); the
// same argument there is fine.
func TestPresentSetElsewhere(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	os.MkdirAll(filepath.Join(dir, "etc/default"), 0o755)
	os.WriteFile(filepath.Join(dir, "etc/default/grub"), []byte("GRUB_CMDLINE_LINUX_DEFAULT=\"quiet iommu=nopt\"\nGRUB_CMDLINE_LINUX=\"intel_iommu=on\"\n"), 0o644)
	f := clitest.WriteSpec(t, "version: 1\nkernel_args:\n  - {arg: iommu=pt}\n  - {arg: intel_iommu=on}\n")
	code, out := rf(t, "--sim", dir, "plan", "-f", f)
	if code != 1 || !strings.Contains(out, ".yaml:3:") || !strings.Contains(out, "/etc/default/grub sets iommu=nopt") || strings.Contains(out, "sets intel_iommu") {
		t.Fatalf("plan: exit %d\n%s", code, out)
	}
}

// TestRootTreeBootloader: under --root the bootloader is the tree's (its
// /usr/sbin/update-grub), not a program of the machine rdmaform runs on.
func TestRootTreeBootloader(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "proc"), 0o755)
	os.WriteFile(filepath.Join(root, "proc/cmdline"), []byte(sim.DefaultCmdline+"\n"), 0o644)
	f := clitest.WriteSpec(t, "version: 1\nkernel_args:\n  - {arg: iommu=pt}\n")
	if code, out := rf(t, "--root", root, "plan", "-f", f); code != 1 || !strings.Contains(out, "update-grub is not installed") {
		t.Fatalf("a tree without update-grub: exit %d\n%s", code, out)
	}
	os.MkdirAll(filepath.Join(root, "usr/sbin"), 0o755)
	os.WriteFile(filepath.Join(root, "usr/sbin/update-grub"), []byte("#!/bin/sh\n"), 0o755)
	if code, out := rf(t, "--root", root, "plan", "-f", f); code != 2 || !strings.Contains(out, "kernel_cmdline[/etc/default/grub.d/90-rdmaform.cfg]") {
		t.Fatalf("a tree with update-grub: exit %d\n%s", code, out)
	}
}
