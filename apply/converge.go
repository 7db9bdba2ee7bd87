package apply

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// GuardOptions say what a plan may do.
type GuardOptions struct {
	// ConfirmMode: the apply is taken back unless confirmed
	// (--confirm-timeout), so every change must be revertible.
	ConfirmMode bool
	// AllowFirmware lets a confirm-mode apply stage firmware, which no
	// timeout can take back once the host reboots.
	AllowFirmware bool
	// AllowMgmt lets a plan disrupt the netdevs the operator reaches the
	// host through (outside confirm mode, which takes them back).
	AllowMgmt bool
	// Environ is the caller's environment (SSH_CONNECTION names the
	// session's netdev).
	Environ []string
}

// GuardError is a plan the guard refuses: every reason, one a line.
type GuardError struct {
	Reasons []string
}

func (e *GuardError) Error() string {
	return "refusing to apply, nothing was changed:\n  " + strings.Join(e.Reasons, "\n  ")
}

// Guard refuses a plan that could cut the operator off, or that confirm
// mode could not take back. It changes nothing.
func Guard(h *host.Host, p *plan.Plan, providers []plan.Provider, o GuardOptions) error {
	var why []string
	if o.ConfirmMode {
		if !o.AllowFirmware {
			for _, c := range p.Changes {
				if c.Activation == plan.NextBoot {
					why = append(why, fmt.Sprintf("%s takes effect at the next boot: a confirm timeout cannot take a reboot back; apply it on its own, or add --allow-firmware (every next-boot change: firmware, kernel arguments, driver parameters)", c.Address))
				}
			}
		}
		for _, addr := range NotRevertible(p, providers) {
			if c := changeAt(p, addr); c != nil && c.Activation == plan.NextBoot && o.AllowFirmware {
				continue // staged firmware is reverted by staging the old values, or reported
			}
			why = append(why, fmt.Sprintf("%s cannot be rolled back; apply it without --confirm-timeout", addr))
		}
	}
	if !o.AllowMgmt && !o.ConfirmMode {
		mgmt, err := h.ManagementNetdevs(o.Environ)
		if err != nil {
			return err
		}
		for _, c := range p.Changes {
			hit := ""
			for _, nd := range c.Disrupts {
				if reason, ok := mgmt[nd]; ok && hit == "" {
					hit = nd
					why = append(why, fmt.Sprintf("%s would take down, re-address or change the MTU of %s, and %s; add --allow-mgmt, or apply with --confirm-timeout to have it rolled back unless confirmed", c.Address, nd, reason))
				}
			}
			// A change disrupting a management netdev under several
			// names (a rename: the old and the new) makes the others
			// management netdevs for the changes after it.
			for _, nd := range c.Disrupts {
				if _, ok := mgmt[nd]; hit != "" && !ok {
					mgmt[nd] = mgmt[hit] + " (as " + hit + ", renamed by " + c.Address.String() + ")"
				}
			}
		}
	}
	if len(why) == 0 {
		return nil
	}
	sort.Strings(why)
	return &GuardError{Reasons: why}
}

func changeAt(p *plan.Plan, addr plan.Address) *plan.Change {
	for _, c := range p.Changes {
		if c.Address == addr {
			return c
		}
	}
	return nil
}

// Hooks are the caller's part of a converge: what it shows and asks. A
// nil hook is skipped; an error from one before the first change stops
// the converge with nothing changed and is returned as it is.
type Hooks struct {
	// Planned gets the plan as soon as it is made (to show it).
	Planned func(p *plan.Plan) error
	// Ready is asked before the guard (another apply waiting for its
	// confirmation, say).
	Ready func(p *plan.Plan) error
	// Confirm asks the operator.
	Confirm func(p *plan.Plan) error
	// Arm sets up the rollback of a confirm-mode apply (journal, timer),
	// the last thing before the first change.
	Arm func(p *plan.Plan) error
	// Applied gets the report once the changes are made and the host is
	// planned again (to show what was done and what waits for a reboot).
	Applied func(r *Report) error
	// Await waits for the confirmation of a confirm-mode apply, or has it
	// reverted; failed says whether the converge went wrong.
	Await func(out Outcome, failed bool) error
}

