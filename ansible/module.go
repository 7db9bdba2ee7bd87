// Package ansible is rdmaform as an Ansible binary module: Ansible copies
// the binary to the target, runs it with the path of a JSON arguments
// file and reads one JSON object from its stdout.
//
// The module plans and applies through the session package, the code of
// rdmaform plan and apply (the host's lock, the refusal while an apply
// waits for its confirmation, the guard, verification by planning again,
// the exit codes), and takes what they made as values: the plan,
// apply.Converge's report (the plan it acted on, what was applied, the
// plan made after). With confirm_timeout it runs rdmaform's own "apply
// --yes --confirm-timeout D" in process (cli.RunResults) in a background
// process of its own (see confirm.go), whose rollback watcher runs the
// module's copy as rdmaform; "confirm", "facts" and state activated's
// "activate" are rdmaform's commands run so too. So the module is never a
// second apply flow that could drift from rdmaform apply; no JSON is
// parsed.
package ansible

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/words"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
	"github.com/rdmaform/rdmaform/session"
	"github.com/rdmaform/rdmaform/version"
)

// Result is the JSON object the module prints. Changed, Failed and Msg
// are Ansible's; the rest is rdmaform's, for playbooks to branch on
// (reboot only where reboot_required).
type Result struct {
	Changed bool   `json:"changed"`
	Failed  bool   `json:"failed"`
	Msg     string `json:"msg"`
	// RebootRequired: firmware is staged for the next boot, or part of the
	// spec can only be planned after one (rdmaform's exit code 3).
	RebootRequired bool `json:"reboot_required"`
	// RC is rdmaform's exit code: 0 matches, 1 error, 2 changes, 3 reboot;
	// 0 while an apply with confirm_timeout waits for confirmation.
	RC int `json:"rc"`
	// Plan is the plan made before acting: what was (or, in check mode,
	// would be) done, in rdmaform's JSON plan format.
	Plan *plan.Plan `json:"plan,omitempty"`
	// Pending and Deferred describe the host after the run.
	Pending  []plan.Pending  `json:"pending"`
	Deferred []plan.Deferred `json:"deferred"`
	// Confirm is the apply of a run with confirm_timeout, waiting in the
	// background for a run with state confirmed.
	Confirm *Confirm `json:"confirm,omitempty"`
	// Diff is one before/after per changed resource, with --diff.
	Diff []DiffItem `json:"diff,omitempty"`
	// StdoutLines and StderrLines are what rdmaform apply printed: the
	// plan and summary, the progress lines.
	StdoutLines []string `json:"stdout_lines,omitempty"`
	StderrLines []string `json:"stderr_lines,omitempty"`
	Warnings    []string `json:"warnings,omitempty"`
	// AnsibleFacts, with state facts, is {"rdmaform": rdmaform facts -o
	// json}: the host's RDMA devices as the fact ansible_facts.rdmaform.
	AnsibleFacts map[string]any `json:"ansible_facts,omitempty"`
	// Rdmaform is the module's build (version, commit, Go, platform): which
	// rdmaform ran on the host.
	Rdmaform version.Info `json:"rdmaform"`
}

// Main runs the module. args[0] is the arguments file. It prints one JSON
// object on env.Stdout and returns 1 when the result is failed, else 0.
//
// Started by the module itself with BackgroundArg, it is the background
// apply of confirm_timeout instead: see Background.
func Main(args []string, env cli.Env) int {
	if len(args) == 1 && args[0] == BackgroundArg {
		return Background(env)
	}
	if len(args) == 1 && args[0] == BackgroundActivateArg {
		return BackgroundActivate(env)
	}
	if len(args) == 1 && args[0] == StdinArg {
		// The action plugin's module cache runs the cached binary with
		// its arguments on standard input (plugins/action/rdmaform.py).
		data, err := host.ReadLocalFile("-", env.Stdin)
		return emit(runWith(data, err, env), env)
	}
	if len(args) > 0 && args[0] == CLIArg {
		// The background apply's rollback watcher (or timer) runs the
		// module's installed copy as rdmaform.
		return cli.Run(args[1:], env)
	}
	return emit(Run(args, env), env)
}

