package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/words"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers"
	"github.com/rdmaform/rdmaform/schema"
	"github.com/rdmaform/rdmaform/session"
)

func (a *app) build(ctx context.Context, h *host.Host, spec *schema.Spec) (*plan.Result, error) {
	res, err := plan.Build(ctx, h, spec, providers.All())
	if err != nil {
		return nil, &exitError{code: plan.ExitError, err: err}
	}
	return res, nil
}

func (a *app) render(p *plan.Plan, format string) error {
	switch format {
	case "json":
		b, err := p.JSON()
		if err != nil {
			return err
		}
		a.wroteDoc = true
		_, err = a.env.Stdout.Write(b)
		return err
	case "text", "":
		return plan.WriteText(a.env.Stdout, p, plan.TextOptions{Color: a.color()})
	}
	return &exitError{code: plan.ExitError, err: fmt.Errorf("unknown output format %q (text or json)", format)}
}

func (a *app) planCmd() *cobra.Command {
	var file, out string
	cmd := &cobra.Command{
		Use:   "plan -f SPEC [-o text|json] [--out PLAN]",
		Short: "Show what apply would change; changes nothing",
		Long: `Discover the host, compare it with the spec and print an ordered plan:
+ create, ~ update, - delete, ! staged for next boot (pending a reboot),
? deferred until a reboot. Host-dependent findings point at the spec line.

` + exitCodesHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutFile("--out", out); err != nil {
				return err
			}
			spec, err := a.loadSpec(file)
			if err != nil {
				return err
			}
			h, err := a.host()
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			defer a.recordSimCalls()
			stop := a.readProgress(h)
			res, err := a.build(cmd.Context(), h, spec)
			stop()
			if err != nil {
				return err
			}
			a.results.Plan = res.Plan
			if err := a.render(res.Plan, a.output); err != nil {
				return err
			}
			a.warnJournal(cmd.Context(), h)
			a.sayGuard(h, res.Plan)
			if out != "" {
				if err := a.savePlan(h, res, spec, out); err != nil {
					return err
				}
			}
			return exitCode(res.Plan.ExitCode())
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "spec `FILE` (- for stdin)")
	a.outputFlag(cmd, "text", "text", "json")
	a.hostFlags(cmd)
	cmd.Flags().StringVar(&out, "out", "", "also save the plan to `PLAN` (mode 0600) for apply PLAN")
	return cmd
}

