package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
