package kcmdline_test

import (
	"os"
	"path/filepath"
	"slices"
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
// a plan finding.
func TestUnknownBootloader(t *testing.T) {
	for bl, want := range map[string]string{"none": "does not recognise this host's bootloader"} {
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

// TestActivateAfterReboot: after the reboot that brought the arguments,
// activate (with the spec, and without one) has nothing to reset, takes
// them out of the ledger and proves the plan empty; where the reboot did
// not bring one (a cloud image's override), activate names it, refuses
// (exit 1, not a power cycle: no reset brings a kernel argument) and
// writes nothing.
func TestActivateAfterReboot(t *testing.T) {
	for _, withSpec := range []bool{true, false} {
		dir := simtest.Dir(t, "cx5-roce", nil)
		f := clitest.WriteSpec(t, argsSpec)
		if code, out := rf(t, "--sim", dir, "apply", "-f", f, "--yes"); code != 3 {
			t.Fatalf("apply: exit %d\n%s", code, out)
		}
		reboot(t, dir)
		ledger := filepath.Join(dir, "var/lib/rdmaform/staged-cmdline.json")
		args := []string{"--sim", dir, "activate"}
		if withSpec {
			args = append(args, "-f", f)
		}
		if code, out := rf(t, args...); code != 0 {
			t.Fatalf("activate (spec %v): exit %d\n%s", withSpec, code, out)
		}
		if _, err := os.Stat(ledger); err == nil {
			b, _ := os.ReadFile(ledger)
			t.Errorf("activate (spec %v) left the ledger of arguments that took:\n%s", withSpec, b)
		}
		if code, out := rf(t, "--sim", dir, "plan", "-f", f); code != 0 {
			t.Errorf("plan after activate: exit %d\n%s", code, out)
		}
	}

	dir := simtest.Dir(t, "cx5-roce", nil)
	over := filepath.Join(dir, "etc/default/grub.d/99-cloudimg-override.cfg")
	os.MkdirAll(filepath.Dir(over), 0o755)
	os.WriteFile(over, []byte("GRUB_CMDLINE_LINUX=\"console=ttyS0\"\n"), 0o644)
	f := clitest.WriteSpec(t, "version: 1\nkernel_args:\n  - {arg: iommu=pt}\n")
	if code, out := rf(t, "--sim", dir, "apply", "-f", f, "--yes"); code != 3 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	reboot(t, dir)
	before, _ := os.ReadFile(filepath.Join(dir, "boot/grub/grub.cfg"))
	code, out := rf(t, "--sim", dir, "activate", "-f", f)
	if code != 1 || !strings.Contains(out, "kernel argument iommu=pt did not take") || strings.Contains(out, "power cycle") {
		t.Fatalf("activate after the override: exit %d, want 1 naming iommu=pt\n%s", code, out)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "boot/grub/grub.cfg")); string(after) != string(before) {
		t.Errorf("activate wrote grub.cfg")
	}
}

// TestKernelInstallScenario: on a systemd-boot host (kernel-install,
// /etc/kernel/cmdline) apply edits the file's words in place and runs
// kernel-install add for the kernel; the reboot boots the entry; the
// plan is empty; show and audit hold. An absent argument leaves the
// file. An unconfirmed apply is rolled back: the file byte for byte and
// the entry written again.
func TestKernelInstallScenario(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", func(st *sim.State) { st.Bootloader = "kernel-install" })
	kc := filepath.Join(dir, "etc/kernel/cmdline")
	entry := filepath.Join(dir, "boot/loader/entries/sim-6.1.0-28-amd64.conf")
	orig, err := os.ReadFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	spec := "version: 1\nkernel_args:\n  - {arg: iommu=pt}\n  - {arg: numa_balancing=disable}\n  - {arg: quiet, absent: true}\n"
	f := clitest.WriteSpec(t, spec)
	code, out := rf(t, "--sim", dir, "plan", "-f", f)
	if code != 2 || !strings.Contains(out, "kernel_cmdline[/etc/kernel/cmdline]") || !strings.Contains(out, "after reboot") {
		t.Fatalf("plan: exit %d\n%s", code, out)
	}
	if code, out := rf(t, "--sim", dir, "apply", "-f", f, "--yes"); code != 3 {
		t.Fatalf("apply: exit %d, want 3\n%s", code, out)
	}
	want := "root=UUID=5b0e7a3c-2f47-4c2e-9d4e-1f0a6c3b8e21 ro iommu=pt numa_balancing=disable"
	if b, _ := os.ReadFile(kc); string(b) != want+"\n" {
		t.Fatalf("/etc/kernel/cmdline: %q, want %q", b, want)
	}
	if b, _ := os.ReadFile(entry); !strings.Contains(string(b), "options    "+want+"\n") {
		t.Fatalf("kernel-install did not write the entry:\n%s", b)
	}
	if code, out := rf(t, "--sim", dir, "plan", "-f", f); code != 3 {
		t.Fatalf("plan before the reboot: exit %d, want 3\n%s", code, out)
	}
	reboot(t, dir)
	if code, out := rf(t, "--sim", dir, "plan", "-f", f); code != 0 {
		t.Fatalf("plan after the reboot: exit %d\n%s", code, out)
	}
	if code, out := rf(t, "--sim", dir, "activate", "-f", f); code != 0 {
		t.Fatalf("activate after the reboot: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "var/lib/rdmaform/staged-cmdline.json")); err == nil {
		t.Errorf("the ledger keeps arguments that took")
	}
	if code, out := rf(t, "--sim", dir, "audit", "-f", f); code != 0 {
		t.Errorf("audit: exit %d\n%s", code, out)
	}

	// Rollback of an unconfirmed apply.
	dir = simtest.Dir(t, "cx5-roce", func(st *sim.State) { st.Bootloader = "kernel-install" })
	kc = filepath.Join(dir, "etc/kernel/cmdline")
	entry = filepath.Join(dir, "boot/loader/entries/sim-6.1.0-28-amd64.conf")
	out = clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "--allow-firmware", "--confirm-timeout", "1s", "-f", f)
	if !strings.Contains(out, "Reverted 1 changes: kernel_cmdline[/etc/kernel/cmdline]") {
		t.Errorf("the unconfirmed apply did not revert the file:\n%s", out)
	}
	if b, _ := os.ReadFile(kc); string(b) != string(orig) {
		t.Errorf("after the rollback /etc/kernel/cmdline: %q, want %q", b, orig)
	}
	if b, _ := os.ReadFile(entry); !strings.Contains(string(b), "options    "+strings.TrimSpace(string(orig))+"\n") {
		t.Errorf("after the rollback the entry was not written again:\n%s", b)
	}
}

// TestGrubbyScenario: on a RHEL host (grubby) apply runs grubby
// --update-kernel=ALL with the arguments to add (iommu before
// intel_iommu, whatever the spec's order) and to remove; the simulated
// grubby (rhboot/grubby's update_args) edits the BLS entry, the reboot
// boots it, the plan is empty and activate settles the ledger. An
// unconfirmed apply is rolled back: the entry has its words again.
func TestGrubbyScenario(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", func(st *sim.State) { st.Bootloader = "grubby" })
	entries, _ := filepath.Glob(filepath.Join(dir, "boot/loader/entries/*.conf"))
	if len(entries) != 1 {
		t.Fatalf("the simulated RHEL host's entries: %v", entries)
	}
	options := func() []string {
		b, _ := os.ReadFile(entries[0])
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "options "); ok {
				return strings.Fields(v)
			}
		}
		return nil
	}
	orig := options()
	spec := "version: 1\nkernel_args:\n  - {arg: intel_iommu=on}\n  - {arg: iommu=pt}\n  - {arg: rhgb, absent: true}\n"
	f := clitest.WriteSpec(t, spec)
	code, out := rf(t, "--sim", dir, "plan", "-f", f)
	if code != 2 || !strings.Contains(out, "kernel_cmdline[grubby]") {
		t.Fatalf("plan: exit %d\n%s", code, out)
	}
	if code, out := rf(t, "--sim", dir, "apply", "-f", f, "--yes"); code != 3 {
		t.Fatalf("apply: exit %d, want 3\n%s", code, out)
	}
	got := strings.Join(options(), " ")
	if !strings.HasSuffix(got, " quiet iommu=pt intel_iommu=on") || strings.Contains(got, "rhgb") || !strings.HasPrefix(got, "root=/dev/mapper/rhel-root ro ") {
		t.Fatalf("the entry's options after apply: %s", got)
	}
	if code, out := rf(t, "--sim", dir, "plan", "-f", f); code != 3 {
		t.Fatalf("plan before the reboot: exit %d, want 3\n%s", code, out)
	}
	reboot(t, dir)
	if code, out := rf(t, "--sim", dir, "plan", "-f", f); code != 0 {
		t.Fatalf("plan after the reboot: exit %d\n%s", code, out)
	}
	if code, out := rf(t, "--sim", dir, "activate", "-f", f); code != 0 {
		t.Fatalf("activate after the reboot: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "var/lib/rdmaform/staged-cmdline.json")); err == nil {
		t.Errorf("the ledger keeps arguments that took")
	}

	dir = simtest.Dir(t, "cx5-roce", func(st *sim.State) { st.Bootloader = "grubby" })
	entries, _ = filepath.Glob(filepath.Join(dir, "boot/loader/entries/*.conf"))
	out = clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "--allow-firmware", "--confirm-timeout", "1s", "-f", f)
	if !strings.Contains(out, "Reverted 1 changes: kernel_cmdline[grubby]") {
		t.Errorf("the unconfirmed apply did not revert the entries:\n%s", out)
	}
	back := options()
	if len(back) != len(orig) {
		t.Fatalf("after the rollback the entry's options: %v, want the words of %v", back, orig)
	}
	for _, w := range orig {
		if !slices.Contains(back, w) {
			t.Errorf("after the rollback the entry lacks %s: %v", w, back)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "var/lib/rdmaform/staged-cmdline.json")); err == nil {
		t.Errorf("the rollback left the arguments staged")
	}
}

