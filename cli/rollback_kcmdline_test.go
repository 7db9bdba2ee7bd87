package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// TestRollbackKernelArgs: 'rdmaform rollback' of an apply that wrote the
// kernel arguments removes rdmaform's grub.d file (there was none before:
// the journal's spec has no kernel_args) and runs update-grub again, so
// the next boot's entry is what it was; the waiting apply ends rolled back.
func TestRollbackKernelArgs(t *testing.T) {
	l := newRBLab(t)
	h := l.newHost("h", "cx5-roce")
	spec := l.spec("k.yaml", "version: 1\nkernel_args:\n  - {arg: iommu=pt}\n")
	cmd, _, _ := startWaiting(t, l.bin, l.env, "--sim", h, "apply", "--yes", "--allow-firmware", "--confirm-timeout", "60s", "-f", spec)
	own := filepath.Join(h, "etc/default/grub.d/90-rdmaform.cfg")
	cfg := filepath.Join(h, "boot/grub/grub.cfg")
	if b, err := os.ReadFile(cfg); err != nil || !strings.Contains(string(b), "iommu=pt") || !exists(own) {
		t.Fatalf("before the rollback: %s exists %v, grub.cfg %q (%v)", own, exists(own), b, err)
	}
	out := l.must(0, "--sim", h, "rollback")
	if !strings.Contains(out, "kernel_cmdline[") {
		t.Errorf("rollback does not name the kernel command line:\n%s", out)
	}
	_ = cmd.Wait()
	if exists(own) {
		t.Errorf("%s outlives the rollback", own)
	}
	if b, _ := os.ReadFile(cfg); strings.Contains(string(b), "iommu=pt") {
		t.Errorf("update-grub did not run again: grub.cfg still has iommu=pt:\n%s", b)
	}
}

// TestRollbackKernelInstall: on a systemd-boot host, 'rdmaform rollback'
// of an apply that edited /etc/kernel/cmdline puts the file back byte for
// byte (the journal kept it) and runs kernel-install add again, so the
// kernel's loader entry has the old options.
func TestRollbackKernelInstall(t *testing.T) {
	l := newRBLab(t)
	h := simtest.Dir(t, "cx5-roce", func(st *sim.State) { st.Bootloader = "kernel-install" })
	kc := filepath.Join(h, "etc/kernel/cmdline")
	entry := filepath.Join(h, "boot/loader/entries/sim-6.1.0-28-amd64.conf")
	orig, err := os.ReadFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	spec := l.spec("k.yaml", "version: 1\nkernel_args:\n  - {arg: iommu=pt}\n  - {arg: quiet, absent: true}\n")
	cmd, _, _ := startWaiting(t, l.bin, l.env, "--sim", h, "apply", "--yes", "--allow-firmware", "--confirm-timeout", "60s", "-f", spec)
	if b, _ := os.ReadFile(entry); !strings.Contains(string(b), "iommu=pt") || strings.Contains(string(b), "quiet") {
		t.Fatalf("before the rollback, the entry:\n%s", b)
	}
	out := l.must(0, "--sim", h, "rollback")
	if !strings.Contains(out, "kernel_cmdline[") {
		t.Errorf("rollback does not name the kernel command line:\n%s", out)
	}
	_ = cmd.Wait()
	if b, _ := os.ReadFile(kc); string(b) != string(orig) {
		t.Errorf("after the rollback %s: %q, want %q", kc, b, orig)
	}
	if b, _ := os.ReadFile(entry); !strings.Contains(string(b), "options    "+strings.TrimSpace(string(orig))+"\n") {
		t.Errorf("kernel-install did not run again: the entry\n%s", b)
	}
}
