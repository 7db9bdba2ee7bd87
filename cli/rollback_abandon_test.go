package cli_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/internal/testlab/need"
)

// TestRollbackAbandon: an operator who decides to keep the host as a
// rollback that failed part-way left it drops the journal with
// 'rollback --abandon': refused without --yes when nobody can be asked
// (the journal stays), then with --yes both copies go, nothing on the
// host changes, status is clean, a later rollback has nothing to do, and
// an apply is no longer refused. Then apply, and plan is empty.
func TestRollbackAbandon(t *testing.T) {
	l := newRBLab(t)
	h := l.newHost("h", "vm-soft")
	spec := l.spec("s.yaml", "version: 1\nrxe:\n  - {name: rxe0, netdev: enp1s0}\ninterfaces:\n  - name: enp1s0\n    mtu: 4000\n")
	journals := []string{"run/rdmaform/rollback.json", "var/lib/rdmaform/unconfirmed.json"}
	if code, out := l.rf("--sim", h, "rollback", "--abandon", "--yes"); code != 1 || !strings.Contains(out, "nothing to abandon") {
		t.Errorf("rollback --abandon with no journal: exit %d, want 1\n%s", code, out)
	}
	_, done := l.waitingApply(h, "60s", spec)
	l.must(0, "sim", "fault", h, "--netlink", "LinkSetMTU", "--match", "enp1s0", "--times", "1", "--message", "injected: MTU refused")
	l.must(1, "--sim", h, "rollback")
	done()
	// The rxe link is rolled back, the MTU is not: the host as it is now.
	kept := l.must(2, "--sim", h, "plan", "-f", spec)

	out := l.must(1, "--sim", h, "rollback", "--abandon")
	if !strings.Contains(out, "asks before it drops the rollback journal") || !strings.Contains(out, "use --yes") {
		t.Errorf("rollback --abandon without --yes and no terminal:\n%s", out)
	}
	for _, f := range journals {
		if !exists(filepath.Join(h, f)) {
			t.Errorf("%s went without a confirmation", f)
		}
	}
	// At a terminal, any answer but "yes" keeps the journal.
	var o, e bytes.Buffer
	code := cli.Run([]string{"--sim", h, "rollback", "--abandon"}, cli.Env{Stdin: strings.NewReader("no\n"), Stdout: &o, Stderr: &e,
		Environ: []string{"NO_COLOR=1"}, StdinTTY: true, StdoutTTY: true})
	if code != 1 || !strings.Contains(e.String(), "Do you want to abandon the rollback journal") || !strings.Contains(e.String(), "rollback --abandon cancelled") {
		t.Errorf("answered no: exit %d\n%s%s", code, o.String(), e.String())
	}
	for _, f := range journals {
		if !exists(filepath.Join(h, f)) {
			t.Errorf("%s went though the answer was no", f)
		}
	}
	out = l.must(0, "--sim", h, "rollback", "--abandon", "--yes")
	if !strings.Contains(out, "Abandoned the rollback journal") || !strings.Contains(out, "interface[enp1s0]") {
		t.Errorf("rollback --abandon --yes:\n%s", out)
	}
	for _, f := range journals {
		if exists(filepath.Join(h, f)) {
			t.Errorf("%s outlives rollback --abandon", f)
		}
	}
	if got := l.must(2, "--sim", h, "plan", "-f", spec); got != kept {
		t.Errorf("rollback --abandon changed the host: plan before\n%s\nafter\n%s", kept, got)
	}
	l.must(0, "--sim", h, "status")
	if code, out := l.rf("--sim", h, "rollback"); code != 1 || !strings.Contains(out, "nothing to roll back") {
		t.Errorf("rollback after --abandon: exit %d\n%s", code, out)
	}
	l.must(0, "--sim", h, "rollback", "--after-boot")
	l.must(0, "--sim", h, "apply", "--yes", "--allow-mgmt", "-f", spec)
	l.must(0, "--sim", h, "plan", "-f", spec)
}

// TestRollbackAbandonAfterReboot: after a reboot only the journal's copy
// in /var/lib is left, which the boot unit's 'rollback --after-boot'
// would act on; 'rollback --abandon --yes' drops it, and the next
// 'rollback --after-boot' leaves the apply's changes (here its
// modules-load.d entry) alone.
func TestRollbackAbandonAfterReboot(t *testing.T) {
	need.Tool(t, "pgrep", "apt-get install procps") // killWatcher
	l := newRBLab(t)
	h := l.sriovHost("h")
	spec := l.spec("s.yaml", "version: 1\nmodules: [rdma_ucm]\n")
	cmd, done := l.waitingApply(h, "10m", spec)
	_ = cmd.Process.Kill()
	done()
	killWatcher(t, h)
	l.must(0, "sim", "reboot", h)
	if exists(filepath.Join(h, "run/rdmaform/rollback.json")) || !exists(filepath.Join(h, "var/lib/rdmaform/unconfirmed.json")) {
		t.Fatal("after the reboot: want only the journal's copy in /var/lib")
	}
	out := l.must(0, "--sim", h, "rollback", "--abandon", "--yes")
	if !strings.Contains(out, "Abandoned the rollback journal") || !strings.Contains(out, "module[rdma_ucm]") {
		t.Errorf("rollback --abandon --yes after a reboot:\n%s", out)
	}
	if exists(filepath.Join(h, "var/lib/rdmaform/unconfirmed.json")) {
		t.Error("the journal's copy outlives rollback --abandon")
	}
	if out := l.must(0, "--sim", h, "rollback", "--after-boot"); out != "" {
		t.Errorf("rollback --after-boot after --abandon: %q", out)
	}
	if got := hostState(t, h); !strings.Contains(got, "modules-load.d [rdma_ucm]") {
		t.Errorf("the apply's change is gone: %s", got)
	}
}