// StdinArg, as the only argument, makes the module read its arguments
// (the JSON of an arguments file) on standard input.
const StdinArg = "--rdmaform-ansible-args-stdin"

// emit prints the result as Ansible reads it and returns the exit code.
func emit(res Result, env cli.Env) int {
	b, err := encode(res)
	if err != nil {
		b, _ = encode(Result{Failed: true, RC: plan.ExitError, Msg: fmt.Sprintf("rdmaform module: encoding the result: %v", err)})
	}
	if _, err := env.Stdout.Write(b); err != nil || res.Failed {
		return 1
	}
	return 0
}

// encode writes the result as one line of JSON, "<stdin>" unescaped.
func encode(r Result) ([]byte, error) {
	r.Rdmaform = version.Get()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(r)
	return b.Bytes(), err
}

// Run runs the module and returns its result.
func Run(args []string, env cli.Env) Result {
	if len(args) != 1 {
		return failed(plan.ExitError, "usage: rdmaform ARGS_FILE (Ansible runs this binary with the path of a JSON arguments file)")
	}
	data, err := host.ReadLocalFile(args[0], nil)
	return runWith(data, err, env)
}

// runWith runs the module with the arguments data, read with err.
func runWith(data []byte, err error, env cli.Env) Result {
	if err != nil {
		return failed(plan.ExitError, fmt.Sprintf("reading module arguments: %v", err))
	}
	if len(data) > host.MaxLocalFile {
		return failed(plan.ExitError, fmt.Sprintf("module arguments: more than %d bytes", host.MaxLocalFile))
	}
	a, err := ParseArgs(data)
	if err != nil {
		return failed(plan.ExitError, err.Error())
	}
	m := &module{args: a, env: env}
	switch a.State {
	case Confirmed:
		return m.confirm()
	case Facts:
		return m.facts()
	case Activated:
		return m.activate()
	}
	return m.run()
}

func failed(rc int, msg string) Result {
	return Result{Failed: true, RC: rc, Msg: msg, Pending: []plan.Pending{}, Deferred: []plan.Deferred{}}
}

type module struct {
	args Args
	env  cli.Env
}

// output is one apply: its exit code, what it printed, what it did.
type output struct {
	code           int
	stdout, stderr string
	res            *session.Result
}