func (a *app) applyCmd() *cobra.Command {
	var file, only string
	var yes bool
	var lockTimeout, confirmTimeout time.Duration
	var allowFirmware, allowMgmt bool
	cmd := &cobra.Command{
		Use:   "apply [PLAN] [-f SPEC|PLAN] [--yes] [--only runtime] [-o text|json]",
		Short: "Apply the spec, then verify by planning again",
		Long: `Plan, ask for confirmation (unless --yes), apply every change in order
with a progress line per change on stderr, skip changes whose
dependencies failed while carrying on with independent ones, then plan
again: anything still to change is an error naming the resource and
attribute. Firmware changes take effect at the next boot and are reported
as pending, never applied again.

A saved plan (plan --out FILE), given as the argument or with -f, is
applied without asking, exactly: the file must be intact (its digest, an
unkeyed sha256 against accidental damage), made by this rdmaform build
(version and commit), on this host (hostname, machine-id) in this boot
with the same adapters and firmware versions, and its spec planned again
on this host must give the very changes and pending items it records,
with the same before values; otherwise it is refused, naming the first
difference, and nothing changes.

` + exitCodesHelp,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if file != "" {
					return &exitError{code: plan.ExitError, err: fmt.Errorf("give the plan as the argument or with -f, not both")}
				}
				file = args[0]
			}
			if file == "" {
				return &exitError{code: plan.ExitError, err: fmt.Errorf("no spec: give -f SPEC or -f PLAN (a plan saved with plan --out)")}
			}
			data, err := host.ReadLocalFile(file, a.env.Stdin)
			if err != nil {
				return &exitError{code: plan.ExitError, err: fmt.Errorf("reading %s: %w", file, err)}
			}
			saved, isPlan, err := plan.LoadSaved(data)
			if err != nil {
				return &exitError{code: plan.ExitError, err: fileFinding(file, data, err)}
			}
			var spec *schema.Spec
			if isPlan {
				spec, err = a.parseSpec(saved.Spec.File, []byte(saved.Spec.Content))
			} else {
				name := file
				if file == "-" {
					name = "<stdin>"
				}
				spec, err = a.parseSpec(name, data)
			}
			if err != nil {
				return err
			}
			h, err := a.host()
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			defer a.recordSimCalls()
			filter, err := onlyFilter(only)
			if err != nil {
				return err
			}
			return a.apply(cmd.Context(), h, spec, applyOptions{yes: yes || isPlan, only: filter, saved: saved, lockTimeout: lockTimeout, owner: "rdmaform apply -f " + file,
				confirmTimeout: confirmTimeout, allowFirmware: allowFirmware, allowMgmt: allowMgmt})
		},
	}
	cmd.Flags().DurationVar(&lockTimeout, "lock-timeout", 30*time.Second, "how long to wait for another apply on this host to finish")
	cmd.Flags().DurationVar(&confirmTimeout, "confirm-timeout", 0, "keep the changes only if 'rdmaform confirm' runs within `D`; otherwise revert them")
	cmd.Flags().BoolVar(&allowFirmware, "allow-firmware", false, "with --confirm-timeout: also stage firmware changes (a reboot cannot be taken back)")
	cmd.Flags().BoolVar(&allowMgmt, "allow-mgmt", false, "allow changes that take down or re-address the interface of the default route or of this SSH session")
	cmd.Flags().StringVarP(&file, "file", "f", "", "spec `FILE` (- for stdin)")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "apply without asking")
	cmd.Flags().StringVar(&only, "only", "", "apply only changes of one activation: runtime (what a boot loses; the boot unit runs this)")
	a.outputFlag(cmd, "text", "text", "json")
	a.hostFlags(cmd)
	return cmd
}

// applyOptions tune an apply.
type applyOptions struct {
	yes bool
	// saved is the plan being applied, when apply was given one: the host
	// must still be as it was when the plan was made.
	saved *plan.Saved
	// confirmTimeout > 0: keep the changes only if `rdmaform confirm` runs
	// in time, otherwise revert them.
	confirmTimeout time.Duration
	allowFirmware  bool
	allowMgmt      bool
	// only is the activation --only keeps; nil keeps all.
	only *plan.Activation
	// lockTimeout is how long to wait for the host's apply lock; owner is
	// the command line the lock records.
	lockTimeout time.Duration
	owner       string
}

// onlyFilter parses --only.
func onlyFilter(only string) (*plan.Activation, error) {
	switch only {
	case "":
		return nil, nil
	case "runtime":
		act := plan.Runtime
		return &act, nil
	}
	return nil, &exitError{code: plan.ExitError, err: fmt.Errorf("--only %q: the only filter is runtime", only)}
}

// buildFiltered plans and, with --only, keeps only the selected changes;
// pending and deferred items are kept: they still describe the host.
func (a *app) buildFiltered(ctx context.Context, h *host.Host, spec *schema.Spec, only func(*plan.Change) bool) (*plan.Result, error) {
	res, err := a.build(ctx, h, spec)
	if err != nil || only == nil {
		return res, err
	}
	var keep []*plan.Change
	for _, c := range res.Plan.Changes {
		if only(c) {
			keep = append(keep, c)
		}
	}
	res.Plan.Changes = keep
	res.Plan.Finish()
	return res, nil
}

