package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRebootMarkerTellsTheTruth: rdmaform lists itself in
// /run/reboot-required.pkgs only while one of its firmware values waits
// for a reboot; un-staging it takes the entry (and, with no other
// package left, the marker) away, other packages' entries stay, and
// status, plan and audit agree at every step.
func TestRebootMarkerTellsTheTruth(t *testing.T) {
	dir := t.TempDir()
	h := filepath.Join(dir, "host")
	if code, _, errs := runCLI(t, "sim", "new", h, "--profile", "cx6-vpi-ib"); code != 0 {
		t.Fatalf("sim new: %s", errs)
	}
	spec := func(lt string) string {
		f := filepath.Join(dir, lt+".yaml")
		if err := os.WriteFile(f, []byte("version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params: {LINK_TYPE_P1: "+lt+"}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	eth, ib := spec("ETH"), spec("IB")
	pkgs := func() string {
		b, err := os.ReadFile(filepath.Join(h, "run/reboot-required.pkgs"))
		if os.IsNotExist(err) {
			return "(none)"
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(strings.Fields(string(b)), " ")
	}
	marker := func() bool {
		_, err := os.Stat(filepath.Join(h, "run/reboot-required"))
		return err == nil
	}
	// agree: plan, status -f and audit give the same verdict.
	agree := func(step, f string, want int) {
		t.Helper()
		for _, args := range [][]string{{"plan", "-f", f}, {"status", "-f", f}, {"audit", "-f", f}} {
			if code, out, errs := runCLI(t, append([]string{"--sim", h}, args...)...); code != want {
				t.Errorf("%s: %s: exit %d, want %d\n%s%s", step, args[0], code, want, out, errs)
			}
		}
	}

	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", eth); code != 3 {
		t.Fatalf("apply ETH: exit %d\n%s%s", code, out, errs)
	}
	if !marker() || pkgs() != "rdmaform" {
		t.Errorf("after staging: marker %v, pkgs %q", marker(), pkgs())
	}
	agree("staged", eth, 3)

	// Un-staged: Next Boot back to IB; the marker goes with it.
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", ib); code != 0 {
		t.Fatalf("apply IB: exit %d\n%s%s", code, out, errs)
	}
	if marker() || pkgs() != "(none)" {
		t.Errorf("after un-staging: marker %v, pkgs %q; want both gone", marker(), pkgs())
	}
	agree("un-staged", ib, 0)
	if code, out, _ := runCLI(t, "--sim", h, "status"); code != 0 {
		t.Errorf("status (every adapter) after un-staging: exit %d\n%s", code, out)
	}

	// Another package waits for a reboot too: only rdmaform's entry goes.
	if code, _, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", eth); code != 3 {
		t.Fatalf("apply ETH again: %s", errs)
	}
	if err := os.WriteFile(filepath.Join(h, "run/reboot-required.pkgs"), []byte("linux-image-6.1.0-56-amd64\nrdmaform\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", ib); code != 0 {
		t.Fatalf("apply IB again: exit %d\n%s%s", code, out, errs)
	}
	if !marker() || pkgs() != "linux-image-6.1.0-56-amd64" {
		t.Errorf("with another package: marker %v, pkgs %q; want the marker and the kernel's entry kept", marker(), pkgs())
	}
	// The kernel's reboot is still needed: status says so; plan has
	// nothing of rdmaform's to do.
	if code, _, _ := runCLI(t, "--sim", h, "status", "-f", ib); code != 3 {
		t.Errorf("status with the kernel's entry: exit %d, want 3", code)
	}
	if code, _, _ := runCLI(t, "--sim", h, "plan", "-f", ib); code != 0 {
		t.Errorf("plan: exit %d, want 0", code)
	}
}
