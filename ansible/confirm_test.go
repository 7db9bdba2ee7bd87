package ansible_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/ansible"
	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/internal/testlab/fstree"
	"github.com/rdmaform/rdmaform/sim"
)

// TestMain lets the test binary be the module's background apply: a
// module run in-process with confirm_timeout starts its own executable,
// this binary, with ansible.BackgroundArg; and its rollback watcher, a
// copy of it run with ansible.CLIArg.
func TestMain(m *testing.M) {
	if len(os.Args) >= 2 && (os.Args[1] == ansible.BackgroundArg || os.Args[1] == ansible.BackgroundActivateArg || os.Args[1] == ansible.CLIArg || os.Args[1] == ansible.StdinArg) {
		env := cli.OSEnv()
		os.Exit(ansible.Main(os.Args[1:], env))
	}
	os.Exit(m.Run())
}

// exitBound bounds every wait for a background apply to end: it polls
// every 100ms, and reverting one change on a simulated host is quick.
const exitBound = 60 * time.Second

// background is a background apply started by a test's module run. It is
// never the test's own child when Ansible ran the module, so its end is
// seen in /proc: gone, or a zombie its new parent has not reaped.
type background struct{ pid int }

// watch registers the background apply of a result: at the end of the
// test, one still running is stopped (SIGTERM: it reverts and exits, then
// SIGKILL) and the test fails. Only this process, by its PID, after
// checking it is still the background apply.
func watch(t *testing.T, c *ansible.Confirm) background {
	t.Helper()
	if c == nil || c.PID <= 0 {
		t.Fatalf("the result names no background apply: %+v", c)
	}
	b := background{pid: c.PID}
	t.Cleanup(func() {
		if !b.running() {
			return
		}
		t.Errorf("background apply (pid %d) still running at the end of the test: stopping it", b.pid)
		_ = syscall.Kill(b.pid, syscall.SIGTERM)
		if !b.waitExit(exitBound) {
			_ = syscall.Kill(b.pid, syscall.SIGKILL)
			b.waitExit(exitBound)
		}
	})
	return b
}

// running reports whether the process is alive and still the background
// apply (its command line holds the marker: not a recycled PID).
func (b background) running() bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(b.pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) STATE ...: comm may hold spaces and parentheses.
	if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(b.pid) + "/cmdline")
	return err == nil && bytes.Contains(cmdline, []byte(ansible.BackgroundArg))
}

// waitExit waits, at most bound, for the process to end.
func (b background) waitExit(bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	for b.running() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

func (b background) mustExit(t *testing.T, what string) {
	t.Helper()
	if !b.waitExit(exitBound) {
		t.Fatalf("%s: the background apply (pid %d) still runs after %s", what, b.pid, exitBound)
	}
}

// pendingFile is the rooted confirm-pending file of a simulated host.
func pendingFile(dir string) string { return filepath.Join(dir, cli.ConfirmFile) }

func readLog(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ansible.LogFile))
	if err != nil {
		t.Fatalf("the background apply's log: %v", err)
	}
	return string(b)
}