// apply applies spec through session.Apply with the command's prompts,
// progress and rendering.
func (a *app) apply(ctx context.Context, h *host.Host, spec *schema.Spec, o applyOptions) error {
	var doc *applyDoc
	// The live progress of the changes ends before apply's summary.
	progress, stopProgress := a.progress()
	var stopOnce sync.Once
	stop := func() { stopOnce.Do(stopProgress) }
	defer stop()
	res, err := session.Apply(ctx, h, session.ApplyOptions{
		Spec: spec, Saved: o.saved, Only: o.only,
		LockTimeout: o.lockTimeout, LockOwner: o.owner,
		LockWaiting: func(holder string) { fmt.Fprintln(a.info(), session.Waiting(o.lockTimeout, holder)) },
		Guard:       apply.GuardOptions{ConfirmMode: o.confirmTimeout > 0, AllowFirmware: o.allowFirmware, AllowMgmt: o.allowMgmt, Environ: a.env.Environ},
		Progress:    progress,
		Hint:        a.hint,
		Warn: func(err error) {
			stop()
			fmt.Fprintf(a.env.Stderr, "rdmaform: warning: %v\n", err)
		},
		Hooks: apply.Hooks{
			Planned: func(p *plan.Plan) error {
				doc = &applyDoc{FormatVersion: FormatVersion, Plan: p, Applied: []plan.Address{}, Failed: []plan.Address{}, Skipped: []plan.Address{},
					Pending: []plan.Pending{}, Deferred: []plan.Deferred{}, Errors: []jsonError{}}
				if a.jsonOut() || (a.quiet && o.yes) {
					// -q prints the result only: the plan is shown when
					// apply asks about it, else its summary if nothing runs.
					return nil
				}
				return plan.WriteText(a.env.Stdout, p, plan.TextOptions{Color: a.color()})
			},
			Confirm: func(*plan.Plan) error {
				if o.yes {
					return nil
				}
				return a.askFirst("apply", "changes anything", "use --yes to apply without asking")
			},
			Arm: func(p *plan.Plan) error {
				if o.confirmTimeout == 0 {
					return nil
				}
				if err := a.armRollback(ctx, h, spec, p, time.Now().Add(o.confirmTimeout)); err != nil {
					return &exitError{code: plan.ExitError, err: fmt.Errorf("refusing to apply, nothing was changed: %w", err)}
				}
				return nil
			},
			Applied: func(r *apply.Report) error {
				stop()
				if !a.jsonOut() {
					session.WriteSummary(a.env.Stdout, r)
				}
				return nil
			},
			Await: func(out apply.Outcome, failed bool) error {
				if o.confirmTimeout == 0 {
					return nil
				}
				return a.awaitConfirm(ctx, h, out, o.confirmTimeout, failed)
			},
		},
	})
	if res != nil {
		a.results.Plan, a.results.Report = res.Report.Before, res.Report
	}
	var ee *exitError
	if err != nil && !errors.As(err, &ee) {
		// Refused (busy host, lock, guard, saved plan), or the host
		// could not be planned: exit 1 with the message.
		return &exitError{code: plan.ExitError, err: err}
	}
	if err != nil {
		return err
	}
	r := res.Report
	p := r.Before
	if !r.Ran {
		if a.quiet && o.yes && !a.jsonOut() {
			fmt.Fprintln(a.env.Stdout, plan.SummaryLine(p))
		}
		if a.jsonOut() {
			doc.Errors = findingErrors(p.Errors)
			doc.Pending, doc.Deferred = nonNil(p.Pending), nonNilD(p.Deferred)
			doc.RebootRequired = res.RebootRequired()
			if err := a.writeJSON(doc); err != nil {
				return err
			}
		}
		// A partial plan (--only) with nothing to do in its scope says
		// what it leaves out in its summary and exits 2 for it.
		return exitCode(res.ExitCode())
	}
	out := r.Outcome
	if out.Interrupted {
		stop()
		return a.interrupted(ctx, p, out)
	}
	after, msgs := r.After, r.Errors
	if res.LeftOut {
		n := len(p.LeftOut)
		fmt.Fprintf(a.msgs(), "Applied only %s changes; left for an apply without --only: %d %s (%s).\n", *o.only, n, words.Plural(n, "change", "changes"), plan.LeftOutText(p.LeftOut))
	}
	if a.jsonOut() {
		doc.Applied, doc.Failed, doc.Skipped = append(doc.Applied, out.Applied...), append(doc.Failed, out.Failed...), append(doc.Skipped, out.Skipped...)
		doc.Pending, doc.Deferred = nonNil(after.Pending), nonNilD(after.Deferred)
		doc.Errors = append(doc.Errors, applyErrors(msgs, after)...)
		doc.RebootRequired = res.RebootRequired()
		if err := a.writeJSON(doc); err != nil {
			return err
		}
		return exitCode(res.ExitCode())
	}
	if len(msgs) > 0 {
		return &exitError{code: plan.ExitError, err: fmt.Errorf("apply failed:\n%s", strings.Join(msgs, "\n"))}
	}
	if res.RebootRequired() {
		fmt.Fprintln(a.env.Stdout, "Reboot required to finish.")
	}
	return exitCode(res.ExitCode())
}

