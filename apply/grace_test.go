package apply

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// slow is a provider whose first change runs until released, noting
// whether its own context ended while it ran.
type slow struct {
	started, release chan struct{}
	ctxEnded         bool
	applied          []string
}

func (s *slow) Name() string { return "rec" }
func (s *slow) Discover(context.Context, *host.Host, *plan.Request) (any, error) {
	return nil, nil
}
func (s *slow) Diff(*plan.Request, any, *plan.Facts) plan.Proposal { return plan.Proposal{} }
func (s *slow) Apply(ctx context.Context, _ *host.Host, c *plan.Change) error {
	if len(s.applied) == 0 {
		close(s.started)
		select {
		case <-s.release:
		case <-ctx.Done():
			s.ctxEnded = true
			return ctx.Err()
		}
	}
	s.applied = append(s.applied, c.Address.String())
	return nil
}

// TestInterruptLetsTheRunningChangeFinish: Ctrl-C during a change lets it
// finish within the grace period and starts no other; the outcome says
// interrupted and lists what was applied and what was not.
func TestInterruptLetsTheRunningChangeFinish(t *testing.T) {
	s := &slow{started: make(chan struct{}), release: make(chan struct{})}
	p := &plan.Plan{Changes: []*plan.Change{change(plan.Addr("t", "a")), change(plan.Addr("t", "b")), change(plan.Addr("t", "c"))}}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-s.started
		cancel()                           // Ctrl-C while a runs
		time.Sleep(100 * time.Millisecond) // a still runs: its context must not end
		close(s.release)
	}()
	out := Run(ctx, &host.Host{}, p, []plan.Provider{s}, Options{Grace: time.Hour})
	if s.ctxEnded {
		t.Error("the running change's context ended at the interrupt, before the grace period")
	}
	if !out.Interrupted || !cmp.Equal([]plan.Address{plan.Addr("t", "a")}, out.Applied) || !cmp.Equal([]plan.Address{plan.Addr("t", "b"), plan.Addr("t", "c")}, out.Skipped) {
		t.Errorf("interrupted %v, applied %v, skipped %v; want true, [a], [b c]", out.Interrupted, out.Applied, out.Skipped)
	}
}

// TestInterruptGraceEnds: a change that outlasts the grace period gets
// its context ended (the runner then stops its command: SIGTERM for a
// firmware set, see host.Cmd.Gentle).
func TestInterruptGraceEnds(t *testing.T) {
	s := &slow{started: make(chan struct{}), release: make(chan struct{})}
	p := &plan.Plan{Changes: []*plan.Change{change(plan.Addr("t", "a")), change(plan.Addr("t", "b"))}}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-s.started; cancel() }()
	out := Run(ctx, &host.Host{}, p, []plan.Provider{s}, Options{Grace: 50 * time.Millisecond})
	if !s.ctxEnded || !out.Interrupted || !cmp.Equal([]plan.Address{plan.Addr("t", "a")}, out.Failed) || !cmp.Equal([]plan.Address{plan.Addr("t", "b")}, out.Skipped) {
		t.Errorf("ctx ended %v, interrupted %v, failed %v, skipped %v", s.ctxEnded, out.Interrupted, out.Failed, out.Skipped)
	}
}
