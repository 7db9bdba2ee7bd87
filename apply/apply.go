// Package apply carries out a plan: changes in order, dependents of a
// failed change skipped, independent ones still made, every error kept.
package apply

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// ErrSkipped marks a change not attempted because one it depends on failed.
var ErrSkipped = errors.New("skipped")

// ChangeError is the failure of one change: its address and the cause.
type ChangeError struct {
	Address plan.Address
	Err     error
}

func (e *ChangeError) Error() string { return fmt.Sprintf("%s: %v", e.Address, e.Err) }
func (e *ChangeError) Unwrap() error { return e.Err }

// Outcome is what happened to each change.
type Outcome struct {
	// Done holds the changes applied, in order (for a rollback).
	Done    []*plan.Change
	Applied []plan.Address
	Failed  []plan.Address
	Skipped []plan.Address
	// Err joins every failure and skip (nil when all applied).
	Err error
	// Interrupted: the caller's context ended (Ctrl-C, SIGTERM) and the
	// run stopped before the changes listed in Skipped.
	Interrupted bool
}

// Options tune a run.
type Options struct {
	// Progress receives one line per change ("rdma_cm[mlx5_0/1]: applying...").
	Progress io.Writer
	// Before, if set, is called before each change; an error stops the run
	// (an interrupt between two changes).
	Before func(c *plan.Change) error
	// Grace is how long a change in progress may go on after the caller's
	// context ends (Ctrl-C, SIGTERM) before its own context ends too: an
	// external command under way finishes, and no further change starts.
	// A firmware set is then sent SIGTERM, never SIGKILL (host.Cmd.Gentle).
	Grace time.Duration
}

// DefaultGrace is the grace period of an interrupted apply: a full
// mlxconfig set takes a few seconds; a minute leaves room on a loaded host.
const DefaultGrace = time.Minute

// Run applies the plan's changes in order with their providers.
func Run(ctx context.Context, h *host.Host, p *plan.Plan, providers []plan.Provider, o Options) Outcome {
	byName := map[string]plan.Provider{}
	for _, pr := range providers {
		byName[pr.Name()] = pr
	}
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	var out Outcome
	var merr *multierror.Error
	failed := map[plan.Address]bool{}
	actx, stop := GraceContext(ctx, o.Grace)
	defer stop()
	actx = host.WithProgress(actx, progress) // a change may say how far it is
	record := func(c *plan.Change, err error, took time.Duration) {
		if err != nil {
			failed[c.Address] = true
			out.Failed = append(out.Failed, c.Address)
			fmt.Fprintf(progress, "%s: failed: %v\n", c.Address, err)
			merr = multierror.Append(merr, &ChangeError{Address: c.Address, Err: err})
			return
		}
		out.Applied = append(out.Applied, c.Address)
		out.Done = append(out.Done, c)
		fmt.Fprintf(progress, "%s: %s after %s\n", c.Address, done(c), took.Round(time.Millisecond))
	}
	for i := 0; i < len(p.Changes); i++ {
		c := p.Changes[i]
		if batch := parallelBatch(p.Changes[i:], byName, failed); len(batch) > 1 {
			// Every change of the batch is started in plan order (the
			// interrupt check and Before hook first), run at once, and
			// recorded in plan order.
			var started []*plan.Change
			stopped := false
			for j, b := range batch {
				if err := ctx.Err(); err != nil {
					out.Interrupted = true
					merr = multierror.Append(merr, fmt.Errorf("interrupted before %s: %w", b.Address, err))
					for _, rest := range p.Changes[i+j:] {
						out.Skipped = append(out.Skipped, rest.Address)
					}
					stopped = true
					break
				}
				if o.Before != nil {
					if err := o.Before(b); err != nil {
						merr = multierror.Append(merr, err)
						for _, rest := range p.Changes[i+j:] {
							out.Skipped = append(out.Skipped, rest.Address)
						}
						stopped = true
						break
					}
				}
				fmt.Fprintf(progress, "%s: %s...\n", b.Address, verb(b.Action))
				started = append(started, b)
			}
			errs, took := runParallel(actx, h, byName[c.Provider], started)
			for j, b := range started {
				record(b, errs[j], took[j])
			}
			if stopped {
				break
			}
			i += len(batch) - 1
			continue
		}
		if err := ctx.Err(); err != nil {
			out.Interrupted = true
			for _, rest := range p.Changes[i:] {
				out.Skipped = append(out.Skipped, rest.Address)
			}
			merr = multierror.Append(merr, fmt.Errorf("interrupted before %s: %w", c.Address, err))
			break
		}
		if dep := failedDep(c, failed); dep != (plan.Address{}) {
			failed[c.Address] = true
			out.Skipped = append(out.Skipped, c.Address)
			fmt.Fprintf(progress, "%s: skipped (depends on %s, which failed)\n", c.Address, dep)
			merr = multierror.Append(merr, &ChangeError{Address: c.Address, Err: fmt.Errorf("%w: depends on %s, which failed", ErrSkipped, dep)})
			continue
		}
		if o.Before != nil {
			if err := o.Before(c); err != nil {
				merr = multierror.Append(merr, err)
				for _, rest := range p.Changes[i:] {
					out.Skipped = append(out.Skipped, rest.Address)
				}
				break
			}
		}
		pr := byName[c.Provider]
		if pr == nil {
			failed[c.Address] = true
			out.Failed = append(out.Failed, c.Address)
			merr = multierror.Append(merr, &ChangeError{Address: c.Address, Err: fmt.Errorf("no provider %q", c.Provider)})
			continue
		}
		start := time.Now()
		fmt.Fprintf(progress, "%s: %s...\n", c.Address, verb(c.Action))
		record(c, pr.Apply(actx, h, c), time.Since(start))
	}
	if merr != nil {
		merr.ErrorFormat = listFormat
		out.Err = merr
	}
	return out
}

