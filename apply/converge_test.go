package apply

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// flip is a provider whose one resource is wrong until applied (or, with
// stuck, stays wrong: what a verify must catch).
type flip struct {
	done, stuck bool
	revertible  bool
}

func (f *flip) Name() string { return "flip" }
func (f *flip) Discover(context.Context, *host.Host, *plan.Request) (any, error) {
	return nil, nil
}
func (f *flip) Diff(*plan.Request, any, *plan.Facts) plan.Proposal { return plan.Proposal{} }
func (f *flip) Apply(context.Context, *host.Host, *plan.Change) error {
	f.done = !f.stuck
	return nil
}

func (f *flip) plan() *plan.Plan {
	p := &plan.Plan{}
	if !f.done {
		p.Changes = []*plan.Change{{Address: plan.Addr("flip", "x"), Provider: "flip", Action: plan.Update, Disrupts: []string{"eth0"},
			Attributes: []plan.Attr{{Name: "v", Before: "0", After: "1"}}}}
	}
	p.Finish()
	return p
}

// TestConverge: the hooks run in order around one apply and one plan
// after it; a guard refusal or a hook's error stops it with nothing
// changed; a re-plan that still wants a change is an error.
func TestConverge(t *testing.T) {
	ctx := context.Background()
	run := func(f *flip, g GuardOptions, confirm error) ([]string, *Report, error) {
		var calls []string
		hook := func(name string, err error) func(*plan.Plan) error {
			return func(*plan.Plan) error { calls = append(calls, name); return err }
		}
		r, err := Converge(ctx, &host.Host{}, ConvergeOptions{
			Build: func(context.Context) (*plan.Result, error) {
				calls = append(calls, "build")
				return &plan.Result{Plan: f.plan()}, nil
			},
			Providers: []plan.Provider{f},
			Guard:     g,
			Hooks: Hooks{Planned: hook("planned", nil), Ready: hook("ready", nil), Confirm: hook("confirm", confirm), Arm: hook("arm", nil),
				Applied: func(*Report) error { calls = append(calls, "applied"); return nil },
				Await: func(_ Outcome, failed bool) error {
					calls = append(calls, "await failed="+map[bool]string{true: "yes", false: "no"}[failed])
					return nil
				}},
		})
		return calls, r, err
	}

	f := &flip{}
	calls, r, err := run(f, GuardOptions{}, nil)
	if err != nil || !r.Ran || len(r.Errors) != 0 || !f.done || len(r.After.Changes) != 0 {
		t.Fatalf("converge: %v, %+v; want the change made and nothing left", err, r)
	}
	if diff := cmp.Diff([]string{"build", "planned", "ready", "confirm", "arm", "build", "applied", "await failed=no"}, calls); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}

	// Nothing to do: planned, then back.
	calls, r, _ = run(f, GuardOptions{}, nil)
	if r.Ran || !cmp.Equal(calls, []string{"build", "planned"}) {
		t.Errorf("nothing to do: ran %v, calls %v", r.Ran, calls)
	}

	// Confirm mode refuses a change no provider can revert: nothing made.
	f = &flip{}
	calls, r, err = run(f, GuardOptions{ConfirmMode: true}, nil)
	var ge *GuardError
	if !errors.As(err, &ge) || f.done || r.Ran || !strings.Contains(err.Error(), "flip[x] cannot be rolled back") {
		t.Errorf("confirm mode: %v, done %v; want a guard refusal and nothing changed", err, f.done)
	}
	if diff := cmp.Diff([]string{"build", "planned", "ready"}, calls); diff != "" {
		t.Errorf("refused (-want +got):\n%s", diff)
	}

	// The operator says no: nothing made, the hook's error as it is.
	no := errors.New("apply cancelled")
	f = &flip{}
	if _, r, err = run(f, GuardOptions{}, no); err != no || f.done || r.Ran {
		t.Errorf("cancelled: %v, done %v", err, f.done)
	}

	// Applied but still wrong: the re-plan's change is an error, and the
	// await hears it failed.
	f = &flip{stuck: true}
	calls, r, err = run(f, GuardOptions{}, nil)
	if err != nil || len(r.Errors) != 1 || !strings.Contains(r.Errors[0], `flip[x]: v is still "0" after apply, want "1"`) {
		t.Errorf("stuck: %v, errors %q", err, r.Errors)
	}
	if calls[len(calls)-1] != "await failed=yes" {
		t.Errorf("stuck: calls %v, want await told it failed", calls)
	}
}
