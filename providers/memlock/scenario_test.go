package memlock_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

const (
	limitsFile = "etc/security/limits.d/90-rdmaform.conf"
	dropIn     = "etc/systemd/system/slurmd.service.d/rdmaform.conf"
)

const spec = `version: 1
limits:
  memlock: unlimited
services:
  - name: slurmd
    limits:
      memlock: unlimited
`

func read(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if os.IsNotExist(err) {
		return "(absent)"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// unitMemlock is the LimitMEMLOCK the simulated manager loaded for a unit.
func unitMemlock(t *testing.T, dir, name string) string {
	t.Helper()
	st := simtest.State(t, dir)
	if st.Systemd == nil {
		return ""
	}
	for _, u := range st.Systemd.Units {
		if u.Name == name {
			return u.Memlock
		}
	}
	return ""
}

// TestScenario: logins get limits.d lines for * and root; slurmd gets
// its drop-in, the manager reloads, reports the limit and the running
// unit restarts; the next plan is empty, and after a reboot too. A
// smaller limit converges as well.
func TestScenario(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	f := clitest.WriteSpec(t, spec)
	out := clitest.Converge(t, dir, f)
	for _, want := range []string{
		"~ memlock[logins]", "memlock: (absent) -> unlimited",
		"~ memlock[slurmd.service]", "LimitMEMLOCK: 8M -> unlimited", "drop_in: (absent) -> /etc/systemd/system/slurmd.service.d/rdmaform.conf", "restart: true",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	wantLimits := "# Managed by rdmaform: the locked-memory limit of logins (pam_limits), for RDMA memory registration.\n" +
		"# The spec's limits: section is the source; edits here are overwritten.\n" +
		"# The * domain does not cover root (limits.conf(5)), hence root's own lines.\n" +
		"*\tsoft\tmemlock\tunlimited\n*\thard\tmemlock\tunlimited\nroot\tsoft\tmemlock\tunlimited\nroot\thard\tmemlock\tunlimited\n"
	if got := read(t, dir, limitsFile); got != wantLimits {
		t.Errorf("%s:\n%s\nwant:\n%s", limitsFile, got, wantLimits)
	}
	wantDropIn := "# Managed by rdmaform: the spec's services[].limits; edits here are overwritten.\n[Service]\nLimitMEMLOCK=infinity\n"
	if got := read(t, dir, dropIn); got != wantDropIn {
		t.Errorf("%s:\n%s\nwant:\n%s", dropIn, got, wantDropIn)
	}
	if got := unitMemlock(t, dir, "slurmd.service"); got != "infinity" {
		t.Errorf("the manager loaded LimitMEMLOCK=%q", got)
	}
	clitest.MustRun(t, 0, "sim", "reboot", dir)
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", f)

	sized := clitest.WriteSpec(t, strings.ReplaceAll(spec, "unlimited", "64G"))
	out = clitest.Converge(t, dir, sized)
	if !strings.Contains(out, "LimitMEMLOCK: unlimited -> 64G") || !strings.Contains(out, "memlock: unlimited -> 64G") {
		t.Errorf("plan:\n%s", out)
	}
	if got := read(t, dir, limitsFile); !strings.Contains(got, "*\thard\tmemlock\t67108864\n") {
		t.Errorf("limits.conf's memlock is in KiB:\n%s", got)
	}
	if got := read(t, dir, dropIn); !strings.Contains(got, "LimitMEMLOCK=68719476736\n") {
		t.Errorf("the drop-in's LimitMEMLOCK is in bytes:\n%s", got)
	}
}

// TestOverridden: a later drop-in of the operator's that sets its own
// LimitMEMLOCK wins (systemd applies drop-ins in name order): apply
// fails naming the value the manager reports, and the plan still shows
// the change.
func TestOverridden(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	if err := os.MkdirAll(filepath.Join(dir, "etc/systemd/system/slurmd.service.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "etc/systemd/system/slurmd.service.d/zz-site.conf"), []byte("[Service]\nLimitMEMLOCK=64K:1M\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := clitest.WriteSpec(t, "version: 1\nservices:\n  - {name: slurmd, limits: {memlock: unlimited}}\n")
	out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "-f", f)
	if !strings.Contains(out, "slurmd.service: LimitMEMLOCK is 64K:1M after daemon-reload, not unlimited: a later drop-in or the unit file overrides /etc/systemd/system/slurmd.service.d/rdmaform.conf") {
		t.Errorf("apply:\n%s", out)
	}
	clitest.MustRun(t, 2, "--sim", dir, "plan", "-f", f)
}

// TestLimits: 64K and 1024T converge; 63K, 1025T, a number without a
// unit, a bad suffix and an empty limits block are refused at the spec
// line with nothing changed; a unit the host does not have is a finding.
func TestLimits(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	both := func(v string) string {
		return clitest.WriteSpec(t, "version: 1\nlimits: {memlock: "+v+"}\nservices:\n  - {name: slurmd, limits: {memlock: "+v+"}}\n")
	}
	clitest.Converge(t, dir, both("64K"))
	clitest.Converge(t, dir, both("1024T"))
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", both("1048576G")) // the same limit
	for _, c := range []struct{ v, want string }{
		{"63K", "63K is out of range: from 64K to 1024T, or unlimited"},
		{"1025T", "1025T is out of range"},
		{"1048577G", "1048577G is out of range"},
		{"65536", `"65536" is not a memlock limit`},
		{"64k", `"64k" is not a memlock limit`},
		{"64P", `"64P" is not a memlock limit`},
		{"infinity", `"infinity" is not a memlock limit`},
		{"99999999999999999999999K", `"99999999999999999999999K" is not a memlock limit`},
		{"18014398509481984K", "18014398509481984K is out of range"},
	} {
		out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "-f", both(c.v))
		for _, p := range []string{"$.limits.memlock: ", "$.services[0].limits.memlock: "} {
			if !strings.Contains(out, p+c.want) {
				t.Errorf("%s: want %q at %s:\n%s", c.v, c.want, p, out)
			}
		}
	}
	if got := read(t, dir, dropIn); !strings.Contains(got, "LimitMEMLOCK=1125899906842624\n") {
		t.Errorf("a refused spec changed the drop-in:\n%s", got)
	}
	out := clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", clitest.WriteSpec(t, "version: 1\nlimits: {}\nservices:\n  - {name: nosuchd, limits: {memlock: 1G}}\n  - {name: slurmd, limits: {}}\n"))
	for _, want := range []string{"$.limits: give memlock", "$.services[1].limits: give memlock"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q:\n%s", want, out)
		}
	}
	out = clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", clitest.WriteSpec(t, "version: 1\nservices:\n  - {name: nosuchd, limits: {memlock: 1G}}\n"))
	if !strings.Contains(out, "$.services[0].name: unit nosuchd.service is not loaded (LoadState=not-found)") {
		t.Errorf("a missing unit:\n%s", out)
	}
}

// TestRevertShowAudit: an unconfirmed apply removes the files it wrote and
// the manager loads the default again; show captures both limits and the
// capture plans empty; a drop-in edited behind rdmaform's back is drift.
func TestRevertShowAudit(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	f := clitest.WriteSpec(t, spec)
	out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "--confirm-timeout", "1s", "-f", f)
	if !strings.Contains(out, "memlock[slurmd.service]") || !strings.Contains(out, "Reverted") {
		t.Fatalf("unconfirmed apply:\n%s", out)
	}
	for _, name := range []string{limitsFile, dropIn} {
		if got := read(t, dir, name); got != "(absent)" {
			t.Errorf("after the rollback %s is there:\n%s", name, got)
		}
	}
	if got := unitMemlock(t, dir, "slurmd.service"); got != "" {
		t.Errorf("after the rollback the manager has LimitMEMLOCK=%q", got)
	}
	clitest.Converge(t, dir, f)
	capture := clitest.MustRun(t, 0, "--sim", dir, "show")
	if !strings.Contains(capture, "limits:\n  memlock: unlimited") || !strings.Contains(capture, "- name: slurmd") {
		t.Errorf("show:\n%s", capture)
	}
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", clitest.WriteSpec(t, capture))
	clitest.MustRun(t, 0, "--sim", dir, "audit", "-f", f)
	if err := os.WriteFile(filepath.Join(dir, dropIn), []byte("[Service]\nLimitMEMLOCK=1M\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := clitest.MustRun(t, 2, "--sim", dir, "audit", "-f", f); !strings.Contains(out, "memlock[slurmd.service]") {
		t.Errorf("audit does not report the drift:\n%s", out)
	}
	clitest.Converge(t, dir, f)
}

// TestOfflineTree: on an offline tree (--root, no service manager: an
// image being built) the files are planned and written, and nothing is
// loaded or restarted; the next plan is empty.
func TestOfflineTree(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "sys/class/infiniband"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := clitest.WriteSpec(t, spec)
	out := clitest.MustRun(t, 2, "--root", root, "plan", "-f", f)
	if !strings.Contains(out, "~ memlock[slurmd.service]") || strings.Contains(out, "restart") || strings.Contains(out, "LimitMEMLOCK:") {
		t.Errorf("offline plan:\n%s", out)
	}
	clitest.MustRun(t, 0, "--root", root, "apply", "--yes", "-f", f)
	clitest.MustRun(t, 0, "--root", root, "plan", "-f", f)
	if got := read(t, root, dropIn); !strings.Contains(got, "LimitMEMLOCK=infinity\n") {
		t.Errorf("drop-in:\n%s", got)
	}
	if got := read(t, root, limitsFile); !strings.Contains(got, "root\thard\tmemlock\tunlimited\n") {
		t.Errorf("limits.d:\n%s", got)
	}
}
