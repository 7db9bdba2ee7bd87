package cli_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/internal/testlab/need"
	"github.com/rdmaform/rdmaform/sim"
)

// rbLab is a simulated host for the rollback tests, driven through a
// built rdmaform (an apply that waits for confirmation is a process of
// its own, and so is its watcher).
type rbLab struct {
	t   *testing.T
	bin string
	dir string
	env []string
}

func newRBLab(t *testing.T) *rbLab {
	t.Helper()
	return &rbLab{t: t, bin: buildRdmaform(t), dir: t.TempDir()}
}

// rf runs rdmaform and returns its exit code and combined output.
func (l *rbLab) rf(args ...string) (int, string) {
	l.t.Helper()
	cmd := exec.Command(l.bin, args...)
	cmd.Env = append(append(os.Environ(), l.env...), "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		l.t.Fatal(err)
	}
	return 0, string(out)
}

func (l *rbLab) must(want int, args ...string) string {
	l.t.Helper()
	code, out := l.rf(args...)
	if code != want {
		l.t.Fatalf("rdmaform %s: exit %d, want %d\n%s", strings.Join(args, " "), code, want, out)
	}
	return out
}

func (l *rbLab) newHost(name, profile string) string {
	l.t.Helper()
	h := filepath.Join(l.dir, name)
	l.must(0, "sim", "new", h, "--profile", profile)
	return h
}

func (l *rbLab) spec(name, text string) string {
	l.t.Helper()
	p := filepath.Join(l.dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		l.t.Fatal(err)
	}
	return p
}

