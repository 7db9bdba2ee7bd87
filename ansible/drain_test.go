package ansible_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/internal/testlab/slurmlab"
)

// slurmDrain runs rdmaform.rdma.drain (backend slurm) under ansible-core
// in the Slurm lab's network namespace, where its scontrol reaches the
// lab's slurmctld.
func slurmDrain(t *testing.T, l *lab, s *slurmlab.Lab, args map[string]any, flags ...string) *task {
	t.Helper()
	args["backend"] = "slurm"
	return l.start(t, []string{"ip", "netns", "exec", s.NS}, "rdmaform.rdma.drain", args, flags...)
}

// TestDrainSlurm drives the module against a real slurmctld and slurmd
// (Debian's slurm-wlm, munge): with a job running on n1 the drain leaves
// n1 DRAINING and the module keeps waiting (it has not returned while the
// job runs, nor while the cancelled job is completing); once the job ends
// Slurm says drained and the module returns changed; a second drain changes nothing; check mode reports without
// changing; resume brings n1 back to idle, a second resume changes
// nothing; a drain whose job outlives the timeout fails saying so, and
// the node stays draining; a resume resumes only a node whose drain
// reason is the one it is given (a node someone else drained stays
// drained, changed false, with a warning naming their reason); an
// unknown node fails with scontrol's words.
func TestDrainSlurm(t *testing.T) {
	l := newLab(t)
	l.installCollection(t)
	s := slurmlab.Start(t, 3)
	l.env = append(l.env, s.Env()...)

	job, release := s.SubmitLingering(t, "n1")
	drain := slurmDrain(t, l, s, map[string]any{"node": "n1", "reason": "rdmaform test", "timeout": 300, "poll": 1})
	s.WaitState(t, "n1", "draining", 60*time.Second)
	running := func(when string) {
		t.Helper()
		if !drain.running() {
			res, status, out := drain.wait(t)
			t.Fatalf("the module returned (%s, %v) %s:\n%s", status, res, when, out)
		}
	}
	running("while job " + job + " still runs on n1")
	// Cancelled, the job lingers in COMPLETING (its script traps the
	// signal) until released: Slurm still says draining, and the module
	// still waits. The pause gives a module that took COMPLETING for
	// drained three polls to return.
	s.MustRun(t, "scancel", job)
	s.WaitJob(t, job, "COMPLETING", 30*time.Second)
	time.Sleep(3 * time.Second)
	if got := s.State(t, "n1"); got != "draining" {
		t.Errorf("with job %s completing, n1 is %s, want draining", job, got)
	}
	running("while job " + job + " is completing on n1")
	release()
	res, status, out := drain.wait(t)
	if status != "CHANGED" {
		t.Fatalf("drain: %s, want CHANGED\n%s", status, out)
	}
	want(t, "drain", res, map[string]any{"node": "n1", "before": "ALLOCATED", "after": "IDLE+DRAIN"})
	if r, _ := res["reason"].(string); !strings.HasPrefix(r, "rdmaform test") {
		t.Errorf("drain: reason %q, want it to start with %q", r, "rdmaform test")
	}
	if got := s.State(t, "n1"); got != "drained" {
		t.Errorf("after the drain sinfo says n1 is %s, want drained", got)
	}
	for _, n := range []string{"n2", "n3"} {
		if got := s.State(t, n); got != "idle" {
			t.Errorf("the drain of n1 left %s %s, want idle", n, got)
		}
	}

	res, status, out = slurmDrain(t, l, s, map[string]any{"node": "n1"}).wait(t)
	if status != "SUCCESS" {
		t.Errorf("second drain: %s, want SUCCESS (changed=false)\n%s", status, out)
	}
	want(t, "second drain", res, map[string]any{"changed": false, "after": "IDLE+DRAIN", "cmd": []any{}})

	// Check mode: a resume would change n1, and does not.
	_, status, out = slurmDrain(t, l, s, map[string]any{"node": "n1", "state": "resumed", "reason": "rdmaform test"}, "--check").wait(t)
	if status != "CHANGED" || s.State(t, "n1") != "drained" {
		t.Errorf("resume in check mode: %s, n1 %s; want CHANGED and n1 still drained\n%s", status, s.State(t, "n1"), out)
	}
	res, status, out = slurmDrain(t, l, s, map[string]any{"node": "n1", "state": "resumed", "reason": "rdmaform test"}).wait(t)
	if status != "CHANGED" {
		t.Errorf("resume: %s, want CHANGED\n%s", status, out)
	}
	want(t, "resume", res, map[string]any{"before": "IDLE+DRAIN"})
	s.WaitState(t, "n1", "idle", 60*time.Second)
	_, status, out = slurmDrain(t, l, s, map[string]any{"node": "n1", "state": "resumed", "reason": "rdmaform test"}).wait(t)
	if status != "SUCCESS" {
		t.Errorf("second resume: %s, want SUCCESS (changed=false)\n%s", status, out)
	}
	// Check mode: a drain would change n2, and does not.
	_, status, out = slurmDrain(t, l, s, map[string]any{"node": "n2"}, "--check").wait(t)
	if status != "CHANGED" || s.State(t, "n2") != "idle" {
		t.Errorf("drain in check mode: %s, n2 %s; want CHANGED and n2 still idle\n%s", status, s.State(t, "n2"), out)
	}

	// A job that outlives the timeout: the task fails and says why; the
	// node stays draining, so nothing new starts there.
	job = s.Submit(t, "n2", 600)
	res, status, out = slurmDrain(t, l, s, map[string]any{"node": "n2", "timeout": 2, "poll": 1}).wait(t)
	if status != "FAILED!" {
		t.Fatalf("drain with a 2 s timeout and a 600 s job: %s, want FAILED!\n%s", status, out)
	}
	msg, _ := res["msg"].(string)
	if !strings.Contains(msg, "node n2 is still DRAINING after 2s (State=ALLOCATED+DRAIN)") {
		t.Errorf("timeout message: %q", msg)
	}
	if got := s.State(t, "n2"); got != "draining" {
		t.Errorf("after the timeout n2 is %s, want draining", got)
	}
	s.MustRun(t, "scancel", job)
	s.WaitState(t, "n2", "drained", 60*time.Second)
	// Draining again once the job is gone: the DRAIN flag was already
	// set, so nothing changes.
	_, status, out = slurmDrain(t, l, s, map[string]any{"node": "n2"}).wait(t)
	if status != "SUCCESS" {
		t.Errorf("drain of the drained n2: %s, want SUCCESS\n%s", status, out)
	}

	// Resume only what rdmaform drained: n2 was drained with the default
	// reason, so a resume with another one leaves it drained and says
	// why; with the drain's reason it resumes.
	res, status, out = slurmDrain(t, l, s, map[string]any{"node": "n2", "state": "resumed", "reason": "rdmaform test"}).wait(t)
	keptDrained(t, s, "resume of n2 with another reason", res, status, out, "n2", "rdmaform rollout")
	if _, status, out = slurmDrain(t, l, s, map[string]any{"node": "n2", "state": "resumed"}).wait(t); status != "CHANGED" {
		t.Errorf("resume of n2 with the drain's reason: %s, want CHANGED\n%s", status, out)
	}
	s.WaitState(t, "n2", "idle", 60*time.Second)
	// Someone else drains n3 (a hardware fault) before the rollout: the
	// rollout's drain finds it drained and leaves it, its resume leaves
	// it drained with their reason, in check mode too.
	s.MustRun(t, "scontrol", "update", "nodename=n3", "state=drain", "reason=bad cable, ticket 4711")
	s.WaitState(t, "n3", "drained", 60*time.Second)
	res, status, out = slurmDrain(t, l, s, map[string]any{"node": "n3", "reason": "rdmaform test"}).wait(t)
	if status != "SUCCESS" {
		t.Errorf("drain of n3 drained by someone else: %s, want SUCCESS (changed=false)\n%s", status, out)
	}
	want(t, "drain of n3", res, map[string]any{"cmd": []any{}})
	for _, flags := range [][]string{{"--check"}, nil} {
		res, status, out = slurmDrain(t, l, s, map[string]any{"node": "n3", "state": "resumed", "reason": "rdmaform test"}, flags...).wait(t)
		keptDrained(t, s, fmt.Sprintf("resume %v of n3 drained by someone else", flags), res, status, out, "n3", "bad cable, ticket 4711")
	}

	res, status, out = slurmDrain(t, l, s, map[string]any{"node": "n9"}).wait(t)
	msg, _ = res["msg"].(string)
	if status != "FAILED!" || !strings.Contains(msg, "scontrol show node -o n9 failed (exit 1): Node n9 not found") {
		t.Errorf("unknown node: %s %q, want a failure with scontrol's command line and words\n%s", status, msg, out)
	}
	res, status, _ = slurmDrain(t, l, s, map[string]any{"node": "-n1"}).wait(t)
	if msg, _ := res["msg"].(string); status != "FAILED!" || !strings.Contains(msg, "is not a Slurm node name") {
		t.Errorf("node -n1: %s %q, want it refused before scontrol runs", status, msg)
	}
}

