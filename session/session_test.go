package session_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/firmware"
	"github.com/rdmaform/rdmaform/schema"
	"github.com/rdmaform/rdmaform/session"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

const modulesSpec = "version: 1\nmodules: [rdma_ucm]\n"

func spec(t *testing.T, text string) *schema.Spec {
	t.Helper()
	s, rep := schema.Parse("spec.yaml", []byte(text))
	if len(rep) > 0 {
		t.Fatal(rep)
	}
	return s
}

func open(t *testing.T) *host.Host {
	t.Helper()
	h, _, err := session.Open(session.Target{Sim: simtest.Dir(t, "cx5-roce", nil)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestApplyThenPlanIsEmpty: Apply applies, plans again (the report's
// After is empty) and a plan of its own afterwards is empty; a second
// Apply does not run.
func TestApplyThenPlanIsEmpty(t *testing.T) {
	ctx := context.Background()
	h, sp := open(t), spec(t, modulesSpec)
	var planned, confirmed int
	res, err := session.Apply(ctx, h, session.ApplyOptions{Spec: sp, LockTimeout: time.Second,
		Hooks: apply.Hooks{Planned: func(*plan.Plan) error { planned++; return nil }, Confirm: func(*plan.Plan) error { confirmed++; return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Report
	if !r.Ran || len(r.Outcome.Applied) == 0 || len(r.Errors) > 0 || r.After == nil || !r.After.Empty() || res.ExitCode() != plan.ExitOK {
		t.Fatalf("ran %v, applied %v, errors %v, after %+v, exit %d", r.Ran, r.Outcome.Applied, r.Errors, r.After, res.ExitCode())
	}
	if planned != 1 || confirmed != 1 {
		t.Errorf("Planned %d times, Confirm %d times; want 1 and 1", planned, confirmed)
	}
	p, err := session.Plan(ctx, h, sp, nil)
	if err != nil || !p.Plan.Empty() {
		t.Fatalf("plan after apply: %v %+v", err, p)
	}
	again, err := session.Apply(ctx, h, session.ApplyOptions{Spec: sp})
	if err != nil || again.Report.Ran || again.ExitCode() != plan.ExitOK {
		t.Fatalf("second apply: %v, ran %v", err, again.Report.Ran)
	}
}

// TestApplyRefusesWhileWaiting: an apply waiting for its confirmation
// (ConfirmFile) or a rollback journal left refuses the next one with a
// *BusyError naming the commands that free the host; nothing changes.
func TestApplyRefusesWhileWaiting(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, file, content, want string
	}{
		{"confirm", session.ConfirmFile, "pid 42", "an apply is waiting for confirmation on this host (pid 42): run 'rdmaform --sim X confirm' or 'rdmaform --sim X rollback' first"},
		{"journal", session.JournalFile, `{"pid": 42, "deadline": "2026-11-26T06:00:00Z", "addresses": [], "spec": "version: 1\n"}`, "the apply of pid 42 was not confirmed and its rollback is due at 2026-11-26T06:00:00Z: run 'rdmaform --sim X rollback' first"},
		{"unfinished", session.JournalFile, `{"pid": 42, "deadline": "2026-11-26T06:00:00Z", "addresses": [], "spec": "version: 1\n", "unfinished": {"at": "2026-11-26T06:01:00Z", "by": "the watcher", "failed": ["module[rdma_ucm]"], "error": "boom"}}`, "a rollback failed part-way (2026-11-26T06:01:00Z, by the watcher; still to undo: module[rdma_ucm]): run 'rdmaform --sim X rollback' to finish it, or 'rdmaform --sim X rollback --abandon'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, sp := open(t), spec(t, modulesSpec)
			if err := h.FS.MkdirAll("/run/rdmaform", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := h.FS.WriteFile(c.file, []byte(c.content), 0o600); err != nil {
				t.Fatal(err)
			}
			hint := func(args ...string) string { return "rdmaform --sim X " + strings.Join(args, " ") }
			res, err := session.Apply(ctx, h, session.ApplyOptions{Spec: sp, Hint: hint})
			var be *session.BusyError
			if !errors.As(err, &be) || res != nil {
				t.Fatalf("got %v (%T), result %v; want a *BusyError", err, err, res)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.HasSuffix(err.Error(), "nothing was changed") {
				t.Errorf("message:\n%s\nwant it to contain\n%s", err, c.want)
			}
			if p, err := session.Plan(ctx, h, sp, nil); err != nil || p.Plan.Empty() {
				t.Errorf("the host changed: %v", err)
			}
		})
	}
}

// TestApplyWaitsForTheLock: while another apply holds the host's lock,
// Apply says who holds it, waits its timeout, and fails with a
// *LockError that is host.ErrLocked; nothing changes.
func TestApplyWaitsForTheLock(t *testing.T) {
	ctx := context.Background()
	h, sp := open(t), spec(t, modulesSpec)
	unlock, err := h.Lock(ctx, time.Second, "the other apply")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	var holder string
	_, err = session.Apply(ctx, h, session.ApplyOptions{Spec: sp, LockTimeout: 50 * time.Millisecond, LockOwner: "this apply", LockWaiting: func(who string) { holder = who }})
	var le *session.LockError
	if !errors.As(err, &le) || !errors.Is(err, host.ErrLocked) {
		t.Fatalf("got %v (%T), want a *LockError that is host.ErrLocked", err, err)
	}
	if !strings.Contains(holder, "the other apply") {
		t.Errorf("told the holder %q, want the other apply", holder)
	}
	if p, err := session.Plan(ctx, h, sp, nil); err != nil || p.Plan.Empty() {
		t.Errorf("the host changed: %v", err)
	}
}

// TestApplyOnlyRuntimeLeavesTheRest: Only keeps one activation; the
// changes of the others are reported left out (exit 2).
func TestApplyOnlyRuntimeLeavesTheRest(t *testing.T) {
	ctx := context.Background()
	h := open(t)
	// Runtime values (rdma_cm) and a module loaded now and at every boot.
	sp := spec(t, "version: 1\nmodules: [rdma_ucm]\ndevices:\n  - name: mlx5_1\n    ports:\n      - port: 1\n        roce: {mode: v2, tos: 106}\n")
	rt := plan.Runtime
	res, err := session.Apply(ctx, h, session.ApplyOptions{Spec: sp, Only: &rt})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Report.Ran || !res.LeftOut || len(res.Report.Before.LeftOut) == 0 || res.ExitCode() != plan.ExitChanges {
		t.Fatalf("ran %v, left out %v (%v), exit %d; want a run that leaves the boot part, exit 2", res.Report.Ran, res.LeftOut, res.Report.Before.LeftOut, res.ExitCode())
	}
	all, err := session.Apply(ctx, h, session.ApplyOptions{Spec: sp})
	if err != nil || all.ExitCode() != plan.ExitOK || !all.Report.After.Empty() {
		t.Fatalf("whole apply: %v, exit %d", err, all.ExitCode())
	}
}

// TestOpenRefusesTwoTargets: a simulated host and a root at once are
// refused, naming both, though each opens alone (so the refusal, not a
// bad path, is what fails).
func TestOpenRefusesTwoTargets(t *testing.T) {
	simDir, root := simtest.Dir(t, "cx5-roce", nil), t.TempDir()
	for _, one := range []session.Target{{Sim: simDir}, {Root: root}} {
		if _, _, err := session.Open(one, nil); err != nil {
			t.Fatalf("Open(%+v) alone: %v", one, err)
		}
	}
	h, s, err := session.Open(session.Target{Sim: simDir, Root: root}, nil)
	want := "a simulated host (" + simDir + ") and a root (" + root + "): give one"
	if err == nil || err.Error() != want || h != nil || s != nil {
		t.Fatalf("Open(both): a host %t, a sim %t, error %v; want neither and %q", h != nil, s != nil, err, want)
	}
}

// TestApplyChecksAgainUnderTheLock: an apply that waited for the lock
// checks the host again once it holds it. Here the apply that held the
// lock left one waiting for its confirmation (ConfirmFile) as it let go:
// the waiting apply refuses with a *BusyError, and nothing changes.
func TestApplyChecksAgainUnderTheLock(t *testing.T) {
	ctx := context.Background()
	h, sp := open(t), spec(t, modulesSpec)
	unlock, err := h.Lock(ctx, time.Second, "the other apply")
	if err != nil {
		t.Fatal(err)
	}
	waited := false
	res, err := session.Apply(ctx, h, session.ApplyOptions{Spec: sp, LockTimeout: time.Minute, LockOwner: "this apply",
		LockWaiting: func(string) {
			// The other apply, done, waits for its confirmation and
			// lets go of the lock.
			waited = true
			if err := h.FS.WriteFile(session.ConfirmFile, []byte("pid 42"), 0o600); err != nil {
				t.Error(err)
			}
			unlock()
		}})
	var be *session.BusyError
	if !waited || !errors.As(err, &be) || !strings.Contains(err.Error(), "an apply is waiting for confirmation on this host (pid 42)") {
		t.Fatalf("waited %v; got %v (%T), result %+v; want a *BusyError for pid 42's confirmation", waited, err, err, res)
	}
	if res != nil && res.Report.Ran {
		t.Error("the apply ran")
	}
	if p, err := session.Plan(ctx, h, sp, nil); err != nil || p.Plan.Empty() {
		t.Errorf("the host changed: %v", err)
	}
}

// TestApplyWithPlanErrorsKeepsTheRebootMarker: firmware staged by an
// apply is in the reboot marker; an apply of a spec whose plan fails
// (a device the host has not) changes nothing, the marker too, though
// its plan lists nothing pending.
func TestApplyWithPlanErrorsKeepsTheRebootMarker(t *testing.T) {
	ctx := context.Background()
	h, _, err := session.Open(session.Target{Sim: simtest.Dir(t, "cx6-vpi-ib", nil)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	staged, err := session.Apply(ctx, h, session.ApplyOptions{Spec: spec(t, "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params:\n        LINK_TYPE_P1: ETH\n")})
	if err != nil || staged.ExitCode() != plan.ExitReboot {
		t.Fatalf("staging: %v, exit %+v", err, staged)
	}
	marker := func() bool { _, err := h.FS.Stat(firmware.RebootRequired); return err == nil }
	if !marker() {
		t.Fatalf("no %s after staging", firmware.RebootRequired)
	}
	bad := spec(t, "version: 1\ndevices:\n  - name: mlx5_9\n    ports:\n      - port: 1\n        roce: {mode: v2}\n")
	res, err := session.Apply(ctx, h, session.ApplyOptions{Spec: bad})
	if err != nil || res.Report.Ran || len(res.Report.Before.Errors) == 0 || res.ExitCode() != plan.ExitError {
		t.Fatalf("apply of a failing plan: %v, %+v; want no run, exit 1", err, res)
	}
	if !marker() {
		t.Errorf("an apply whose plan failed removed %s; firmware is still staged", firmware.RebootRequired)
	}
}

// TestNewJournalRecordsTheStateBefore: the journal of an apply that loads
// a module and sets rdma_cm's values holds the resources it touches, the
// module it loads (the rollback unloads it), the modules-load.d file as
// it was (none), and a spec of the state before that, applied, undoes
// the apply: the plan of the first spec wants its changes again.
func TestNewJournalRecordsTheStateBefore(t *testing.T) {
	ctx := context.Background()
	h := open(t)
	sp := spec(t, "version: 1\nmodules: [rdma_ucm]\ndevices:\n  - name: mlx5_1\n    ports:\n      - port: 1\n        roce: {mode: v2, tos: 106}\n")
	p, err := session.Plan(ctx, h, sp, nil)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)
	j, err := session.NewJournal(ctx, h, sp, p.Plan, deadline)
	if err != nil {
		t.Fatal(err)
	}
	if !j.Deadline.Equal(deadline) || len(j.Addresses) != len(p.Plan.Changes) || len(j.Loaded) != 1 || j.Loaded[0] != "rdma_ucm" {
		t.Errorf("deadline %s, addresses %v, loaded %v; want %s, the plan's %d, [rdma_ucm]", j.Deadline, j.Addresses, j.Loaded, deadline, len(p.Plan.Changes))
	}
	var conf *session.FileState
	for i := range j.Files {
		if j.Files[i].Path == "/etc/modules-load.d/rdmaform.conf" {
			conf = &j.Files[i]
		}
	}
	if conf == nil || conf.Exists {
		t.Errorf("files %+v: want modules-load.d's file recorded as absent", j.Files)
	}
	if _, err := session.Apply(ctx, h, session.ApplyOptions{Spec: sp}); err != nil {
		t.Fatal(err)
	}
	before := spec(t, j.Spec)
	if _, err := session.Apply(ctx, h, session.ApplyOptions{Spec: before}); err != nil {
		t.Fatal(err)
	}
	again, err := session.Plan(ctx, h, sp, nil)
	if err != nil || len(again.Plan.Changes) == 0 {
		t.Fatalf("after applying the journal's spec the first spec plans %v (%v); want its changes again", again, err)
	}
}