// askFirst asks the operator before cmd changes the host. A prompt needs
// an operator: "echo yes | rdmaform apply" or a run with stdout
// redirected must not change anything by accident.
func (a *app) askFirst(cmd, does, hint string) error {
	return a.ask(cmd, does, hint, applyQuestion)
}

// ask is askFirst with the question put to the operator.
func (a *app) ask(cmd, does, hint, question string) error {
	if !a.env.StdinTTY || !a.env.StdoutTTY {
		return &exitError{code: plan.ExitError, err: fmt.Errorf("%s asks before it %s, and stdin and stdout are not both a terminal; nothing was changed (%s)", cmd, does, hint)}
	}
	ok, err := a.confirm(question)
	if err != nil {
		return &exitError{code: plan.ExitError, err: err}
	}
	if !ok {
		return &exitError{code: plan.ExitError, err: fmt.Errorf("%s cancelled; nothing was changed", cmd)}
	}
	return nil
}

// interrupted reports an apply a signal stopped: what was applied and
// what was not (the next plan shows exactly what is left), exit 130 for
// SIGINT, 143 for SIGTERM.
func (a *app) interrupted(ctx context.Context, p *plan.Plan, out apply.Outcome) error {
	code := 130
	var se *SignalError
	if errors.As(context.Cause(ctx), &se) {
		code = se.ExitCode()
	}
	if a.jsonOut() {
		doc := &applyDoc{FormatVersion: FormatVersion, Plan: p, Applied: append([]plan.Address{}, out.Applied...), Failed: append([]plan.Address{}, out.Failed...),
			Skipped: append([]plan.Address{}, out.Skipped...), Pending: []plan.Pending{}, Deferred: []plan.Deferred{},
			Errors: []jsonError{{Message: "interrupted"}}, Interrupted: true}
		if err := a.writeJSON(doc); err != nil {
			return err
		}
		return exitCode(code)
	}
	none := func(l []plan.Address) string {
		if len(l) == 0 {
			return "none"
		}
		return plan.JoinAddrs(l, ", ")
	}
	fmt.Fprintf(a.env.Stdout, "\nInterrupted: applied %s; not applied: %s.\n", none(out.Applied), none(append(append([]plan.Address{}, out.Failed...), out.Skipped...)))
	return &exitError{code: code, err: fmt.Errorf("interrupted: %d applied, %d not applied; run plan to see what is left", len(out.Applied), len(out.Failed)+len(out.Skipped))}
}

// applyDoc is `apply -o json`: the plan made before acting, what was
// applied, failed and skipped (addresses), what waits for a reboot after
// it, and every error. Progress lines still go to stderr.
type applyDoc struct {
	FormatVersion  int             `json:"format_version"`
	Plan           *plan.Plan      `json:"plan"`
	Applied        []plan.Address  `json:"applied"`
	Failed         []plan.Address  `json:"failed"`
	Skipped        []plan.Address  `json:"skipped"`
	Pending        []plan.Pending  `json:"pending"`
	Deferred       []plan.Deferred `json:"deferred"`
	Errors         []jsonError     `json:"errors"`
	RebootRequired bool            `json:"reboot_required"`
	// Interrupted: a signal stopped the apply (exit 130 or 143).
	Interrupted bool `json:"interrupted,omitempty"`
}

