package sriov_test

import (
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
)

// TestRenameAndVFsInOneApply: one apply renames a PF's netdev and sets a
// VF's MAC, trust and link state under the new name (the VFs read, and
// the PF's MAC checked against, under the name it has until the rename):
// apply, then plan is empty, and the VF has its settings.
func TestRenameAndVFsInOneApply(t *testing.T) {
	dir := newSRIOVHost(t, "cx5-roce", 8, nil)
	applyThenEmpty(t, dir, clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \""+pf0+"\"\n    sriov: {num_vfs: 2}\n"))
	spec := clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \""+pf0+"\"\n    names: {netdev: rail0eth}\n    sriov:\n      num_vfs: 2\n      vfs: [{vf: 1, mac: \"02:00:00:00:00:09\", trust: true, state: disable}]\n")
	code, out, errs := clitest.Run(t, "--sim", dir, "plan", "-f", spec)
	if code != 2 || !strings.Contains(out, "name: ens1f0np0 -> rail0eth") || !strings.Contains(out, "~ sriov_vf[0000:5e:00.0/1]") {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errs)
	}
	applyThenEmpty(t, dir, spec)
	vf := pfState(t, dir, pf0).VFs[1]
	if vf.MAC != "02:00:00:00:00:09" || !vf.Trust || vf.LinkState != "disable" {
		t.Fatalf("VF 1 after apply: %+v", vf)
	}
}