// rdmaform runs an rdmaform command in process on the spec the arguments
// name (state activated: rdmaform activate) and returns what it printed.
func (m *module) rdmaform(cmd string, extra ...string) output {
	var stdout, stderr bytes.Buffer
	code, _ := m.rdmaformTo(&stdout, &stderr, cmd, extra...)
	return output{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// rdmaformTo runs the CLI in-process on the spec the arguments name,
// writing to stdout and stderr as it goes (the background apply of
// confirm_timeout: rdmaform apply --confirm-timeout, with its rollback
// watcher).
//
// Equivalent to: rdmaform [--sim DIR|--root DIR] CMD -f SPEC ARGS...
// (or -f - with the content on stdin).
func (m *module) rdmaformTo(stdout, stderr io.Writer, cmd string, extra ...string) (int, *cli.Results) {
	argv := append(m.hostArgs(), cmd)
	var stdin *strings.Reader
	if m.args.Spec != "" {
		argv = append(argv, "-f", m.args.Spec)
		stdin = strings.NewReader("")
	} else {
		argv = append(argv, "-f", "-")
		stdin = strings.NewReader(m.args.Content)
	}
	argv = append(argv, extra...)
	return cli.RunResults(argv, cli.Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, Environ: m.env.Environ, Ctx: m.env.Ctx, Self: m.env.Self, SelfArgs: m.env.SelfArgs})
}

// hostArgs are the global flags naming the host: --sim DIR, --root DIR
// or none (the live host).
func (m *module) hostArgs() []string {
	switch {
	case m.args.Sim != "":
		return []string{"--sim", m.args.Sim}
	case m.args.Root != "":
		return []string{"--root", m.args.Root}
	}
	return nil
}

// spec reads and checks the spec the arguments name (the file, or the
// content as "<stdin>", as rdmaform -f - names it); findings come back
// one a line, each with its position.
func (m *module) spec() (*schema.Spec, error) {
	name, data := "<stdin>", []byte(m.args.Content)
	if m.args.Spec != "" {
		b, err := host.ReadLocalFile(m.args.Spec, nil)
		if err != nil {
			return nil, fmt.Errorf("reading spec: %w", err)
		}
		name, data = m.args.Spec, b
	}
	spec, rep := schema.Parse(name, data)
	if len(rep) > 0 {
		ls := make([]string, 0, len(rep)+1)
		for _, f := range rep {
			ls = append(ls, f.String())
		}
		ls = append(ls, fmt.Sprintf("%s: %d %s", name, len(rep), words.Plural(len(rep), "error", "errors")))
		return nil, errors.New(strings.Join(ls, "\n"))
	}
	return spec, nil
}

// open opens the host the arguments name (session.Open).
func (m *module) open() (*host.Host, error) {
	h, _, err := session.Open(session.Target{Sim: m.args.Sim, Root: m.args.Root}, m.env.Environ)
	return h, err
}

// plan plans the spec on the host (session.Plan) and returns the plan
// with rdmaform plan's exit code. A plan with findings (exit 1) is
// returned with them; a failure before any plan (a bad spec, a host that
// cannot be read) returns the error: positioned findings, one a line.
//
// Equivalent to: rdmaform [--sim DIR|--root DIR] plan -f SPEC
func (m *module) plan() (*plan.Plan, int, error) {
	spec, err := m.spec()
	if err != nil {
		return nil, plan.ExitError, err
	}
	h, err := m.open()
	if err != nil {
		return nil, plan.ExitError, err
	}
	res, err := session.Plan(m.ctx(), h, spec, nil)
	if err != nil {
		return nil, plan.ExitError, err
	}
	return res.Plan, res.Plan.ExitCode(), nil
}

// ctx is the run's context.
func (m *module) ctx() context.Context {
	if m.env.Ctx == nil {
		return context.Background()
	}
	return m.env.Ctx
}

// apply applies the spec (session.Apply, as rdmaform apply --yes) and
// returns its exit code, what it printed (the plan, the progress lines,
// the summary, the errors) and its result (nil when it made no plan).
//
// Equivalent to: rdmaform [--sim DIR|--root DIR] apply --yes -f SPEC
func (m *module) apply() output {
	var stdout, stderr strings.Builder
	fail := func(err error) output {
		fmt.Fprintf(&stderr, "rdmaform: %v\n", err)
		return output{code: plan.ExitError, stdout: stdout.String(), stderr: stderr.String()}
	}
	spec, err := m.spec()
	if err != nil {
		return fail(err)
	}
	h, err := m.open()
	if err != nil {
		return fail(err)
	}
	res, err := session.Apply(m.ctx(), h, session.ApplyOptions{
		Spec: spec, LockTimeout: session.DefaultLockTimeout, LockOwner: "rdmaform module apply",
		LockWaiting: func(holder string) { fmt.Fprintln(&stderr, session.Waiting(session.DefaultLockTimeout, holder)) },
		Guard:       apply.GuardOptions{Environ: m.env.Environ}, Progress: &stderr, Hint: m.hint,
		Warn: func(err error) { fmt.Fprintf(&stderr, "rdmaform: warning: %v\n", err) },
		Hooks: apply.Hooks{
			Planned: func(p *plan.Plan) error { return plan.WriteText(&stdout, p, plan.TextOptions{}) },
			Applied: func(r *apply.Report) error { session.WriteSummary(&stdout, r); return nil },
		},
	})
	out := output{res: res}
	switch {
	case err != nil:
		out = fail(err)
		out.res = res
		return out
	case res.Report.Outcome.Interrupted:
		// As rdmaform apply: 130 for SIGINT, 143 for SIGTERM.
		out.code = 130
		var se *cli.SignalError
		if errors.As(context.Cause(m.ctx()), &se) {
			out.code = se.ExitCode()
		}
		fmt.Fprintf(&stderr, "rdmaform: interrupted: %d applied, %d not applied; run plan to see what is left\n", len(res.Report.Outcome.Applied), len(res.Report.Outcome.Failed)+len(res.Report.Outcome.Skipped))
	case len(res.Report.Errors) > 0:
		out.code = plan.ExitError
		fmt.Fprintf(&stderr, "rdmaform: apply failed:\n%s\n", strings.Join(res.Report.Errors, "\n"))
	default:
		out.code = res.ExitCode()
		if res.Report.Ran && res.RebootRequired() {
			fmt.Fprintln(&stdout, "Reboot required to finish.")
		}
	}
	out.stdout, out.stderr = stdout.String(), stderr.String()
	return out
}

// hint names a follow-up rdmaform command in messages, with the host's
// flags.
func (m *module) hint(args ...string) string {
	return session.DefaultHint(append(m.hostArgs(), args...)...)
}

// facts runs rdmaform facts and returns the document it made as the
// fact rdmaform; it changes nothing, in check mode or not.
//
// Equivalent to: rdmaform [--sim DIR|--root DIR] facts
func (m *module) facts() Result {
	var stdout, stderr bytes.Buffer
	code, r := cli.RunResults(append(m.hostArgs(), "facts"), cli.Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Environ: m.env.Environ, Ctx: m.env.Ctx})
	if code != plan.ExitOK || r == nil || r.Facts == nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = fmt.Sprintf("rdmaform facts exited %d", code)
		}
		return failed(code, msg)
	}
	n := len(r.Facts.Devices)
	return Result{
		Msg: fmt.Sprintf("%d RDMA %s", n, words.Plural(n, "device", "devices")), Pending: []plan.Pending{}, Deferred: []plan.Deferred{},
		AnsibleFacts: map[string]any{"rdmaform": r.Facts}, StderrLines: lines(stderr.String()),
	}
}