// keptDrained checks a resume that must leave node drained because its
// drain reason, theirs, is not the one the module was given: changed
// false, no command run, a warning and msg naming their reason, and
// Slurm still says drained with that reason.
func keptDrained(t *testing.T, s *slurmlab.Lab, what string, res map[string]any, status, out, node, theirs string) {
	t.Helper()
	if status != "SUCCESS" {
		t.Errorf("%s: %s, want SUCCESS (changed=false)\n%s", what, status, out)
	}
	want(t, what, res, map[string]any{"changed": false, "cmd": []any{}})
	msg, _ := res["msg"].(string)
	// Slurm's reason as scontrol prints it: theirs, then [USER@TIME].
	wantMsg := fmt.Sprintf("node %s stays drained: its drain reason is \"%s [", node, theirs)
	if !strings.Contains(msg, wantMsg) {
		t.Errorf("%s: msg %q, want it to say %q", what, msg, wantMsg)
	}
	// ansible wraps a warning's lines at the terminal's width.
	if w := "[WARNING]: node " + node + " stays drained: its drain reason is"; !strings.Contains(out, w) {
		t.Errorf("%s: no warning %q\n%s", what, w, out)
	}
	if r, _ := res["reason"].(string); !strings.HasPrefix(r, theirs+" [") {
		t.Errorf("%s: reason %q, want %q [USER@TIME]", what, r, theirs)
	}
	// Bounded: sinfo says drained* while slurmd misses a ping.
	s.WaitState(t, node, "drained", time.Minute)
}