// waitingApply starts apply --confirm-timeout and returns once it waits;
// done yields its exit code and the rest of its output.
func (l *rbLab) waitingApply(h, timeout, spec string) (cmd *exec.Cmd, done func() (int, string)) {
	l.t.Helper()
	cmd, sc, errb := startWaiting(l.t, l.bin, l.env, "--sim", h, "apply", "--yes", "--confirm-timeout", timeout, "-f", spec)
	rest := make(chan string, 1)
	go func() {
		var b strings.Builder
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		rest <- b.String()
	}()
	return cmd, func() (int, string) {
		out := <-rest
		err := cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return code, out + errb.String()
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestRollbackFailsPartWay: a rollback whose undo of one resource fails
// (a simulated netlink error) puts back the others, keeps its journal
// (both copies), says what is left, and status names it; a confirm then
// does not claim a full rollback; the next 'rdmaform rollback' undoes
// only what is left and drops the journal.
func TestRollbackFailsPartWay(t *testing.T) {
	l := newRBLab(t)
	h := l.newHost("h", "vm-soft")
	spec := l.spec("s.yaml", "version: 1\nmodules: [rdma_rxe]\nrxe:\n  - {name: rxe0, netdev: enp1s0}\ninterfaces:\n  - name: enp1s0\n    mtu: 4000\n")
	_, done := l.waitingApply(h, "60s", spec)
	l.must(0, "sim", "fault", h, "--netlink", "LinkSetMTU", "--match", "enp1s0", "--times", "1", "--message", "injected: MTU refused")

	code, out := l.rf("--sim", h, "rollback")
	if code != 1 || !strings.Contains(out, "rollback incomplete (still to undo: interface[enp1s0]") || !strings.Contains(out, "injected: MTU refused") {
		t.Errorf("rollback with a failing undo: exit %d, want 1 naming interface[enp1s0] and the cause\n%s", code, out)
	}
	for _, f := range []string{"run/rdmaform/rollback.json", "var/lib/rdmaform/unconfirmed.json"} {
		if !exists(filepath.Join(h, f)) {
			t.Errorf("%s is gone after a rollback that failed part-way", f)
		}
	}
	if code, out := done(); code != 1 || strings.Contains(out, "Confirmed") || !strings.Contains(out, "partly rolled back") {
		t.Errorf("the waiting apply: exit %d, want 1 saying the changes were partly rolled back\n%s", code, out)
	}
	out = l.must(1, "--sim", h, "status")
	if !strings.Contains(out, "a rollback failed part-way") || !strings.Contains(out, "still to undo interface[enp1s0]") {
		t.Errorf("status does not name the unfinished rollback:\n%s", out)
	}
	out = l.must(1, "--sim", h, "status", "-o", "json")
	if !strings.Contains(out, `"unfinished_rollback"`) || !strings.Contains(out, `"interface[enp1s0]"`) {
		t.Errorf("status -o json does not name the unfinished rollback:\n%s", out)
	}
	out = l.must(1, "--sim", h, "confirm")
	if !strings.Contains(out, "partly rolled back") || !strings.Contains(out, "still to undo: interface[enp1s0]") {
		t.Errorf("confirm after a partial rollback:\n%s", out)
	}

	// Until then an apply is refused: a later retry would undo its changes.
	out = l.must(1, "--sim", h, "apply", "--yes", "--allow-mgmt", "-f", spec)
	if !strings.Contains(out, "a rollback failed part-way") || !strings.Contains(out, "nothing was changed") {
		t.Errorf("an apply while the rollback is unfinished:\n%s", out)
	}

	// The retry undoes what is left, and only that.
	out = l.must(0, "--sim", h, "rollback")
	if !strings.Contains(out, "Rolled back at ") || !strings.Contains(out, "interface[enp1s0]") || strings.Contains(out, "rxe[rxe0]") {
		t.Errorf("the retry: want interface[enp1s0] put back and rxe[rxe0] not undone twice\n%s", out)
	}
	for _, f := range []string{"run/rdmaform/rollback.json", "var/lib/rdmaform/unconfirmed.json"} {
		if exists(filepath.Join(h, f)) {
			t.Errorf("%s outlives a complete rollback", f)
		}
	}
	l.must(0, "--sim", h, "status")
	out = l.must(2, "--sim", h, "plan", "-f", spec)
	for _, want := range []string{"+ rxe[rxe0]", "interface[enp1s0]"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan after the rollback lacks %q:\n%s", want, out)
		}
	}
	l.must(0, "--sim", h, "apply", "--yes", "--allow-mgmt", "-f", spec)
	l.must(0, "--sim", h, "plan", "-f", spec)
}

// TestRefusedApplyLeavesNoJournal: an apply --confirm-timeout refused
// while it arms its rollback (here the watcher cannot start: its log is a
// directory) changes nothing and leaves no journal behind, so a later
// 'rdmaform rollback' has nothing to undo and leaves alone a change made
// since by a plain apply of the same resource.
func TestRefusedApplyLeavesNoJournal(t *testing.T) {
	l := newRBLab(t)
	h := l.newHost("h", "vm-soft")
	a := l.spec("a.yaml", "version: 1\ninterfaces:\n  - name: enp1s0\n    mtu: 4000\n")
	b := l.spec("b.yaml", "version: 1\ninterfaces:\n  - name: enp1s0\n    mtu: 9000\n")
	if err := os.MkdirAll(filepath.Join(h, "run/rdmaform/rollback.log"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := l.must(1, "--sim", h, "apply", "--yes", "--confirm-timeout", "60s", "-f", a)
	if !strings.Contains(out, "refusing to apply, nothing was changed: starting the rollback watcher") {
		t.Errorf("the refused apply says:\n%s", out)
	}
	for _, f := range []string{"run/rdmaform/rollback.json", "var/lib/rdmaform/unconfirmed.json", "run/rdmaform/confirm-pending"} {
		if exists(filepath.Join(h, f)) {
			t.Errorf("the refused apply left %s", f)
		}
	}
	l.must(2, "--sim", h, "plan", "-f", a)
	l.must(0, "--sim", h, "apply", "--yes", "--allow-mgmt", "-f", b)
	if code, out := l.rf("--sim", h, "rollback"); code != 1 || !strings.Contains(out, "nothing to roll back") {
		t.Errorf("rollback after a refused apply: exit %d, want 1, nothing to roll back\n%s", code, out)
	}
	l.must(0, "--sim", h, "plan", "-f", b)
}

// TestSlowApplyGetsItsQuestion: an apply that takes longer than its
// --confirm-timeout (a module load the simulated host makes slow) is not
// rolled back before the operator is asked: the operator gets the whole
// timeout from the question on, and a confirm then keeps the changes.
func TestSlowApplyGetsItsQuestion(t *testing.T) {
	l := newRBLab(t)
	h := filepath.Join(l.dir, "h")
	l.must(0, "sim", "new", h, "--profile", "vm-soft", "--latency", "modprobe=6s")
	spec := l.spec("s.yaml", "version: 1\nmodules: [rdma_ucm]\nrxe:\n  - {name: rxe0, netdev: enp1s0}\n")
	_, done := l.waitingApply(h, "4s", spec)
	// The watcher reads the deadline in the journal: asked, and after the
	// question (the apply took longer than the timeout).
	b, err := os.ReadFile(filepath.Join(h, "run/rdmaform/rollback.json"))
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Deadline time.Time `json:"deadline"`
		Asked    bool      `json:"asked"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	if !j.Asked || !j.Deadline.After(time.Now()) {
		t.Errorf("the journal after the question: asked %v, deadline %s (now %s): want asked and the deadline ahead", j.Asked, j.Deadline, time.Now().UTC())
	}
	if code, out := l.rf("--sim", h, "confirm"); code != 0 {
		t.Errorf("confirm right after the question: exit %d\n%s", code, out)
	}
	if code, out := done(); code != 0 || !strings.Contains(out, "Confirmed: the changes are kept.") || strings.Contains(out, "reverting") {
		t.Errorf("the slow apply: exit %d, want 0, confirmed\n%s", code, out)
	}
	l.must(0, "--sim", h, "plan", "-f", spec)
}

// TestKilledMidApplyRollsBack: an apply --confirm-timeout killed between
// two changes (a simulated crash before its MTU change) never asked for
// confirmation: its watcher puts back what it had changed (the new rxe
// link) without waiting for a confirmation nobody can give, and the next
// apply converges.
func TestKilledMidApplyRollsBack(t *testing.T) {
	l := newRBLab(t)
	h := l.newHost("h", "vm-soft")
	spec := l.spec("s.yaml", "version: 1\nrxe:\n  - {name: rxe0, netdev: enp1s0}\ninterfaces:\n  - name: enp1s0\n    mtu: 4000\n")
	l.must(0, "sim", "fault", h, "--netlink", "LinkSetMTU", "--kill", "--times", "1")
	code, out := l.rf("--sim", h, "apply", "--yes", "--confirm-timeout", "10m", "-f", spec)
	if code != -1 || !strings.Contains(out, "rxe[rxe0]: created") {
		t.Fatalf("the apply was not killed after its first change: exit %d\n%s", code, out)
	}
	journal := filepath.Join(h, "run/rdmaform/rollback.json")
	for start := time.Now(); exists(journal) && time.Since(start) < time.Minute; {
		time.Sleep(100 * time.Millisecond)
	}
	if exists(journal) {
		log, _ := os.ReadFile(filepath.Join(h, "run/rdmaform/rollback.log"))
		t.Fatalf("the killed apply is not rolled back (timeout 10m); watcher log:\n%s", log)
	}
	out = l.must(2, "--sim", h, "plan", "-f", spec)
	if !strings.Contains(out, "+ rxe[rxe0]") {
		t.Errorf("the rxe link the killed apply made is still there:\n%s", out)
	}
	l.must(0, "--sim", h, "apply", "--yes", "--allow-mgmt", "-f", spec)
	l.must(0, "--sim", h, "plan", "-f", spec)
}

// sriovHost is a ConnectX-5 host whose firmware has SR-IOV enabled with
// 8 VFs at most, none enabled, and no modules-load.d file.
func (l *rbLab) sriovHost(name string) string {
	l.t.Helper()
	st, err := sim.NewState("cx5-roce", "node1", 0)
	if err != nil {
		l.t.Fatal(err)
	}
	for _, a := range st.Firmware {
		for n, v := range map[string]int64{"SRIOV_EN": 1, "NUM_OF_VFS": 8} {
			p := a.Param(n)
			p.Current, p.Next = v, v
		}
	}
	dir := filepath.Join(l.dir, name)
	if _, err := sim.Create(dir, st); err != nil {
		l.t.Fatal(err)
	}
	return dir
}

// hostState is what the rollback paths must put back: the VF count and
// the modules-load.d file.
func hostState(t *testing.T, h string) string {
	t.Helper()
	vfs, err := os.ReadFile(filepath.Join(h, "sys/bus/pci/devices/0000:5e:00.0/sriov_numvfs"))
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(filepath.Join(h, "etc/modules-load.d/rdmaform.conf"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var listed []string
	for _, line := range strings.Split(string(conf), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			listed = append(listed, line)
		}
	}
	mods, err := os.ReadFile(filepath.Join(h, "proc/modules"))
	if err != nil {
		t.Fatal(err)
	}
	loaded := "rdma_ucm not loaded"
	for _, line := range strings.Split(string(mods), "\n") {
		if strings.HasPrefix(line, "rdma_ucm ") {
			loaded = "rdma_ucm loaded"
		}
	}
	return "num_vfs " + strings.TrimSpace(string(vfs)) + ", modules-load.d [" + strings.Join(listed, " ") + "], " + loaded
}

// TestEveryRollbackPathRestoresTheSame: an unconfirmed apply that enables
// VFs and loads and lists a module is put back the same way by each
// rollback path: the apply's own revert at the deadline, the watcher
// after the apply was killed, 'rdmaform rollback', and the boot unit's
// 'rollback --after-boot' after a reboot: no VFs, no modules-load.d
// entry, the module unloaded; the spec plans its changes again.
func TestEveryRollbackPathRestoresTheSame(t *testing.T) {
	// The after-boot path finds the detached watcher with pgrep.
	need.Tool(t, "pgrep", "apt-get install procps")
	l := newRBLab(t)
	spec := l.spec("s.yaml", "version: 1\nmodules: [rdma_ucm]\ndevices:\n  - pci: \"0000:5e:00.0\"\n    sriov: {num_vfs: 4}\n")
	wantPlan := []string{"+ module[rdma_ucm]", "sriov[0000:5e:00.0]", "num_vfs: 0 -> 4"}
	for _, path := range []string{"apply", "watcher", "rollback", "after-boot"} {
		t.Run(path, func(t *testing.T) {
			l := &rbLab{t: t, bin: l.bin, dir: l.dir, env: l.env}
			h := l.sriovHost("h-" + path)
			before := hostState(t, h)
			timeout := "10m"
			if path == "apply" {
				timeout = "2s"
			}
			cmd, done := l.waitingApply(h, timeout, spec)
			if got := hostState(t, h); got != "num_vfs 4, modules-load.d [rdma_ucm], rdma_ucm loaded" {
				t.Fatalf("while the apply waits: %s", got)
			}
			journal := filepath.Join(h, "run/rdmaform/rollback.json")
			switch path {
			case "apply":
				if code, out := done(); code != 1 || !strings.Contains(out, "Not confirmed within 2s: reverting") {
					t.Errorf("the apply at its deadline: exit %d\n%s", code, out)
				}
			case "watcher":
				_ = cmd.Process.Kill()
				done()
				// Its question was asked: the watcher waits for the deadline,
				// which the journal moves into the past here.
				b, err := os.ReadFile(journal)
				if err != nil {
					t.Fatal(err)
				}
				var j map[string]any
				if err := json.Unmarshal(b, &j); err != nil {
					t.Fatal(err)
				}
				j["deadline"] = time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
				b, _ = json.Marshal(j)
				// Written as rdmaform writes it, whole or not at all: the
				// watcher polls the journal, and a file truncated before
				// its new content is written reads as a broken journal
				// ("unexpected end of JSON input"), which it did on a
				// loaded machine.
				tmp := journal + ".test"
				if err := os.WriteFile(tmp, b, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(tmp, journal); err != nil {
					t.Fatal(err)
				}
				for start := time.Now(); exists(journal) && time.Since(start) < time.Minute; {
					time.Sleep(100 * time.Millisecond)
				}
				if log, _ := os.ReadFile(filepath.Join(h, "run/rdmaform/rollback.log")); !strings.Contains(string(log), "Rolled back at") {
					t.Errorf("the watcher did not roll back:\n%s", log)
				}
			case "rollback":
				l.must(0, "--sim", h, "rollback")
				done()
			case "after-boot":
				// The host goes down: the apply and its watcher die with it.
				_ = cmd.Process.Kill()
				done()
				killWatcher(t, h)
				l.must(0, "sim", "reboot", h)
				out := l.must(0, "--sim", h, "rollback", "--after-boot")
				if !strings.Contains(out, "by the boot unit") {
					t.Errorf("rollback --after-boot:\n%s", out)
				}
			}
			if got := hostState(t, h); got != before {
				t.Errorf("after the rollback: %s, want %s as before", got, before)
			}
			out := l.must(2, "--sim", h, "plan", "-f", spec)
			for _, w := range wantPlan {
				if !strings.Contains(out, w) {
					t.Errorf("plan after the rollback lacks %q (the module is loaded again):\n%s", w, out)
				}
			}
			l.must(0, "--sim", h, "apply", "--yes", "-f", spec)
			l.must(0, "--sim", h, "plan", "-f", spec)
		})
	}
}

// killWatcher ends the rollback watcher an apply on h started (its pid
// is in its log line), as a host that goes down would.
func killWatcher(t *testing.T, h string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h, "run/rdmaform/rollback.json"))
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		PID int `json:"pid"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("pgrep", "-f", "--", "--sim "+h+" rollback --watch").Output()
	if err != nil {
		t.Fatalf("no watcher for %s: %v", h, err)
	}
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && pid != j.PID {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
	}
}

// TestRollbackTouchesOnlyWhatThePlanTouched: the journal records the
// whole state show captures (both ports' interfaces here), but its
// rollback puts back only what the plan changed: an interface the plan
// left alone, changed by someone else while the apply waits, keeps that
// change.
func TestRollbackTouchesOnlyWhatThePlanTouched(t *testing.T) {
	l := newRBLab(t)
	h := l.newHost("h", "cx5-roce")
	spec := l.spec("s.yaml", "version: 1\ninterfaces:\n  - name: ens1f0np0\n    mtu: 4000\n")
	other := l.spec("other.yaml", "version: 1\ninterfaces:\n  - name: ens1f1np1\n    mtu: 9000\n")
	_, done := l.waitingApply(h, "10m", spec)
	// Someone else changes the other port's interface meanwhile.
	s, err := sim.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := s.Host()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Net.LinkSetMTU("ens1f1np1", 9000); err != nil {
		t.Fatal(err)
	}
	l.must(0, "--sim", h, "plan", "-f", other)
	out := l.must(0, "--sim", h, "rollback")
	if strings.Contains(out, "ens1f1np1") {
		t.Errorf("the rollback names an interface the plan did not touch:\n%s", out)
	}
	done()
	l.must(2, "--sim", h, "plan", "-f", spec)
	l.must(0, "--sim", h, "plan", "-f", other)
	l.must(0, "--sim", h, "apply", "--yes", "-f", spec)
	l.must(0, "--sim", h, "plan", "-f", spec)
}

// TestKilledApplyCanStillBeConfirmed: an apply killed while it waits can
// still be confirmed until its deadline (its watcher rolls back only
// then), and the boot unit's 'rollback --after-boot', which runs only
// after a reboot, leaves a journal of this boot alone.
func TestKilledApplyCanStillBeConfirmed(t *testing.T) {
	l := newRBLab(t)
	h := l.newHost("h", "vm-soft")
	spec := l.spec("s.yaml", "version: 1\nrxe:\n  - {name: rxe0, netdev: enp1s0}\n")
	cmd, done := l.waitingApply(h, "10m", spec)
	_ = cmd.Process.Kill()
	done()
	// The watcher looks every 200 ms: given a few looks, it must still
	// leave the changes alone (a longer wait on a loaded host only gives a
	// watcher that acted too early more time to show it).
	time.Sleep(2 * time.Second)
	if out := l.must(0, "--sim", h, "rollback", "--after-boot"); out != "" {
		t.Errorf("rollback --after-boot with no reboot since the apply: %q", out)
	}
	out := l.must(0, "--sim", h, "confirm")
	if !strings.Contains(out, "Confirmed.") {
		t.Errorf("confirm after the apply was killed: %s", out)
	}
	l.must(0, "--sim", h, "plan", "-f", spec)
	for _, f := range []string{"run/rdmaform/rollback.json", "var/lib/rdmaform/unconfirmed.json"} {
		if exists(filepath.Join(h, f)) {
			t.Errorf("%s outlives the confirm", f)
		}
	}
}