// MaxParallel bounds how many changes of a Parallel provider run at once
// (one firmware tool process per adapter).
const MaxParallel = 32

// parallelBatch is the run of consecutive changes from the first that one
// Parallel provider may apply at once: same provider, a key each, none
// depending on another of the batch or on a failed change. Fewer than two
// is no batch.
func parallelBatch(cs []*plan.Change, byName map[string]plan.Provider, failed map[plan.Address]bool) []*plan.Change {
	pr, ok := plan.Optional[plan.Parallel](byName[cs[0].Provider])
	if !ok {
		return nil
	}
	in := map[plan.Address]bool{}
	var batch []*plan.Change
	for _, c := range cs {
		if c.Provider != cs[0].Provider || pr.ParallelKey(c) == "" || failedDep(c, failed) != (plan.Address{}) {
			break
		}
		for _, d := range c.DependsOn {
			if in[d] {
				return batch
			}
		}
		in[c.Address] = true
		batch = append(batch, c)
	}
	return batch
}

// runParallel applies cs with pr, changes of one key in order (in one
// ApplyBatch when pr is a plan.Batcher), different keys at once (at most
// MaxParallel), and returns each change's error and duration in the order
// of cs.
func runParallel(ctx context.Context, h *host.Host, pr plan.Provider, cs []*plan.Change) ([]error, []time.Duration) {
	errs, took := make([]error, len(cs)), make([]time.Duration, len(cs))
	keyed, _ := plan.Optional[plan.Parallel](pr)
	var order []string
	byKey := map[string][]int{}
	for i, c := range cs {
		k := keyed.ParallelKey(c)
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], i)
	}
	sem := make(chan struct{}, MaxParallel)
	var wg sync.WaitGroup
	for _, k := range order {
		wg.Add(1)
		sem <- struct{}{}
		go func(idx []int) {
			defer wg.Done()
			defer func() { <-sem }()
			if b, ok := plan.Optional[plan.Batcher](pr); ok && len(idx) > 1 {
				group := make([]*plan.Change, len(idx))
				for j, i := range idx {
					group[j] = cs[i]
				}
				start := time.Now()
				gerrs := b.ApplyBatch(ctx, h, group)
				for j, i := range idx {
					errs[i], took[i] = gerrs[j], time.Since(start)
				}
				return
			}
			for _, i := range idx {
				start := time.Now()
				errs[i] = pr.Apply(ctx, h, cs[i])
				took[i] = time.Since(start)
			}
		}(byKey[k])
	}
	wg.Wait()
	return errs, took
}

// GraceContext is the context a change runs with: the caller's ending
// reaches it only after grace, so that a command under way can finish.
// Call stop when the change is done.
func GraceContext(ctx context.Context, grace time.Duration) (context.Context, func()) {
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			t := time.NewTimer(grace)
			defer t.Stop()
			select {
			case <-t.C:
				cancel()
			case <-done:
			}
		case <-done:
		}
	}()
	return actx, func() { close(done); cancel() }
}

func failedDep(c *plan.Change, failed map[plan.Address]bool) plan.Address {
	for _, d := range c.DependsOn {
		if failed[d] {
			return d
		}
	}
	return plan.Address{}
}

