package sriov_test

import (
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
)

// dropThenConverge stores a fault that drops an operation (it succeeds
// without effect), applies spec and wants exit 1 with want in the error
// and the change still planned (remaining), then clears the fault and
// wants apply to converge with an empty plan.
func dropThenConverge(t *testing.T, dir, spec, want, remaining string, fault ...string) {
	t.Helper()
	args := append(append([]string{"sim", "fault", dir}, fault...), "--drop")
	if code, out, errs := clitest.Run(t, args...); code != 0 {
		t.Fatalf("sim fault: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := clitest.Run(t, "--sim", dir, "apply", "--yes", "-f", spec)
	if code != 1 || !strings.Contains(errs, want) {
		t.Fatalf("apply with a dropped operation: exit %d, want 1 and %q\n%s%s", code, want, out, errs)
	}
	lines, _ := planLines(t, dir, spec, 2)
	if len(lines) != 1 || !strings.HasPrefix(lines[0], remaining+" ") {
		t.Fatalf("plan after the failed apply: %q, want %s left", lines, remaining)
	}
	if code, out, errs := clitest.Run(t, "sim", "fault", dir, "--clear"); code != 0 {
		t.Fatalf("sim fault --clear: exit %d\n%s%s", code, out, errs)
	}
	applyThenEmpty(t, dir, spec)
}

// TestVFReadBackFindsSettingsThatDoNotStick: a VF setting the PF driver
// accepts but does not keep fails the apply with the read-back's words.
func TestVFReadBackFindsSettingsThatDoNotStick(t *testing.T) {
	t.Run("Ethernet PF", func(t *testing.T) {
		dir := newSim(t, 8, 2)
		f := spec(t, "    sriov:\n      num_vfs: 2\n      vfs:\n        - {vf: 1, mac: \"02:00:00:00:00:41\", trust: true, spoofchk: false, state: enable}\n")
		dropThenConverge(t, dir, f,
			`sriov_vf[0000:5e:00.0/1]: VF 1 of ens1f0np0 after setting it: mac is "00:00:00:00:00:00", not "02:00:00:00:00:41"; state is "auto", not "enable"; trust is false; spoofchk is true`,
			"sriov_vf[0000:5e:00.0/1]", "--netlink", "LinkSetVF", "--match", "ens1f0np0")
	})
	t.Run("InfiniBand PF", func(t *testing.T) {
		dir := newSRIOVHost(t, "cx6-vpi-ib", 8, nil)
		applyThenEmpty(t, dir, clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \""+ibPF+"\"\n    sriov:\n      num_vfs: 1\n"))
		f := clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \""+ibPF+"\"\n    sriov:\n      num_vfs: 1\n      vfs:\n        - {vf: 0, node_guid: \"02:00:00:00:00:00:00:41\", port_guid: \"02:00:00:00:00:00:01:41\"}\n")
		dropThenConverge(t, dir, f,
			`sriov_vf[0000:3b:00.0/0]: VF 0 of ib0 after setting it: node_guid is "00:00:00:00:00:00:00:00", not "02:00:00:00:00:00:00:41"; port_guid is "00:00:00:00:00:00:00:00", not "02:00:00:00:00:00:01:41"`,
			"sriov_vf[0000:3b:00.0/0]", "--netlink", "LinkSetVF")
	})
}

// TestNumVFsReadBack: a sriov_numvfs or sriov_drivers_autoprobe write
// the kernel accepts but does not carry out fails the change itself (not
// only the verification after apply), naming what it left.
func TestNumVFsReadBack(t *testing.T) {
	t.Run("sriov_numvfs", func(t *testing.T) {
		dir := newSim(t, 8, 0)
		f := spec(t, "    sriov: {num_vfs: 4}\n")
		dropThenConverge(t, dir, f, "sriov[0000:5e:00.0]: 0000:5e:00.0 after the writes: sriov_numvfs is 0, not 4",
			"sriov[0000:5e:00.0]", "--write", "sriov_numvfs")
	})
	t.Run("sriov_drivers_autoprobe", func(t *testing.T) {
		dir := newSim(t, 8, 0)
		f := spec(t, "    sriov: {num_vfs: 0, drivers_autoprobe: false}\n")
		dropThenConverge(t, dir, f, "sriov[0000:5e:00.0]: 0000:5e:00.0 after the writes: sriov_drivers_autoprobe is true, not false",
			"sriov[0000:5e:00.0]", "--write", "sriov_drivers_autoprobe")
	})
}