// activate makes what the spec staged current by a firmware reset, as
// one task per host: rdmaform activate --by fw-reset resets each card with
// staged values, waits for it to register again, applies the spec's
// runtime part again and exits 0 only when every staged value is current
// and the plan is empty. A host with nothing staged is not touched
// (changed false), nor is any host in check mode, which reports what is
// staged.
//
// Equivalent to: rdmaform plan -f SPEC, then rdmaform activate --by
// fw-reset -f SPEC -q [--wait D]
func (m *module) activate() Result {
	fsys, err := m.hostFS()
	if err != nil {
		return failed(plan.ExitError, err.Error())
	}
	if !m.args.CheckMode {
		// A detached activation whose task lost its connection: its
		// outcome, once.
		if res, err := m.pendingActivation(fsys); err != nil {
			return failed(plan.ExitError, err.Error())
		} else if res != nil {
			return *res
		}
	}
	p, code, err := m.plan()
	if err != nil {
		return failed(code, err.Error())
	}
	res := Result{RC: code, Plan: p, Pending: p.Pending, Deferred: p.Deferred, RebootRequired: rebootRequired(p)}
	if len(p.Pending) == 0 && len(p.Errors) == 0 {
		res.Msg = "nothing staged: nothing to activate"
		return res
	}
	if m.args.CheckMode {
		res.Changed = len(p.Pending) > 0
		res.Msg = fmt.Sprintf("would activate %d staged %s by a firmware reset", len(p.Pending), words.Plural(len(p.Pending), "value", "values"))
		return res
	}
	// What activate says on failure: its refusal, the card that did not
	// come back, the value that did not take (outcome).
	return m.activateDetached(fsys, len(p.Pending))
}

