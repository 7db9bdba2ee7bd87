package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestActivateIPoIBComesBackByItself: a firmware reset re-registers the
// card, and NetworkManager activates its autoconnect IPoIB profile on the
// new ib0 by itself; activate checks that it did (the plan after the
// reset, which holds the profile's state: up, is empty) without
// activating it itself (no ActivateConnection call).
func TestActivateIPoIBComesBackByItself(t *testing.T) {
	dir, h := activateHost(t, nil)
	spec := filepath.Join(dir, "ipoib.yaml")
	writeActivateSpec(t, spec, `version: 1
devices:
  - pci: "0000:3b:00.0"
    firmware:
      params: {SRIOV_EN: true, NUM_OF_VFS: 8}
ipoib:
  - name: ib0-storage
    parent: ib0
    mode: datagram
    mtu: 2044
    ipv4: {addresses: [192.0.2.11/24]}
    state: up
modules: [ib_ipoib]
`)
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 3 {
		t.Fatalf("apply: exit %d, want 3\n%s%s", code, out, errs)
	}
	calls := filepath.Join(dir, "calls")
	code, out, errs := runCLIEnv(t, []string{"RDMAFORM_SIM_CALLS=" + calls}, "--sim", h, "activate", "-f", spec)
	if code != 0 || !strings.Contains(out, "The host matches the spec.") {
		t.Fatalf("activate: exit %d, want 0\n%s%s", code, out, errs)
	}
	c, _ := os.ReadFile(calls)
	if !strings.Contains(string(c), "mlxfwreset -d 0000:3b:00.0 reset -y --level 3") || strings.Contains(string(c), "ActivateConnection") {
		t.Errorf("want the reset and no activation by rdmaform (NetworkManager brings the profile back), calls:\n%s", c)
	}
	if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 0 {
		t.Errorf("plan after activate: exit %d, want 0\n%s%s", code, out, errs)
	}
}