// TestGrubbyTextMatch: where grubby's text matching (sed on the options
// line) would change another argument than the spec's, the plan refuses
// with a finding naming the entry and the word, and nothing is written:
// iommu=pt on an entry with intel_iommu=on (grubby would make it
// intel_iommu=pt), iommu to remove where iommu.passthrough=1 is (grubby
// would cut it), a value with a second '=' (grubby splits at the last).
func TestGrubbyTextMatch(t *testing.T) {
	for _, c := range []struct{ options, spec, want string }{
		{"ro quiet intel_iommu=on", "  - {arg: iommu=pt}\n", `"iommu=" as text, and it is inside intel_iommu=on`},
		{"ro quiet iommu.passthrough=1 iommu=pt", "  - {arg: iommu, absent: true}\n", "iommu.passthrough=1 begins with it"},
		{"ro quiet iommu=pt", "  - {arg: iommu=pt}\n  - {arg: \"pci=config_acs=111x@0000:3b:00.0\"}\n", "grubby splits pci=config_acs=111x@0000:3b:00.0 at its last '='"},
	} {
		dir := simtest.Dir(t, "cx5-roce", func(st *sim.State) { st.Bootloader = "grubby" })
		entries, _ := filepath.Glob(filepath.Join(dir, "boot/loader/entries/*.conf"))
		b, _ := os.ReadFile(entries[0])
		var lines []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "options ") {
				l = "options " + c.options
			}
			lines = append(lines, l)
		}
		os.WriteFile(entries[0], []byte(strings.Join(lines, "\n")), 0o644)
		f := clitest.WriteSpec(t, "version: 1\nkernel_args:\n"+c.spec)
		for _, cmd := range []string{"plan", "apply"} {
			code, out := rf(t, "--sim", dir, cmd, "--yes", "-f", f)
			if cmd == "plan" {
				code, out = rf(t, "--sim", dir, cmd, "-f", f)
			}
			if code != 1 || !strings.Contains(out, c.want) || !strings.Contains(out, "the boot entry of /vmlinuz-") || strings.Contains(out, "changed since the plan") {
				t.Errorf("%s of %s with %q: exit %d, want 1 with %q\n%s", cmd, c.options, c.spec, code, c.want, out)
			}
		}
		if after, _ := os.ReadFile(entries[0]); string(after) != strings.Join(lines, "\n") {
			t.Errorf("%s: the entry was written:\n%s", c.options, after)
		}
	}
}