// TestConfirmInProcess drives the module in-process (the test binary is
// its own background apply, see TestMain): confirmed, the change is kept;
// unconfirmed, it is reverted at the timeout; a second apply while one
// waits is refused.
func TestConfirmInProcess(t *testing.T) {
	t.Run("confirmed", func(t *testing.T) {
		dir := newSim(t, "cx5-roce")
		res := module(t, map[string]any{"content": roceSpec, "sim": dir, "confirm_timeout": 120})
		if res.Failed || !res.Changed || res.RC != 0 {
			t.Fatalf("apply: failed=%v changed=%v rc=%d: %s\n%s", res.Failed, res.Changed, res.RC, res.Msg, strings.Join(res.StdoutLines, "\n"))
		}
		bg := watch(t, res.Confirm)
		if !bg.running() {
			t.Fatalf("the background apply (pid %d) is not running after the task returned", bg.pid)
		}
		if _, err := os.Stat(pendingFile(dir)); err != nil {
			t.Fatalf("the task returned but nothing waits for confirmation: %v", err)
		}
		if d := time.Until(res.Confirm.Deadline); d < 100*time.Second || d > 121*time.Second {
			t.Errorf("deadline %s is %s away, want about 120s", res.Confirm.Deadline, d)
		}
		for _, w := range []string{"state: confirmed", "1 change,"} {
			if !strings.Contains(res.Msg, w) {
				t.Errorf("msg lacks %q: %s", w, res.Msg)
			}
		}

		// Check mode: confirmed says a confirmation waits, and confirms nothing.
		if r := module(t, map[string]any{"sim": dir, "state": "confirmed", "_ansible_check_mode": true}); r.Failed || !r.Changed {
			t.Errorf("check mode confirm while waiting: failed=%v changed=%v: %s", r.Failed, r.Changed, r.Msg)
		}
		if _, err := os.Stat(pendingFile(dir)); err != nil {
			t.Fatalf("check mode confirmed: %v", err)
		}

		// Another apply while this one waits is refused, changing nothing.
		again := module(t, map[string]any{"content": roceSpec, "sim": dir, "state": "planned"})
		if again.Changed {
			t.Errorf("while waiting, the plan still shows changes: %v", addresses(again))
		}
		other := "version: 1\ndevices: [{name: mlx5_0, ports: [{port: 1, roce: {tos: 32}}]}]\n"
		if r := module(t, map[string]any{"content": other, "sim": dir, "confirm_timeout": "1m"}); !r.Failed || r.Changed || !strings.Contains(r.Msg, "already waits for confirmation") {
			t.Errorf("second apply while one waits: failed=%v changed=%v: %s", r.Failed, r.Changed, r.Msg)
		}

		res = module(t, map[string]any{"sim": dir, "state": "confirmed"})
		if res.Failed || !res.Changed {
			t.Fatalf("confirm: failed=%v changed=%v: %s", res.Failed, res.Changed, res.Msg)
		}
		bg.mustExit(t, "after confirm")
		if res := module(t, map[string]any{"content": roceSpec, "sim": dir, "state": "planned"}); res.Failed || res.Changed {
			t.Errorf("after confirm: changed=%v failed=%v, want the change kept: %v %s", res.Changed, res.Failed, addresses(res), res.Msg)
		}
		if log := readLog(t, dir); !strings.Contains(log, "Confirmed: the changes are kept.") || !strings.Contains(log, ": exit 0\n") {
			t.Errorf("log:\n%s", log)
		}
		if res := module(t, map[string]any{"sim": dir, "state": "confirmed"}); !res.Failed || res.Changed {
			t.Errorf("second confirm: failed=%v changed=%v, want a failure: %s", res.Failed, res.Changed, res.Msg)
		}
	})

	t.Run("not confirmed", func(t *testing.T) {
		dir := newSim(t, "cx5-roce")
		// Check mode starts nothing, and a check-mode confirm does not fail.
		before := fstree.Snapshot(t, dir)
		if r := module(t, map[string]any{"content": roceSpec, "sim": dir, "confirm_timeout": "2s", "_ansible_check_mode": true}); r.Failed || !r.Changed || r.Confirm != nil {
			t.Errorf("check mode: failed=%v changed=%v confirm=%+v: %s", r.Failed, r.Changed, r.Confirm, r.Msg)
		}
		if r := module(t, map[string]any{"sim": dir, "state": "confirmed", "_ansible_check_mode": true}); r.Failed || r.Changed {
			t.Errorf("check mode confirm, nothing waiting: failed=%v changed=%v: %s", r.Failed, r.Changed, r.Msg)
		}
		if diff := cmp.Diff(before, fstree.Snapshot(t, dir)); diff != "" {
			t.Fatalf("check mode changed the host (-before +after):\n%s", diff)
		}

		res := module(t, map[string]any{"content": roceSpec, "sim": dir, "confirm_timeout": "2s"})
		if res.Failed || !res.Changed {
			t.Fatalf("apply: failed=%v changed=%v: %s", res.Failed, res.Changed, res.Msg)
		}
		bg := watch(t, res.Confirm)
		bg.mustExit(t, "after the timeout")
		if _, err := os.Stat(pendingFile(dir)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("confirm-pending after the revert: %v", err)
		}
		after := module(t, map[string]any{"content": roceSpec, "sim": dir, "state": "planned"})
		if diff := cmp.Diff([]string{"rdma_cm[mlx5_0/1]"}, addresses(after)); diff != "" {
			t.Errorf("after the timeout the change should be planned again (-want +got):\n%s", diff)
		}
		if log := readLog(t, dir); !strings.Contains(log, "Not confirmed within 2s: reverting.") || !strings.Contains(log, ": exit 1\n") {
			t.Errorf("log:\n%s", log)
		}
	})

	t.Run("background apply killed while it waits", func(t *testing.T) {
		// An OOM kill of the background apply: its rollback watcher (a
		// copy of the module run as rdmaform, in a session of its own)
		// reverts the change at the deadline.
		dir := newSim(t, "cx5-roce")
		start := time.Now()
		res := module(t, map[string]any{"content": roceSpec, "sim": dir, "confirm_timeout": "3s"})
		if res.Failed || !res.Changed {
			t.Fatalf("apply: failed=%v changed=%v: %s", res.Failed, res.Changed, res.Msg)
		}
		bg := watch(t, res.Confirm)
		if _, err := os.Stat(filepath.Join(dir, ansible.SelfCopy)); err != nil {
			t.Fatalf("no copy of the module for the watcher: %v", err)
		}
		if err := syscall.Kill(bg.pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		bg.mustExit(t, "after SIGKILL")
		journal := filepath.Join(dir, cli.JournalFile)
		for time.Since(start) < 20*time.Second {
			if _, err := os.Stat(journal); errors.Is(err, os.ErrNotExist) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		after := module(t, map[string]any{"content": roceSpec, "sim": dir, "state": "planned"})
		if diff := cmp.Diff([]string{"rdma_cm[mlx5_0/1]"}, addresses(after)); diff != "" {
			log, _ := os.ReadFile(filepath.Join(dir, "run/rdmaform/rollback.log"))
			t.Fatalf("after the watcher's deadline the change should be planned again (-want +got):\n%s\nwatcher log:\n%s", diff, log)
		}
		t.Logf("rolled back %s after the task started (timeout 3s)", time.Since(start).Round(100*time.Millisecond))
		if r := module(t, map[string]any{"sim": dir, "state": "confirmed"}); !r.Failed || !strings.Contains(r.Msg, "too late") {
			t.Errorf("confirm after the rollback: failed=%v: %s", r.Failed, r.Msg)
		}
	})

	t.Run("failed apply ends before waiting", func(t *testing.T) {
		// The write of the ToS fails (EIO): the background apply reverts
		// what it changed (nothing) and exits 1 without waiting; the task
		// reports that failure, with the log, rather than a confirmation.
		dir := newSim(t, "cx5-roce")
		s, err := sim.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.AddFault(sim.Fault{Write: "default_roce_tos", Match: "write"}); err != nil {
			t.Fatal(err)
		}
		res := module(t, map[string]any{"content": roceSpec, "sim": dir, "confirm_timeout": "1m"})
		if !res.Failed || res.Changed || res.RC != 1 || res.Confirm != nil {
			t.Fatalf("failed=%v changed=%v rc=%d confirm=%+v, want a failure that changed nothing: %s", res.Failed, res.Changed, res.RC, res.Confirm, res.Msg)
		}
		for _, w := range []string{"background apply exited 1", "default_roce_tos", "rdmaform: apply failed"} {
			if !strings.Contains(res.Msg, w) {
				t.Errorf("msg lacks %q:\n%s", w, res.Msg)
			}
		}
		if _, err := os.Stat(pendingFile(dir)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("confirm-pending after a failed apply: %v", err)
		}
	})
}

// TestAnsibleConfirm runs the confirm flow under Debian's ansible-core on
// a simulated host: a playbook applies with confirm_timeout and confirms
// in the next task, and the change is kept; an ad-hoc apply with a 2s
// timeout and no confirmation is reverted by the background apply alone.
func TestAnsibleConfirm(t *testing.T) {
	l := newLab(t)

	t.Run("confirmed", func(t *testing.T) {
		dir := newSim(t, "cx5-roce")
		result := filepath.Join(t.TempDir(), "applied.json")
		spec, _ := json.Marshal(roceSpec) // a YAML double-quoted string
		out, err := l.playbook(t, `
- hosts: localhost
  gather_facts: false
  tasks:
    - name: apply, reverted unless confirmed
      rdmaform: {content: `+string(spec)+`, sim: "`+dir+`", confirm_timeout: 120}
      register: applied
    - name: keep the result for the test
      ansible.builtin.copy: {content: "{{ applied | to_json }}", dest: "`+result+`"}
    - name: confirm, from a new connection
      rdmaform: {sim: "`+dir+`", state: confirmed}
      register: confirmed
    - ansible.builtin.assert:
        that:
          - applied is changed
          - applied.confirm.timeout == "2m0s"
          - "'state: confirmed' in applied.msg"
          - confirmed is changed
`)
		// The background apply is watched before anything can fail.
		var applied ansible.Result
		if b, rerr := os.ReadFile(result); rerr == nil {
			if jerr := json.Unmarshal(b, &applied); jerr != nil {
				t.Fatalf("%s: %v", result, jerr)
			}
		}
		var bg background
		if applied.Confirm != nil {
			bg = watch(t, applied.Confirm)
		}
		if err != nil {
			t.Fatalf("playbook: %v\n%s", err, out)
		}
		if applied.Confirm == nil {
			t.Fatalf("the apply's result names no background apply:\n%s", out)
		}
		bg.mustExit(t, "after the confirming task")
		res, status, out := l.adhoc(t, map[string]any{"content": roceSpec, "sim": dir, "state": "planned"})
		if status != "SUCCESS" || res["changed"] != false {
			t.Errorf("after confirm: status %s, want SUCCESS with nothing to change (the change kept):\n%s", status, out)
		}
		if log := readLog(t, dir); !strings.Contains(log, "Confirmed: the changes are kept.") {
			t.Errorf("log:\n%s", log)
		}
	})

	t.Run("not confirmed", func(t *testing.T) {
		dir := newSim(t, "cx5-roce")
		res, status, out := l.adhoc(t, "sim="+dir+" confirm_timeout=2s content='"+roceSpec+"'")
		var c ansible.Confirm
		if b, err := json.Marshal(res["confirm"]); err == nil {
			_ = json.Unmarshal(b, &c)
		}
		if c.PID == 0 {
			t.Fatalf("apply: status %s, no background apply in the result:\n%s", status, out)
		}
		bg := watch(t, &c)
		if status != "CHANGED" {
			t.Errorf("apply: status %s, want CHANGED:\n%s", status, out)
		}
		bg.mustExit(t, "after the timeout")
		res, status, out = l.adhoc(t, map[string]any{"content": roceSpec, "sim": dir, "state": "planned"})
		if status != "CHANGED" || res["changed"] != true {
			t.Errorf("after the timeout: status %s, want CHANGED (the change reverted, planned again):\n%s", status, out)
		}
		if log := readLog(t, dir); !strings.Contains(log, "Not confirmed within 2s: reverting.") {
			t.Errorf("log:\n%s", log)
		}
		// The confirming task, too late: it fails, naming why.
		res, status, out = l.adhoc(t, map[string]any{"sim": dir, "state": "confirmed"})
		if msg, _ := res["msg"].(string); status != "FAILED!" || !strings.Contains(msg, "too late: the changes were rolled back at ") {
			t.Errorf("late confirm: status %s, want FAILED! saying it is too late:\n%s", status, out)
		}
	})
}
