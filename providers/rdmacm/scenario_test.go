package rdmacm_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
)

// TestConnectX3IsRoCEv1Only: RoCE v2 on a ConnectX-3 that is not a Pro is
// a plan error at the spec line (the seeds: v2 is the default from RHEL
// 7.5 on every adapter but this one), also when the same plan switches
// the port to Ethernet; v1 applies, and the next plan is empty.
func TestConnectX3IsRoCEv1Only(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "host")
	if code, _, errs := clitest.Run(t, "sim", "new", dir, "--profile", "cx3-mlx4"); code != 0 {
		t.Fatalf("sim new: exit %d: %s", code, errs)
	}
	v2 := clitest.WriteSpec(t, "version: 1\ndevices:\n  - name: mlx4_0\n    ports:\n      - {port: 2, type: eth, roce: {mode: v2}}\n")
	code, out, errs := clitest.Run(t, "--sim", dir, "plan", "-f", v2)
	if code != 1 || !strings.Contains(out+errs, "host.yaml:5:43: error: $.devices[0].ports[0].roce.mode: mlx4_0 is a ConnectX-3 (MT4099, PCI device 0x1003), not a ConnectX-3 Pro: it has RoCE v1 only") {
		t.Errorf("plan of v2 on a ConnectX-3: exit %d\n%s%s", code, out, errs)
	}
	v1 := clitest.WriteSpec(t, "version: 1\ndevices:\n  - name: mlx4_0\n    ports:\n      - {port: 2, type: eth, roce: {mode: v1, tos: 106}}\n")
	if code, out, errs := clitest.Run(t, "--sim", dir, "apply", "--yes", "-f", v1); code != 0 {
		t.Fatalf("apply of v1: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := clitest.Run(t, "--sim", dir, "plan", "-f", v1); code != 0 || !strings.Contains(out, "No changes.") {
		t.Errorf("plan after apply: exit %d\n%s%s", code, out, errs)
	}
	// Now Ethernet, the port's GIDs (RoCE v1 only) refuse v2 as well.
	code, out, errs = clitest.Run(t, "--sim", dir, "plan", "-f", v2)
	if code != 1 || !strings.Contains(out+errs, "not a ConnectX-3 Pro") {
		t.Errorf("plan of v2 on the Ethernet ConnectX-3 port: exit %d\n%s%s", code, out, errs)
	}
}