// TestKernelInstallLayout: /etc/kernel/cmdline and kernel-install make a
// kernel-install host only where kernel-install writes boot entries (the
// layout its script finds: install.conf's layout=, else
// $BOOT/loader/entries.srel "type1"); a Debian host with systemd's
// kernel-install, the layout "other" and GRUB is written with
// update-grub.
func TestKernelInstallLayout(t *testing.T) {
	root := t.TempDir()
	for f, s := range map[string]string{
		"proc/cmdline":                sim.DefaultCmdline + "\n",
		"usr/sbin/update-grub":        "#!/bin/sh\n",
		"usr/bin/kernel-install":      "#!/bin/sh\n",
		"etc/kernel/cmdline":          "root=/dev/sda1 ro quiet\n",
		"boot/vmlinuz-6.1.0-28-amd64": "image\n",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755)
		os.WriteFile(filepath.Join(root, f), []byte(s), 0o755)
	}
	f := clitest.WriteSpec(t, "version: 1\nkernel_args:\n  - {arg: iommu=pt}\n")
	if code, out := rf(t, "--root", root, "plan", "-f", f); code != 2 || !strings.Contains(out, "kernel_cmdline[/etc/default/grub.d/90-rdmaform.cfg]") {
		t.Fatalf("layout other: exit %d\n%s", code, out)
	}
	os.MkdirAll(filepath.Join(root, "boot/loader"), 0o755)
	os.WriteFile(filepath.Join(root, "boot/loader/entries.srel"), []byte("type1\n"), 0o644)
	if code, out := rf(t, "--root", root, "plan", "-f", f); code != 2 || !strings.Contains(out, "kernel_cmdline[/etc/kernel/cmdline]") {
		t.Fatalf("entries.srel type1: exit %d\n%s", code, out)
	}
	os.WriteFile(filepath.Join(root, "etc/kernel/install.conf"), []byte("layout=other\n"), 0o644)
	if code, out := rf(t, "--root", root, "plan", "-f", f); code != 2 || !strings.Contains(out, "kernel_cmdline[/etc/default/grub.d/90-rdmaform.cfg]") {
		t.Fatalf("install.conf layout=other: exit %d\n%s", code, out)
	}
}
