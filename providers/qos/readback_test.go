package qos_test

import (
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// TestReadBackFindsSettingsThatDoNotStick: a write the host accepts but
// does not keep (a simulated fault that drops it: the tool exits 0, the
// sysfs write returns no error) fails the apply with the read-back's
// words (exit 1), and leaves the change in the plan; once the fault is
// gone, apply converges and the plan is empty. Each case drops one kind
// of write: a dcb set, a dcb app replace, ethtool -A, an ECN sysfs file.
func TestReadBackFindsSettingsThatDoNotStick(t *testing.T) {
	const qos = "{trust: dscp, pfc: [3], pause: false, ecn: [3]}"
	for _, tc := range []struct {
		name  string
		fault []string
		want  string
	}{
		{"dcb pfc set", []string{"--tool", "dcb", "--match", "pfc set"}, "ens2f0np0 after the writes: pfc is none, not 3"},
		{"dcb app replace", []string{"--tool", "dcb", "--match", "app replace"}, "ens2f0np0 after the writes: trust is pcp, not dscp"},
		{"ethtool -A", []string{"--tool", "ethtool", "--match", "-A"}, "ens2f0np0 after the writes: pause is rx on, tx on, not rx off, tx off"},
		{"ECN sysfs write", []string{"--write", "ecn/roce_rp/enable/0"}, "ens2f0np0 after the writes: ecn is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := simtest.Dir(t, "cx6dx-ofed", nil)
			spec := qosSpec(t, "0000:af:00.0", qos)
			args := append(append([]string{"sim", "fault", dir}, tc.fault...), "--drop")
			if code, out, errs := clitest.Run(t, args...); code != 0 {
				t.Fatalf("sim fault: exit %d\n%s%s", code, out, errs)
			}
			code, out, errs := clitest.Run(t, "--sim", dir, "apply", "--yes", "--allow-mgmt", "-f", spec)
			if code != 1 || !strings.Contains(errs, "qos[mlx5_0/1]: "+tc.want) {
				t.Fatalf("apply with a dropped write: exit %d, want 1 and %q\n%s%s", code, tc.want, out, errs)
			}
			if p := planJSON(t, dir, spec, 2); len(p.Changes) != 1 || p.Changes[0].Address != "qos[mlx5_0/1]" {
				t.Fatalf("plan after the failed apply: %+v, want qos[mlx5_0/1] left", p.Changes)
			}
			if code, out, errs := clitest.Run(t, "sim", "fault", dir, "--clear"); code != 0 {
				t.Fatalf("sim fault --clear: exit %d\n%s%s", code, out, errs)
			}
			applyThenEmpty(t, dir, spec, "--allow-mgmt")
		})
	}
}

// TestToolErrorIsTheChangesError: a dcb write that fails (exit 1 and the
// kernel's answer) fails the change with the tool's command line and
// message, not with the read-back that would follow it.
func TestToolErrorIsTheChangesError(t *testing.T) {
	dir := simtest.Dir(t, "cx6dx-ofed", nil)
	spec := qosSpec(t, "0000:af:00.0", "{pfc: [3]}")
	if code, out, errs := clitest.Run(t, "sim", "fault", dir, "--tool", "dcb", "--match", "pfc set", "--exit", "1", "--message", "Error: RTNETLINK answers: Invalid argument", "--times", "1"); code != 0 {
		t.Fatalf("sim fault: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := clitest.Run(t, "--sim", dir, "apply", "--yes", "--allow-mgmt", "-f", spec)
	for _, w := range []string{"qos[mlx5_0/1]: dcb pfc set dev ens2f0np0 prio-pfc", "RTNETLINK answers: Invalid argument"} {
		if code != 1 || !strings.Contains(errs, w) {
			t.Errorf("apply with a failing dcb: exit %d, want 1 and %q\n%s%s", code, w, out, errs)
		}
	}
	if strings.Contains(errs, "after the writes") {
		t.Errorf("the change went on to its read-back after a failed write:\n%s", errs)
	}
	applyThenEmpty(t, dir, spec, "--allow-mgmt")
}