func verb(a plan.Action) string {
	switch a {
	case plan.Create:
		return "creating"
	case plan.Update:
		return "updating"
	case plan.Delete:
		return "deleting"
	}
	return "applying"
}

func done(c *plan.Change) string {
	s := map[plan.Action]string{plan.Create: "created", plan.Update: "updated", plan.Delete: "deleted"}[c.Action]
	if c.Activation == plan.NextBoot {
		s += " (effective after reboot)"
	}
	return s
}

func listFormat(es []error) string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// VerifyError lists what a re-plan after apply still found to change.
type VerifyError struct {
	Remaining []*plan.Change
}

func (e *VerifyError) Error() string {
	var lines []string
	for _, c := range e.Remaining {
		if len(c.Attributes) == 0 {
			lines = append(lines, fmt.Sprintf("%s: still needs %s after apply", c.Address, c.Action))
		}
		for _, a := range c.Attributes {
			lines = append(lines, fmt.Sprintf("%s: %s is still %q after apply, want %q", c.Address, a.Name, a.Before, a.After))
		}
	}
	return "verification failed:\n" + strings.Join(lines, "\n")
}

// Verify checks a re-plan made after apply: any change still needed is an
// error naming the resource and attribute. Changes of resources that
// failed or were skipped are already reported and are left out.
func Verify(after *plan.Plan, out Outcome) error {
	known := map[plan.Address]bool{}
	for _, a := range append(append([]plan.Address{}, out.Failed...), out.Skipped...) {
		known[a] = true
	}
	var rem []*plan.Change
	for _, c := range after.Changes {
		if !known[c.Address] {
			rem = append(rem, c)
		}
	}
	if len(rem) == 0 {
		return nil
	}
	return &VerifyError{Remaining: rem}
}

// NotRevertible lists the changes of p whose provider cannot undo them.
func NotRevertible(p *plan.Plan, providers []plan.Provider) []plan.Address {
	rev := map[string]bool{}
	for _, pr := range providers {
		if _, ok := plan.Optional[plan.Reverter](pr); ok {
			rev[pr.Name()] = true
		}
	}
	var out []plan.Address
	for _, c := range p.Changes {
		if !rev[c.Provider] {
			out = append(out, c.Address)
		}
	}
	return out
}

// Revert undoes applied changes, last first, except that an undo that
// depends on another undo runs after it (values set again on a card an
// mlx4 port type registered anew go back after the port type does, which
// registers it anew once more). A change whose undo fails is reported;
// the others are still undone.
func Revert(ctx context.Context, h *host.Host, done []*plan.Change, providers []plan.Provider, o Options) Outcome {
	var undo []*plan.Change
	var errs *multierror.Error
	byName := map[string]plan.Provider{}
	for _, pr := range providers {
		byName[pr.Name()] = pr
	}
	for i := len(done) - 1; i >= 0; i-- {
		c := done[i]
		r, ok := plan.Optional[plan.Reverter](byName[c.Provider])
		if !ok {
			errs = multierror.Append(errs, &ChangeError{Address: c.Address, Err: errors.New("cannot be reverted")})
			continue
		}
		inv, err := r.Revert(c)
		if err != nil {
			errs = multierror.Append(errs, &ChangeError{Address: c.Address, Err: fmt.Errorf("revert: %w", err)})
			continue
		}
		if inv != nil {
			inv.Provider = c.Provider
			undo = append(undo, inv)
		}
	}
	out := Run(ctx, h, &plan.Plan{Changes: afterDeps(undo)}, providers, o)
	if errs != nil {
		if out.Err != nil {
			errs = multierror.Append(errs, out.Err)
		}
		errs.ErrorFormat = listFormat
		out.Err = errs
	}
	return out
}

// afterDeps orders undo changes as given, but each after the changes it
// depends on that are in the list too (stable: a change waits only for
// its own dependencies).
func afterDeps(cs []*plan.Change) []*plan.Change {
	in := map[plan.Address]bool{}
	for _, c := range cs {
		in[c.Address] = true
	}
	done := map[plan.Address]bool{}
	out := make([]*plan.Change, 0, len(cs))
	left := cs
	for len(left) > 0 {
		var wait []*plan.Change
		for _, c := range left {
			ready := true
			for _, d := range c.DependsOn {
				if in[d] && !done[d] && d != c.Address {
					ready = false
				}
			}
			if ready {
				out = append(out, c)
				done[c.Address] = true
			} else {
				wait = append(wait, c)
			}
		}
		if len(wait) == len(left) {
			return append(out, wait...) // a cycle: keep the given order
		}
		left = wait
	}
	return out
}
