package session

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers"
	"github.com/rdmaform/rdmaform/providers/firmware"
	"github.com/rdmaform/rdmaform/schema"
)

// DefaultLockTimeout is how long an apply waits for the host's apply
// lock unless told otherwise (apply --lock-timeout's default).
const DefaultLockTimeout = 30 * time.Second

// ApplyOptions are an apply's inputs.
type ApplyOptions struct {
	// Spec is what the host must become.
	Spec *schema.Spec
	// Saved is the plan being applied, when the caller was given one: the
	// host must still be as it was when the plan was made (a
	// *SavedPlanError otherwise, and nothing changes).
	Saved *plan.Saved
	// Only keeps the changes of one activation; nil keeps all.
	Only *plan.Activation
	// LockTimeout is how long to wait for another apply on the host to
	// finish (0: not at all); LockOwner is the command line the lock
	// records for the next one's message; LockWaiting, when set, is told
	// who holds the lock before the wait.
	LockTimeout time.Duration
	LockOwner   string
	LockWaiting func(holder string)
	// Guard: ConfirmMode (the caller arms a rollback: Hooks.Arm, Await),
	// AllowFirmware, AllowMgmt, and the environment (the SSH session).
	Guard apply.GuardOptions
	// Progress receives a line per change (nil: none).
	Progress io.Writer
	// Hooks show the plan, ask, arm a rollback, report and await a
	// confirmation (apply.Hooks); Ready is the session's own.
	Hooks apply.Hooks
	// Hint names follow-up commands in messages (default "rdmaform ARGS").
	Hint Hint
	// Warn receives what does not fail the apply (the reboot marker
	// could not be written); nil drops it.
	Warn func(error)
}

// Result is what an apply did.
type Result struct {
	// Report is apply.Converge's: the plan acted on (Before), whether it
	// ran, what was applied, failed and skipped, the plan made after, the
	// errors.
	Report *apply.Report
	// LeftOut: with Only, changes of other activations are still to make
	// (Report.Before.LeftOut lists them): an apply without Only is due.
	LeftOut bool
}

// RebootRequired: firmware is staged for the next boot, or part of the
// spec can be planned only after one.
func (r *Result) RebootRequired() bool {
	if !r.Report.Ran {
		return r.Report.Before.ExitCode() == plan.ExitReboot
	}
	return len(r.Report.After.Pending) > 0 || len(r.Report.After.Deferred) > 0
}

// ExitCode is rdmaform apply's exit code for the result: 1 for errors
// (an interrupted apply too: the CLI says 130 or 143), 2 for changes
// left out, 3 for a reboot needed, else 0. Without a run it is the
// plan's own (a partial plan with nothing to do in its scope exits 2 for
// what it leaves out).
func (r *Result) ExitCode() int {
	rep := r.Report
	switch {
	case !rep.Ran:
		return rep.Before.ExitCode()
	case rep.Outcome.Interrupted || len(rep.Errors) > 0:
		return plan.ExitError
	case r.LeftOut:
		return plan.ExitChanges
	case r.RebootRequired():
		return plan.ExitReboot
	}
	return plan.ExitOK
}

// SavedPlanError: the saved plan no longer describes the host (or this
// build, or this boot); nothing was changed.
type SavedPlanError struct{ Err error }

func (e *SavedPlanError) Error() string { return e.Err.Error() }
func (e *SavedPlanError) Unwrap() error { return e.Err }

// LockError: the host's apply lock could not be taken (another apply
// held it past the timeout: errors.Is host.ErrLocked); nothing was
// changed.
type LockError struct{ Err error }

func (e *LockError) Error() string { return e.Err.Error() }
func (e *LockError) Unwrap() error { return e.Err }

// Apply applies o.Spec to h as rdmaform apply does: it refuses while the
// host is busy (*BusyError: checked before and again under the lock),
// takes the host's apply lock (*LockError), then apply.Converge plans,
// guards (*apply.GuardError), asks and arms through the hooks, applies,
// plans again and verifies. It keeps the reboot marker true to the plan
// it ends with, and with Only plans the whole spec again to tell what is
// left out. The result is nil only when no plan was made; an error from
// a hook comes back as it is.
func Apply(ctx context.Context, h *host.Host, o ApplyOptions) (*Result, error) {
	if err := CheckFree(h, o.Hint); err != nil {
		return nil, err
	}
	unlock, err := h.LockWaiting(ctx, o.LockTimeout, o.LockOwner, o.LockWaiting)
	if err != nil {
		return nil, &LockError{Err: err}
	}
	defer unlock()
	warn := func(err error) {
		if err != nil && o.Warn != nil {
			o.Warn(err)
		}
	}
	hooks := o.Hooks
	hooks.Ready = func(*plan.Plan) error { return CheckFree(h, o.Hint) }
	applied := o.Hooks.Applied
	hooks.Applied = func(r *apply.Report) error {
		warn(firmware.SyncRebootMarker(h, r.After))
		if applied != nil {
			return applied(r)
		}
		return nil
	}
	first := true
	r, err := apply.Converge(ctx, h, apply.ConvergeOptions{
		Build: func(ctx context.Context) (*plan.Result, error) {
			res, err := Plan(ctx, h, o.Spec, o.Only)
			if err == nil && first && o.Saved != nil {
				if err := o.Saved.Check(h, res); err != nil {
					return nil, &SavedPlanError{Err: err}
				}
			}
			first = false
			return res, err
		},
		Providers: providers.All(),
		Guard:     o.Guard,
		Progress:  o.Progress,
		Hooks:     hooks,
	})
	if r == nil {
		return nil, err
	}
	res := &Result{Report: r}
	if err != nil {
		return res, err
	}
	if !r.Ran {
		if len(r.Before.Errors) == 0 {
			warn(firmware.SyncRebootMarker(h, r.Before))
		}
		return res, nil
	}
	if o.Only != nil && !r.Outcome.Interrupted && len(r.Errors) == 0 {
		full, err := Plan(context.WithoutCancel(ctx), h, o.Spec, o.Only)
		if err != nil {
			return res, err
		}
		r.Before.LeftOut = full.Plan.LeftOut
		res.LeftOut = len(r.Before.LeftOut) > 0
	}
	return res, nil
}

// WriteSummary writes what an apply did as rdmaform apply prints it
// after its changes: the counts, then what waits for a reboot.
func WriteSummary(w io.Writer, r *apply.Report) {
	out := r.Outcome
	fmt.Fprintf(w, "\nApply: %d applied, %d failed, %d skipped.\n", len(out.Applied), len(out.Failed), len(out.Skipped))
	for _, pe := range r.After.Pending {
		fmt.Fprintf(w, "  ! %s\n", pe.Text())
	}
	for _, d := range r.After.Deferred {
		fmt.Fprintf(w, "  ? %s %s\n", d.Address, d.Reason)
	}
}

// Waiting is what rdmaform says while it waits for the host's apply
// lock that holder (as the lock records it; "" if it recorded nothing)
// holds.
func Waiting(timeout time.Duration, holder string) string {
	if holder == "" {
		holder = "by a process that has not recorded itself yet"
	} else {
		holder = "by " + holder
	}
	return fmt.Sprintf("rdmaform: waiting up to %s for the host's apply lock (%s), held %s", timeout, host.LockFile, holder)
}
