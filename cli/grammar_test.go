package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/audit"
	"github.com/rdmaform/rdmaform/cli/clitest"
)

// TestOneIsSingular: counts of one read "1 device", "1 spec", "1 check",
// never "1 devices".
func TestOneIsSingular(t *testing.T) {
	spec := clitest.WriteSpec(t, "version: 1\ndevices:\n  - name: mlx5_0\ninterfaces:\n  - name: eth0\n    mtu: 9000\nmodules: [rdma_ucm]\nservices:\n  - {name: opensm.service, active: true}\n")
	code, stdout, stderr := clitest.Run(t, "validate", "--no-param-db", "-f", spec)
	if want := "valid (1 device, 0 ipoib, 0 rxe, 1 interface, 1 module, 1 service)"; code != 0 || !strings.Contains(stdout, want) {
		t.Errorf("validate: exit %d, %q %q; want %q", code, stdout, stderr, want)
	}
	if code, stdout, _ := clitest.Run(t, "validate", "--no-param-db", "-f", "../examples/roce.yaml"); code != 0 || !strings.Contains(stdout, "(2 devices, 0 ipoib, 0 rxe, 0 interfaces, 0 modules, 0 services)") {
		t.Errorf("validate of two devices: %q", stdout)
	}
	if code, stdout, _ := clitest.Run(t, "lint", "../examples/roce.yaml"); code != 0 || !strings.Contains(stdout, "lint: 1 spec, no findings") {
		t.Errorf("lint of one spec: exit %d, %q", code, stdout)
	}
	sm := func(name string) string {
		return clitest.WriteSpec(t, "version: 1\nhost: {hostname: "+name+"}\nsubnet_manager:\n  priority: 5\n")
	}
	if code, stdout, _ := clitest.Run(t, "lint", sm("sm1"), sm("sm2")); code != 0 || !strings.Contains(stdout, ": warning: $.subnet_manager.priority: ") || !strings.HasSuffix(stdout, "lint: 2 specs, no errors, 2 warnings\n") {
		t.Errorf("lint with warnings only: exit %d, %q", code, stdout)
	}
	r := &audit.Report{}
	r.Summary.Checks, r.Summary.Passed = 1, 1
	if l := audit.SummaryLine(r); !strings.HasPrefix(l, "Audit: 1 check, 1 passed") {
		t.Errorf("audit summary of one check: %q", l)
	}
}

// TestApplyQuietPrintsTheResultOnly: apply -q --yes prints what apply
// did, not the plan; with nothing to do, the plan's one-line summary.
func TestApplyQuietPrintsTheResultOnly(t *testing.T) {
	h := filepath.Join(t.TempDir(), "host")
	if code, _, stderr := clitest.Run(t, "sim", "new", h, "--profile", "cx5-roce"); code != 0 {
		t.Fatal(stderr)
	}
	const spec = "../examples/roce.yaml"
	code, stdout, stderr := clitest.Run(t, "--sim", h, "apply", "-q", "--yes", "-f", spec)
	if code != 0 || strings.Contains(stdout, "rdma_cm[") || strings.Contains(stdout, "Plan:") || strings.TrimSpace(stdout) != "Apply: 2 applied, 0 failed, 0 skipped." || stderr != "" {
		t.Errorf("apply -q: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = clitest.Run(t, "--sim", h, "apply", "-q", "--yes", "-f", spec)
	if code != 0 || stdout != "No changes. The host matches the spec.\n" || stderr != "" {
		t.Errorf("apply -q with nothing to do: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// TestStatusOneForm: status prints a staged firmware value in one form,
// with -f SPEC (the spec's parameters) and without (every parameter).
func TestStatusOneForm(t *testing.T) {
	h := filepath.Join(t.TempDir(), "host")
	if code, _, stderr := clitest.Run(t, "sim", "new", h, "--profile", "cx6-vpi-ib"); code != 0 {
		t.Fatal(stderr)
	}
	const spec = "../examples/ib-to-eth.yaml"
	if code, out, stderr := clitest.Run(t, "--sim", h, "apply", "--yes", "-f", spec); code != 3 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, stderr)
	}
	const want = "firmware[0000:3b:00.0] LINK_TYPE_P1 staged for next boot (current IB, next ETH)"
	for _, args := range [][]string{{"status"}, {"status", "-f", spec}} {
		code, stdout, stderr := clitest.Run(t, append([]string{"--sim", h}, args...)...)
		if code != 3 || !strings.Contains(stdout, want) {
			t.Errorf("%s: exit %d\nstdout:\n%s\nstderr:\n%s\nwant %q", strings.Join(args, " "), code, stdout, stderr, want)
		}
	}
}