// ConvergeOptions say how to plan, what the guard allows, and the hooks.
type ConvergeOptions struct {
	// Build plans the host as the caller does (a --only filter, a saved
	// plan's check); it is called again after the changes, to verify.
	Build func(ctx context.Context) (*plan.Result, error)
	// Providers apply the changes (in the order Build was given).
	Providers []plan.Provider
	Guard     GuardOptions
	Hooks     Hooks
	// Progress receives a line per change as it starts and ends.
	Progress io.Writer
}

// Report is what a converge did.
type Report struct {
	// Before is the plan acted on.
	Before *plan.Plan
	// Ran: changes were made (the plan had some and no errors).
	Ran     bool
	Outcome Outcome
	// After is the plan made after the changes (nil when none ran or an
	// interrupt stopped them).
	After *plan.Plan
	// Errors is everything that went wrong once changes started: failed
	// and skipped changes, what the plan after still wants, its findings.
	Errors []string
}

// Converge plans, guards, asks, applies, plans again and verifies: the
// whole of `rdmaform apply` but what it prints. A plan with errors, or
// with nothing to do, returns at once with Ran false. An interrupt stops
// between changes (Outcome.Interrupted) and returns without planning
// again.
func Converge(ctx context.Context, h *host.Host, o ConvergeOptions) (*Report, error) {
	res, err := o.Build(ctx)
	if err != nil {
		return nil, err
	}
	p := res.Plan
	r := &Report{Before: p}
	call := func(fn func(*plan.Plan) error) error {
		if fn == nil {
			return nil
		}
		return fn(p)
	}
	if err := call(o.Hooks.Planned); err != nil {
		return r, err
	}
	if len(p.Errors) > 0 {
		return r, nil
	}
	if p.Empty() {
		return r, settle(ctx, h, res, o.Providers)
	}
	if err := call(o.Hooks.Ready); err != nil {
		return r, err
	}
	if err := Guard(h, p, o.Providers, o.Guard); err != nil {
		return r, err
	}
	for _, fn := range []func(*plan.Plan) error{o.Hooks.Confirm, o.Hooks.Arm} {
		if err := call(fn); err != nil {
			return r, err
		}
	}
	r.Ran = true
	r.Outcome = Run(ctx, h, p, o.Providers, Options{Progress: o.Progress, Grace: DefaultGrace})
	if r.Outcome.Interrupted {
		return r, nil
	}
	after, err := o.Build(context.WithoutCancel(ctx))
	if err != nil {
		return r, err
	}
	r.After = after.Plan
	if len(after.Plan.Errors) == 0 && r.Outcome.Err == nil {
		if err := settle(context.WithoutCancel(ctx), h, after, o.Providers); err != nil {
			r.Errors = append(r.Errors, err.Error())
		}
	}
	if r.Outcome.Err != nil {
		r.Errors = append(r.Errors, r.Outcome.Err.Error())
	}
	if verr := Verify(after.Plan, r.Outcome); verr != nil {
		r.Errors = append(r.Errors, verr.Error())
	}
	for _, f := range after.Plan.Errors {
		r.Errors = append(r.Errors, f.String())
	}
	if o.Hooks.Applied != nil {
		if err := o.Hooks.Applied(r); err != nil {
			return r, err
		}
	}
	if o.Hooks.Await != nil {
		if err := o.Hooks.Await(r.Outcome, len(r.Errors) > 0); err != nil {
			return r, err
		}
	}
	return r, nil
}

// settle lets each provider that keeps a record on the host (plan.Settler)
// bring it in line with the plan the apply ended on.
func settle(ctx context.Context, h *host.Host, res *plan.Result, providers []plan.Provider) error {
	for _, pr := range providers {
		if s, ok := plan.Optional[plan.Settler](pr); ok {
			if err := s.Settle(ctx, h, res); err != nil {
				return err
			}
		}
	}
	return nil
}