// applyErrors is an apply's errors for its document: the findings of the
// plan after it at their positions, the rest (failed changes, what is
// still to change) as messages, in the report's order.
func applyErrors(msgs []string, after *plan.Plan) []jsonError {
	found := map[string]schema.Finding{}
	if after != nil {
		for _, f := range after.Errors {
			found[f.String()] = f
		}
	}
	out := make([]jsonError, 0, len(msgs))
	for _, m := range msgs {
		if f, ok := found[m]; ok {
			out = append(out, f)
			continue
		}
		out = append(out, jsonError{Message: m})
	}
	return out
}

func nonNil(p []plan.Pending) []plan.Pending {
	if p == nil {
		return []plan.Pending{}
	}
	return p
}

func nonNilD(d []plan.Deferred) []plan.Deferred {
	if d == nil {
		return []plan.Deferred{}
	}
	return d
}

// applyQuestion is what apply asks.
const applyQuestion = "Do you want to apply these changes?"

// confirm asks the operator a question; only "yes" proceeds.
func (a *app) confirm(question string) (bool, error) {
	fmt.Fprint(a.env.Stderr, "\n"+question+" Only 'yes' will be accepted: ")
	line, err := bufio.NewReader(a.env.Stdin).ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(a.env.Stderr)
		if !a.env.StdinTTY {
			return false, fmt.Errorf("no answer on stdin (not a terminal); use --yes to apply without asking")
		}
		return false, nil
	}
	return strings.TrimSpace(line) == "yes", nil
}

// savePlan writes the plan with its spec and host identity, mode 0600: a
// plan can hold addresses and names an operator does not want world-readable.
func (a *app) savePlan(h *host.Host, res *plan.Result, spec *schema.Spec, file string) error {
	saved := plan.NewSaved(h, res, spec.Src.File, spec.Src.Data)
	b, err := json.MarshalIndent(saved, "", "  ")
	if err != nil {
		return err
	}
	if err := host.WriteLocalFile(file, append(b, '\n'), 0o600); err != nil {
		return &exitError{code: plan.ExitError, err: fmt.Errorf("saving plan: %w", err)}
	}
	fmt.Fprintf(a.info(), "Saved the plan to %s; apply it with: %s\n", file, a.hint("apply", file))
	return nil
}

// checkOutFile refuses, before anything is read, a file flag naming
// something rdmaform must not replace (host.CheckLocalTarget); writing
// checks it again.
func checkOutFile(flag, name string) error {
	if name == "" {
		return nil
	}
	if err := host.CheckLocalTarget(name); err != nil {
		return &exitError{code: plan.ExitError, err: fmt.Errorf("%s: %w", flag, err)}
	}
	return nil
}

// refuseWhileWaiting refuses an apply while another one waits for
// confirmation on this host, or a rollback journal is left
// (session.CheckFree).
func (a *app) refuseWhileWaiting(h *host.Host) error {
	if err := session.CheckFree(h, a.hint); err != nil {
		return &exitError{code: plan.ExitError, err: err}
	}
	return nil
}

// sayGuard says, under the plan, what apply's management guard would
// refuse in it (a change that takes down, re-addresses or changes the MTU
// of the netdev of the default route or of this SSH session) and how to
// apply it anyway: in text on stdout, with the plan; under -o json on
// stderr, the document being the plan's. A guard that cannot read the
// host's routes says nothing here: apply reports it.
func (a *app) sayGuard(h *host.Host, p *plan.Plan) {
	var ge *apply.GuardError
	if err := apply.Guard(h, p, providers.All(), apply.GuardOptions{Environ: a.env.Environ}); !errors.As(err, &ge) {
		return
	}
	if a.output == "json" {
		for _, r := range ge.Reasons {
			fmt.Fprintf(a.env.Stderr, "rdmaform: warning: apply refuses this plan without --allow-mgmt: %s\n", r)
		}
		return
	}
	fmt.Fprintf(a.env.Stdout, "\nThe management guard: apply refuses this plan without --allow-mgmt or --confirm-timeout:\n")
	for _, r := range ge.Reasons {
		fmt.Fprintf(a.env.Stdout, "  ! %s\n", r)
	}
}
