package rdmanetns_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

func rf(t *testing.T, args ...string) (int, string) {
	t.Helper()
	code, out, errs := clitest.Run(t, args...)
	return code, out + errs
}

func newHost(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "host")
	if code, out := rf(t, "sim", "new", dir, "--profile", "vm-soft"); code != 0 {
		t.Fatal(out)
	}
	return dir
}

func simOf(t *testing.T, dir string) *sim.Sim {
	t.Helper()
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func want(t *testing.T, code, wantCode int, out string, contains ...string) {
	t.Helper()
	if code != wantCode {
		t.Fatalf("exit %d, want %d\n%s", code, wantCode, out)
	}
	for _, c := range contains {
		if !strings.Contains(out, c) {
			t.Fatalf("output lacks %q:\n%s", c, out)
		}
	}
}

// TestScenario: exclusive now and at boot; back to shared while another
// network namespace exists, which the kernel refuses (EBUSY), so the
// runtime part waits for the reboot the file makes it at; after the
// reboot nothing is left. Every step ends with apply, then plan is empty
// (or only the deferred runtime switch, exit 3, until the reboot).
func TestScenario(t *testing.T) {
	dir := newHost(t)
	conf := filepath.Join(dir, "etc/modprobe.d/rdmaform.conf")
	excl := clitest.WriteSpec(t, "version: 1\nrdma:\n  netns_mode: exclusive\n")

	code, out := rf(t, "--sim", dir, "plan", "-f", excl)
	want(t, code, 2, out, "+ rdma_netns[boot]", "~ rdma_netns[runtime]", "netns_mode: shared -> exclusive")
	code, out = rf(t, "--sim", dir, "apply", "--yes", "-f", excl)
	want(t, code, 0, out)
	code, out = rf(t, "--sim", dir, "plan", "-f", excl)
	want(t, code, 0, out, "No changes")
	if m := simOf(t, dir).State().RdmaNetnsMode; m != "exclusive" {
		t.Fatalf("mode after apply: %q", m)
	}
	b, err := os.ReadFile(conf)
	if err != nil || !strings.HasSuffix(string(b), "\noptions ib_core netns_mode=0\n") {
		t.Fatalf("%s: %q, %v", conf, b, err)
	}

	// A container's namespace: the switch back waits for the reboot.
	if err := simOf(t, dir).AddNetns("ctr1"); err != nil {
		t.Fatal(err)
	}
	shared := clitest.WriteSpec(t, "version: 1\nrdma:\n  netns_mode: shared\n")
	code, out = rf(t, "--sim", dir, "plan", "-f", shared)
	want(t, code, 2, out, "~ rdma_netns[boot]", "? rdma_netns[runtime]", "EBUSY", "/run/netns/ctr1")
	if strings.Contains(out, "~ rdma_netns[runtime]") {
		t.Fatalf("the refused switch is planned as a change:\n%s", out)
	}
	code, out = rf(t, "--sim", dir, "apply", "--yes", "-f", shared)
	want(t, code, 3, out)
	code, out = rf(t, "--sim", dir, "plan", "-f", shared)
	want(t, code, 3, out, "? rdma_netns[runtime]")
	if strings.Contains(out, "~ ") || strings.Contains(out, "+ ") {
		t.Fatalf("plan after apply still changes:\n%s", out)
	}
	code, out = rf(t, "--sim", dir, "audit", "-f", shared)
	want(t, code, 3, out, "rdma_netns[runtime]", "EBUSY")
	if m := simOf(t, dir).State().RdmaNetnsMode; m != "exclusive" {
		t.Fatalf("the refused switch changed the mode: %q", m)
	}

	if err := simOf(t, dir).Reboot(); err != nil {
		t.Fatal(err)
	}
	code, out = rf(t, "--sim", dir, "plan", "-f", shared)
	want(t, code, 0, out, "No changes")
	if m := simOf(t, dir).State().RdmaNetnsMode; m != "" {
		t.Fatalf("mode after the reboot: %q, want shared", m)
	}
	code, out = rf(t, "--sim", dir, "show")
	want(t, code, 0, out, "netns_mode: shared")
}

// TestBadMode: a mode other than shared or exclusive is refused at its
// line and nothing changes.
func TestBadMode(t *testing.T) {
	dir := newHost(t)
	for _, tc := range []struct{ spec, msg string }{
		{"version: 1\nrdma:\n  netns_mode: private\n", `host.yaml:3:15: error: $.rdma.netns_mode: must be shared or exclusive, not "private"`},
		{"version: 1\nrdma: {}\n", "host.yaml:2:7: error: $.rdma: give netns_mode: shared or exclusive"},
	} {
		code, out := rf(t, "--sim", dir, "apply", "--yes", "-f", clitest.WriteSpec(t, tc.spec))
		want(t, code, 1, out, tc.msg)
	}
	if _, err := os.Stat(filepath.Join(dir, "etc/modprobe.d/rdmaform.conf")); err == nil {
		t.Fatal("a bad spec wrote the file")
	}
}

// TestWithoutIBCore: with ib_core not loaded only the file is written,
// before the modules stage loads ib_core, which takes the mode from it.
func TestWithoutIBCore(t *testing.T) {
	s, _ := simtest.New(t, "vm-soft", 0, func(st *sim.State) { st.Modules = nil })
	spec := clitest.WriteSpec(t, "version: 1\nrdma:\n  netns_mode: exclusive\nmodules: [ib_core]\n")
	code, out := rf(t, "--sim", s.Dir, "plan", "-f", spec)
	want(t, code, 2, out, "+ rdma_netns[boot]", "+ module[ib_core]")
	if strings.Contains(out, "rdma_netns[runtime]") {
		t.Fatalf("a runtime switch without ib_core:\n%s", out)
	}
	code, out = rf(t, "--sim", s.Dir, "apply", "--yes", "-f", spec)
	want(t, code, 0, out)
	code, out = rf(t, "--sim", s.Dir, "plan", "-f", spec)
	want(t, code, 0, out, "No changes")
	if m := simOf(t, s.Dir).State().RdmaNetnsMode; m != "exclusive" {
		t.Fatalf("ib_core loaded in mode %q", m)
	}
}

// TestHandWrittenConf: a file a person wrote with netns_mode=N (a bool
// parameter: ib_core loads exclusive) is read as exclusive: show
// captures it on a host where ib_core is not loaded yet, and the plan
// rewriting it for shared says exclusive -> shared; apply, then plan is
// empty.
func TestHandWrittenConf(t *testing.T) {
	s, _ := simtest.New(t, "vm-soft", 0, func(st *sim.State) { st.Modules = nil })
	conf := filepath.Join(s.Dir, "etc/modprobe.d/rdmaform.conf")
	if err := os.MkdirAll(filepath.Dir(conf), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte("options ib_core netns_mode=N\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := rf(t, "--sim", s.Dir, "show")
	want(t, code, 0, out, "netns_mode: exclusive")
	spec := clitest.WriteSpec(t, "version: 1\nrdma:\n  netns_mode: shared\n")
	code, out = rf(t, "--sim", s.Dir, "plan", "-f", spec)
	want(t, code, 2, out, "~ rdma_netns[boot]", "netns_mode_at_boot: exclusive -> shared")
	code, out = rf(t, "--sim", s.Dir, "apply", "--yes", "-f", spec)
	want(t, code, 0, out)
	code, out = rf(t, "--sim", s.Dir, "plan", "-f", spec)
	want(t, code, 0, out, "No changes")
}
