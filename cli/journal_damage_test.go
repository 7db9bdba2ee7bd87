package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/internal/testlab/systemdlab"
	"github.com/rdmaform/rdmaform/sim"
)

// truncateHalf cuts a file to half its length, as a full disk or a
// careless editor would.
func truncateHalf(t *testing.T, p string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
}

// journalOf reads the live journal's pids on h: the apply's and its
// detached watcher's.
func journalOf(t *testing.T, h string) (apply, watcher int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h, "run/rdmaform/rollback.json"))
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		PID        int `json:"pid"`
		WatcherPID int `json:"watcher_pid"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	return j.PID, j.WatcherPID
}

// killPID kills a process this test's apply started (the detached
// watcher) and waits until it is gone.
func killPID(t *testing.T, pid int) {
	t.Helper()
	if pid <= 0 {
		t.Fatal("no watcher pid in the journal")
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 100 && runs(pid); i++ {
		time.Sleep(50 * time.Millisecond)
	}
}

// runs: pid is a process that is neither gone nor a zombie (a killed
// watcher stays one while the apply that started it runs).
func runs(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}

// TestDamagedJournalUsesItsCopy: with the live journal truncated while an
// apply waits, status names the damage and the waiting apply (exit 1), an apply is
// refused, and 'rollback' rolls back from the journal's intact copy in
// /var/lib (saying so); the waiting apply learns its changes were rolled
// back. Then apply, and plan is empty.
func TestDamagedJournalUsesItsCopy(t *testing.T) {
	l := newRBLab(t)
	h := l.newHost("h", "vm-soft")
	spec := l.spec("s.yaml", "version: 1\nrxe:\n  - {name: rxe0, netdev: enp1s0}\n")
	_, done := l.waitingApply(h, "10m", spec)
	truncateHalf(t, filepath.Join(h, "run/rdmaform/rollback.json"))

	out := l.must(1, "--sim", h, "status")
	for _, want := range []string{"the rollback journal is damaged", "not a journal rdmaform wrote", "unconfirmed.json instead", "waits for confirmation until"} {
		if !strings.Contains(out, want) {
			t.Errorf("status with the live journal truncated lacks %q:\n%s", want, out)
		}
	}
	if code, out := l.rf("--sim", h, "apply", "--yes", "-f", spec); code != 1 || !strings.Contains(out, "waiting for confirmation") {
		t.Errorf("apply while one waits: exit %d\n%s", code, out)
	}
	out = l.must(0, "--sim", h, "rollback")
	if !strings.Contains(out, "warning: the rollback journal is damaged") || !strings.Contains(out, "Rolled back") || !strings.Contains(out, "rxe[rxe0]") {
		t.Errorf("rollback from the journal's copy:\n%s", out)
	}
	if code, out := done(); code != 1 || !strings.Contains(out, "Not kept: the changes were rolled back") {
		t.Errorf("the waiting apply: exit %d\n%s", code, out)
	}
	for _, f := range []string{"run/rdmaform/rollback.json", "var/lib/rdmaform/unconfirmed.json"} {
		if exists(filepath.Join(h, f)) {
			t.Errorf("%s outlives the rollback", f)
		}
	}
	l.must(2, "--sim", h, "plan", "-f", spec)
	l.must(0, "--sim", h, "status")
	l.must(0, "--sim", h, "apply", "--yes", "-f", spec)
	l.must(0, "--sim", h, "plan", "-f", spec)
}

// TestDamagedJournalAbandon: both copies of the journal truncated, with
// the apply and its watcher gone: rollback cannot roll back and says
// how to get out, status names the damage and exits 1, an apply is
// refused naming the damage and --abandon, and 'rollback --abandon
// --yes' drops what is left. Then apply, and plan is empty.
func TestDamagedJournalAbandon(t *testing.T) {
	l := newRBLab(t)
	h := l.newHost("h", "vm-soft")
	spec := l.spec("s.yaml", "version: 1\nrxe:\n  - {name: rxe0, netdev: enp1s0}\n")
	cmd, done := l.waitingApply(h, "10m", spec)
	_, watcher := journalOf(t, h)
	_ = cmd.Process.Kill()
	done()
	killPID(t, watcher)
	for _, f := range []string{"run/rdmaform/rollback.json", "var/lib/rdmaform/unconfirmed.json"} {
		truncateHalf(t, filepath.Join(h, f))
	}
	code, out := l.rf("--sim", h, "rollback")
	if code != 1 || !strings.Contains(out, "no intact copy") || !strings.Contains(out, "unexpected end of JSON input") || !strings.Contains(out, "rollback --abandon") {
		t.Errorf("rollback of a journal with no intact copy: exit %d\n%s", code, out)
	}
	code, out = l.rf("--sim", h, "status")
	if code != 1 || !strings.Contains(out, "the rollback journal is damaged") || !strings.Contains(out, "nothing can roll the apply back") {
		t.Errorf("status: exit %d\n%s", code, out)
	}
	code, out = l.rf("--sim", h, "apply", "--yes", "-f", spec)
	if code != 1 || !strings.Contains(out, "no intact copy") || !strings.Contains(out, "rollback --abandon") {
		t.Errorf("apply: exit %d\n%s", code, out)
	}
	out = l.must(0, "--sim", h, "rollback", "--abandon", "--yes")
	if !strings.Contains(out, "does not read back") || !strings.Contains(out, "Abandoned the rollback journal") {
		t.Errorf("rollback --abandon --yes:\n%s", out)
	}
	for _, f := range []string{"run/rdmaform/rollback.json", "var/lib/rdmaform/unconfirmed.json", "run/rdmaform/confirm-pending"} {
		if exists(filepath.Join(h, f)) {
			t.Errorf("%s outlives rollback --abandon", f)
		}
	}
	// The host kept the unconfirmed change.
	l.must(0, "--sim", h, "plan", "-f", spec)
	l.must(0, "--sim", h, "status")
	l.must(0, "--sim", h, "apply", "--yes", "-f", spec)
	l.must(0, "--sim", h, "plan", "-f", spec)
}

// TestDamagedBootJournal: after a reboot, a truncated unconfirmed.json
// makes 'rollback --after-boot' fail once, naming the damage and the way
// out; it is moved aside, so the next boot's run succeeds, and status
// names it (exit 1) until 'rollback --abandon --yes'.
func TestDamagedBootJournal(t *testing.T) {
	l := newRBLab(t)
	h := l.newHost("h", "vm-soft")
	spec := l.spec("s.yaml", "version: 1\nmodules: [rdma_ucm]\n")
	cmd, done := l.waitingApply(h, "10m", spec)
	_, watcher := journalOf(t, h)
	_ = cmd.Process.Kill()
	done()
	killPID(t, watcher)
	l.must(0, "sim", "reboot", h)
	truncateHalf(t, filepath.Join(h, "var/lib/rdmaform/unconfirmed.json"))
	code, out := l.rf("--sim", h, "rollback", "--after-boot")
	if code != 1 || !strings.Contains(out, "journal is damaged") || !strings.Contains(out, "unexpected end of JSON input") || !strings.Contains(out, "rollback --abandon --yes") {
		t.Errorf("rollback --after-boot, first boot: exit %d\n%s", code, out)
	}
	if out := l.must(0, "--sim", h, "rollback", "--after-boot"); out != "" {
		t.Errorf("rollback --after-boot, next boot: %q", out)
	}
	code, out = l.rf("--sim", h, "status")
	if code != 1 || !strings.Contains(out, "unexpected end of JSON input") || !strings.Contains(out, "rollback --abandon") {
		t.Errorf("status after the damaged boot journal: exit %d\n%s", code, out)
	}
	l.must(0, "--sim", h, "rollback", "--abandon", "--yes")
	l.must(0, "--sim", h, "status")
	l.must(0, "--sim", h, "apply", "--yes", "-f", spec)
	l.must(0, "--sim", h, "plan", "-f", spec)
}

// TestJournalFIFO: a FIFO at the journal's name (and at the confirm
// file's, and as a spec) blocks no command: each refuses it by its kind
// at once. --abandon removes it.
func TestJournalFIFO(t *testing.T) {
	l := newRBLab(t)
	h := l.newHost("h", "vm-soft")
	spec := l.spec("s.yaml", "version: 1\nrxe:\n  - {name: rxe0, netdev: enp1s0}\n")
	if err := os.MkdirAll(filepath.Join(h, "run/rdmaform"), 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(h, "run/rdmaform/rollback.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	specFIFO := filepath.Join(l.dir, "spec.fifo")
	if err := syscall.Mkfifo(specFIFO, 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(want int, wantOut string, args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, l.bin, args...)
		cmd.Env = append(os.Environ(), "NO_COLOR=1")
		out, _ := cmd.CombinedOutput()
		if ctx.Err() != nil {
			t.Fatalf("rdmaform %s blocked on a FIFO", strings.Join(args, " "))
		}
		if code := cmd.ProcessState.ExitCode(); code != want || !strings.Contains(string(out), wantOut) {
			t.Errorf("rdmaform %s: exit %d, want %d and %q\n%s", strings.Join(args, " "), code, want, wantOut, out)
		}
	}
	run(1, "is a FIFO, not a regular file", "--sim", h, "status")
	run(1, "is a FIFO, not a regular file", "--sim", h, "rollback")
	run(1, "nothing waits for confirmation", "--sim", h, "confirm")
	run(1, "is a FIFO, not a regular file", "--sim", h, "apply", "--yes", "-f", spec)
	run(1, "is a FIFO, not a regular file", "validate", "-f", specFIFO)
	run(1, "is a FIFO, not a regular file", "--sim", h, "plan", "-f", specFIFO)
	// A FIFO at the confirm file's name: no apply, and no hang.
	confirm := filepath.Join(h, "run/rdmaform/confirm-pending")
	if err := syscall.Mkfifo(confirm, 0o600); err != nil {
		t.Fatal(err)
	}
	run(1, "is a FIFO, not a regular file", "--sim", h, "apply", "--yes", "-f", spec)
	run(0, "Abandoned the rollback journal", "--sim", h, "rollback", "--abandon", "--yes")
	for _, f := range []string{fifo, confirm} {
		if _, err := os.Lstat(f); err == nil {
			t.Errorf("%s outlives rollback --abandon", f)
		}
	}
	l.must(0, "--sim", h, "status")
	l.must(0, "--sim", h, "apply", "--yes", "-f", spec)
	l.must(0, "--sim", h, "plan", "-f", spec)
}

// TestStatusNamesAWaitingApply: status reports an apply that waits for
// its confirmation (its deadline, and its watcher running), in text and
// JSON, and exits 0 (nothing waits for a reboot); after confirm it is
// gone from status.
func TestStatusNamesAWaitingApply(t *testing.T) {
	l := newRBLab(t)
	h := l.newHost("h", "vm-soft")
	spec := l.spec("s.yaml", "version: 1\nrxe:\n  - {name: rxe0, netdev: enp1s0}\n")
	_, done := l.waitingApply(h, "10m", spec)
	applyPID, watcher := journalOf(t, h)
	out := l.must(0, "--sim", h, "status")
	for _, want := range []string{"waits for confirmation until", "(running)", "watcher pid", "confirm' to keep its changes"} {
		if !strings.Contains(out, want) {
			t.Errorf("status while an apply waits lacks %q:\n%s", want, out)
		}
	}
	var doc struct {
		RollbackJournal *struct {
			Waiting        bool   `json:"waiting"`
			PID            int    `json:"pid"`
			ApplyRunning   bool   `json:"apply_running"`
			Deadline       string `json:"deadline"`
			Watcher        string `json:"watcher"`
			WatcherRunning *bool  `json:"watcher_running"`
			Stranded       bool   `json:"stranded"`
		} `json:"rollback_journal"`
	}
	js := l.must(0, "--sim", h, "status", "-o", "json")
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err, js)
	}
	if r := doc.RollbackJournal; r == nil || !r.Waiting || r.PID != applyPID || !r.ApplyRunning || r.Deadline == "" || r.WatcherRunning == nil || !*r.WatcherRunning || r.Stranded {
		t.Errorf("status -o json while an apply waits:\n%s", js)
	}
	killPID(t, watcher)
	out = l.must(0, "--sim", h, "status")
	if !strings.Contains(out, "watcher pid") || !strings.Contains(out, "(gone)") {
		t.Errorf("status with the watcher killed:\n%s", out)
	}
	l.must(0, "--sim", h, "confirm")
	if code, _ := done(); code != 0 {
		t.Errorf("the confirmed apply exited %d", code)
	}
	if out := l.must(0, "--sim", h, "status"); strings.Contains(out, "confirmation") {
		t.Errorf("status after confirm:\n%s", out)
	}
	l.must(0, "--sim", h, "plan", "-f", spec)
}

// TestConfirmRefusedPastDeadline: the apply and its watcher both killed,
// and the deadline passed: status names the stranded apply (exit 1),
// plan warns of it, and confirm refuses ("too late"), naming rollback and
// --abandon, where it said "Confirmed." and kept changes nobody confirmed
// in time. rollback then puts them back. Then apply, and plan is empty.
func TestConfirmRefusedPastDeadline(t *testing.T) {
	l := newRBLab(t)
	h := l.newHost("h", "vm-soft")
	spec := l.spec("s.yaml", "version: 1\nrxe:\n  - {name: rxe0, netdev: enp1s0}\n")
	cmd, done := l.waitingApply(h, "3s", spec)
	_, watcher := journalOf(t, h)
	_ = cmd.Process.Kill()
	done()
	killPID(t, watcher)
	time.Sleep(4 * time.Second)
	code, out := l.rf("--sim", h, "status")
	if code != 1 || !strings.Contains(out, "was not confirmed by") || !strings.Contains(out, "nothing is left to roll it back") {
		t.Errorf("status, stranded: exit %d\n%s", code, out)
	}
	code, out = l.rf("--sim", h, "plan", "-f", spec)
	if code != 0 || !strings.Contains(out, "warning: the apply of pid") || !strings.Contains(out, "rollback --abandon") {
		t.Errorf("plan, stranded: exit %d\n%s", code, out)
	}
	code, out = l.rf("--sim", h, "confirm")
	if code != 1 || !strings.Contains(out, "too late") || !strings.Contains(out, "rollback' to put them back") || strings.Contains(out, "Confirmed.") {
		t.Errorf("confirm past the deadline: exit %d\n%s", code, out)
	}
	out = l.must(0, "--sim", h, "rollback")
	if !strings.Contains(out, "Rolled back") {
		t.Errorf("rollback:\n%s", out)
	}
	l.must(2, "--sim", h, "plan", "-f", spec)
	l.must(0, "--sim", h, "status")
	l.must(0, "--sim", h, "apply", "--yes", "-f", spec)
	l.must(0, "--sim", h, "plan", "-f", spec)
}

// TestRollbackNamesAModuleOnce: a module the apply loaded and listed is
// put back by two changes (its modules-load.d entry, its unload); the
// rollback's message and the waiting apply's name it once.
func TestRollbackNamesAModuleOnce(t *testing.T) {
	l := newRBLab(t)
	h := l.newHost("h", "cx5-roce")
	spec := l.spec("s.yaml", "version: 1\nmodules: [rdma_ucm]\n")
	_, done := l.waitingApply(h, "10m", spec)
	out := l.must(0, "--sim", h, "rollback")
	_, applyOut := done()
	for name, text := range map[string]string{"rollback": out, "the waiting apply": applyOut} {
		if n := strings.Count(text, "module[rdma_ucm]"); !strings.Contains(text, "olled back at") || strings.Contains(text, "module[rdma_ucm], module[rdma_ucm]") {
			t.Errorf("%s names module[rdma_ucm] %d times:\n%s", name, n, text)
		}
	}
	l.must(2, "--sim", h, "plan", "-f", spec)
	l.must(0, "--sim", h, "apply", "--yes", "-f", spec)
	l.must(0, "--sim", h, "plan", "-f", spec)
}

// TestInterruptedConfirmWaitSaysSo: SIGINT while an apply waits for its
// confirmation reverts, and the apply says it was interrupted, not that
// the timeout ran out.
func TestInterruptedConfirmWaitSaysSo(t *testing.T) {
	l := newRBLab(t)
	h := l.newHost("h", "cx5-roce")
	spec := l.spec("s.yaml", "version: 1\nmodules: [rdma_ucm]\n")
	cmd, done := l.waitingApply(h, "10m", spec)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code, out := done()
	if code == 0 || !strings.Contains(out, "interrupted before confirmation: the changes were reverted") || strings.Contains(out, "not confirmed within") {
		t.Errorf("SIGINT during the confirm wait: exit %d\n%s", code, out)
	}
	l.must(2, "--sim", h, "plan", "-f", spec)
	l.must(0, "--sim", h, "apply", "--yes", "-f", spec)
	l.must(0, "--sim", h, "plan", "-f", spec)
}

// TestStatusNamesTheSystemdTimer: where a real systemd manager holds the
// deadline (rdmaform-rollback.timer), status names the timer and says it
// runs while the apply waits; after a rollback, status says nothing of it.
func TestStatusNamesTheSystemdTimer(t *testing.T) {
	lab := systemdlab.Start(t)
	l := newRBLab(t)
	l.env = []string{"RDMAFORM_SYSTEMD_ADDRESS=" + lab.Address}
	h := l.newHost("h", "vm-soft")
	spec := l.spec("s.yaml", "version: 1\nrxe:\n  - {name: rxe0, netdev: enp1s0}\n")
	_, done := l.waitingApply(h, "10m", spec)
	out := l.must(0, "--sim", h, "status")
	if !strings.Contains(out, "waits for confirmation until") || !strings.Contains(out, "systemd timer rdmaform-rollback.timer (running)") {
		t.Errorf("status while an apply waits, its deadline held by systemd:\n%s\n%s", out, lab.Log())
	}
	l.must(0, "--sim", h, "rollback")
	done()
	if out := l.must(0, "--sim", h, "status"); strings.Contains(out, "rdmaform-rollback") {
		t.Errorf("status after the rollback:\n%s", out)
	}
	l.must(0, "--sim", h, "apply", "--yes", "-f", spec)
	l.must(0, "--sim", h, "plan", "-f", spec)
}

// opensmActive tells whether the simulated host runs opensm.service.
func opensmActive(t *testing.T, h string) bool {
	t.Helper()
	s, err := sim.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := s.Host()
	if err != nil {
		t.Fatal(err)
	}
	st, err := sh.Systemd.Unit(context.Background(), "opensm.service")
	if err != nil {
		t.Fatal(err)
	}
	return st.Active()
}

// TestRollbackStopsTheOpenSMItStarted: an apply of the README's
// subnet_manager example on a host whose opensm did not run starts it;
// rolled back (by 'rollback', and by the apply itself when nobody
// confirms), opensm is stopped again and its files are gone, as before
// the apply. Then apply, and plan is empty.
func TestRollbackStopsTheOpenSMItStarted(t *testing.T) {
	for _, how := range []string{"rollback", "timeout"} {
		t.Run(how, func(t *testing.T) {
			l := newRBLab(t)
			h := l.newHost("h", "cx6-vpi-sm")
			spec := l.spec("s.yaml", readmeSubnetManager)
			if how == "rollback" {
				_, done := l.waitingApply(h, "10m", spec)
				if !opensmActive(t, h) {
					t.Fatal("the apply did not start opensm")
				}
				l.must(0, "--sim", h, "rollback")
				done()
			} else {
				l.must(1, "--sim", h, "apply", "--yes", "--confirm-timeout", "2s", "-f", spec)
			}
			if opensmActive(t, h) {
				t.Error("opensm still runs after the rollback: it did not before the apply")
			}
			for _, f := range []string{"etc/opensm/partitions.conf", "etc/opensm/opensm.conf"} {
				if exists(filepath.Join(h, f)) {
					t.Errorf("%s outlives the rollback", f)
				}
			}
			l.must(2, "--sim", h, "plan", "-f", spec)
			l.must(0, "--sim", h, "apply", "--yes", "-f", spec)
			l.must(0, "--sim", h, "plan", "-f", spec)
		})
	}
}