func (m *module) run() Result {
	p, code, err := m.plan()
	if err != nil {
		return failed(code, err.Error())
	}
	res := Result{RC: code, Plan: p, Pending: p.Pending, Deferred: p.Deferred, RebootRequired: rebootRequired(p)}
	if m.args.Diff {
		res.Diff = Diff(p)
	}
	if len(p.Errors) > 0 {
		res.Failed = true
		res.Msg = findings(p)
		return res
	}
	fw := firmwareChanges(p)
	applying := m.args.State == Applied
	if applying && len(fw) > 0 && !m.args.AllowFirmware {
		res.Failed, res.RC = true, plan.ExitError
		res.Msg = "refusing to stage firmware changes without allow_firmware: true (they take effect at the next boot): " + strings.Join(fw, "; ")
		return res
	}
	// Check mode and state planned report what apply would do.
	if !applying || m.args.CheckMode || p.Empty() {
		res.Changed = !p.Empty()
		res.Msg = plan.SummaryLine(p)
		return res
	}
	if m.args.ConfirmTimeout > 0 {
		return m.applyInBackground(p, res)
	}

	out := m.apply()
	res.RC = out.code
	res.StdoutLines, res.StderrLines = lines(out.stdout), lines(out.stderr)
	// The plan apply made after its changes (apply.Converge's report);
	// planned again here only when apply stopped before it had one.
	var after *plan.Plan
	var perr error
	if out.res != nil && out.res.Report.After != nil {
		after = out.res.Report.After
	} else {
		after, _, perr = m.plan()
	}
	if perr != nil {
		res.Failed = true
		res.Changed = true // apply ran; what it did cannot be told
		res.Msg = joinNonEmpty(strings.TrimSpace(out.stderr), "planning after apply: "+perr.Error())
		return res
	}
	res.Pending, res.Deferred, res.RebootRequired = after.Pending, after.Deferred, rebootRequired(after)
	switch out.code {
	case plan.ExitOK, plan.ExitReboot:
		res.Changed = true
		res.Msg = fmt.Sprintf("applied %d %s", len(p.Changes), words.Plural(len(p.Changes), "change", "changes"))
		if res.RebootRequired {
			res.Msg += "; reboot required to finish"
		}
	default:
		res.Failed = true
		res.Changed = !reflect.DeepEqual(comparable(p), comparable(after))
		res.Msg = strings.TrimSpace(out.stderr)
	}
	return res
}

// rebootRequired is exit code 3's condition: firmware staged or to be
// staged, or part of the spec waiting for a reboot.
func rebootRequired(p *plan.Plan) bool {
	return p.Summary.RebootRequired || len(p.Pending) > 0 || len(p.Deferred) > 0
}

// firmwareChanges lists the changes that take effect at the next boot
// (firmware parameters), one "address: NAME before -> after" each.
func firmwareChanges(p *plan.Plan) []string {
	var out []string
	for _, c := range p.Changes {
		if c.Activation != plan.NextBoot {
			continue
		}
		var attrs []string
		for _, a := range c.Attributes {
			v := plan.TextValues(a.Before, a.After)
			attrs = append(attrs, fmt.Sprintf("%s %s -> %s", a.Name, v[0], v[1]))
		}
		out = append(out, fmt.Sprintf("%s: %s", c.Address, strings.Join(attrs, ", ")))
	}
	return out
}

func findings(p *plan.Plan) string {
	ls := make([]string, len(p.Errors))
	for i, f := range p.Errors {
		ls[i] = f.String()
	}
	return strings.Join(ls, "\n")
}

// comparable is what tells whether a failed apply changed anything: the
// plan's changes and pending items.
func comparable(p *plan.Plan) any {
	return struct {
		C []*plan.Change
		P []plan.Pending
	}{p.Changes, p.Pending}
}

func lines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func joinNonEmpty(parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, "\n")
}
