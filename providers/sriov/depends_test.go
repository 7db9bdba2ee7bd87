package sriov_test

import (
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
)

// TestVFSettingsWaitForTheirCount: settings of VFs the same plan creates
// depend on the count; when the count does not take, they are skipped,
// not run on VFs that are not there.
func TestVFSettingsWaitForTheirCount(t *testing.T) {
	dir := newSim(t, 8, 0)
	f := spec(t, "    sriov:\n      num_vfs: 2\n      vfs:\n        - {vf: 1, mac: \"02:00:00:00:00:51\"}\n")
	if code, out, errs := clitest.Run(t, "sim", "fault", dir, "--write", "sriov_numvfs", "--drop"); code != 0 {
		t.Fatalf("sim fault: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := clitest.Run(t, "--sim", dir, "apply", "--yes", "-f", f)
	if code != 1 || !strings.Contains(out+errs, "0 applied, 1 failed, 1 skipped") || strings.Contains(errs, "sriov_vf[") && !strings.Contains(errs, "skipped") {
		t.Fatalf("apply with a count that does not take: exit %d, want 1 with the VF's change skipped\n%s%s", code, out, errs)
	}
	if code, out, errs := clitest.Run(t, "sim", "fault", dir, "--clear"); code != 0 {
		t.Fatalf("sim fault --clear: exit %d\n%s%s", code, out, errs)
	}
	applyThenEmpty(t, dir, f)
}
