package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/rdmaform/rdmaform/api/v1alpha1"
	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/audit"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers"
	"github.com/rdmaform/rdmaform/schema"
	"github.com/rdmaform/rdmaform/session"
)

// The agent runs rdmaform's own plan, apply, activate and audit in
// process through the session package (the same lock, refusal while an
// apply waits for its confirmation, verification by planning again as
// rdmaform apply and activate), never a second flow.

// target is the host the agent works on, from its HostArgs (--sim DIR,
// --root DIR or none).
func (r *Reconciler) target() (session.Target, error) {
	var t session.Target
	args := r.opts.HostArgs
	for i := 0; i < len(args); i += 2 {
		if i+1 == len(args) {
			return t, fmt.Errorf("host flags %q: %s wants a directory", args, args[i])
		}
		switch args[i] {
		case "--sim":
			t.Sim = args[i+1]
		case "--root":
			t.Root = args[i+1]
		default:
			return t, fmt.Errorf("host flags %q: only --sim DIR and --root DIR", args)
		}
	}
	return t, nil
}

// open opens the agent's host.
func (r *Reconciler) open() (*host.Host, error) {
	t, err := r.target()
	if err != nil {
		return nil, err
	}
	h, _, err := session.Open(t, r.opts.Environ)
	return h, err
}

// plan plans the spec on the host; the error is the condition's message.
func (r *Reconciler) plan(ctx context.Context, spec *schema.Spec) (*plan.Plan, error) {
	h, err := r.open()
	if err != nil {
		return nil, err
	}
	res, err := session.Plan(ctx, h, spec, nil)
	if err != nil {
		return nil, err
	}
	return res.Plan, nil
}

// applied is what an apply did: its exit code (rdmaform apply's), the
// report (nil when it stopped before a plan) and, when it failed, what
// it said.
type applied struct {
	code   int
	report *apply.Report
	msg    string
}

// apply applies the spec as rdmaform apply --yes does.
func (r *Reconciler) apply(ctx context.Context, spec *schema.Spec) applied {
	h, err := r.open()
	if err != nil {
		return applied{code: plan.ExitError, msg: err.Error()}
	}
	var progress bytes.Buffer
	res, err := session.Apply(ctx, h, session.ApplyOptions{
		Spec: spec, LockTimeout: session.DefaultLockTimeout, LockOwner: "rdmaform-agent apply",
		Guard: apply.GuardOptions{Environ: r.opts.Environ}, Progress: &progress,
	})
	var a applied
	if res != nil {
		a.report = res.Report
	}
	switch {
	case err != nil:
		a.code = plan.ExitError
		a.msg = message(progress.String(), err.Error())
	default:
		a.code = res.ExitCode()
		if a.code == plan.ExitError {
			a.msg = message(progress.String(), strings.Join(res.Report.Errors, "\n"))
		}
	}
	return a
}

// auditMetrics is rdmaform audit -o prometheus of the spec on the host;
// nil when the audit could not run.
func (r *Reconciler) auditMetrics(ctx context.Context, spec *schema.Spec) []byte {
	h, err := r.open()
	if err != nil {
		return nil
	}
	now, err := session.Now(r.opts.Environ)
	if err != nil {
		return nil
	}
	rep, err := audit.Run(ctx, h, spec, providers.All(), audit.Options{Now: now, GPUPath: &providers.GPUPath{}})
	if err != nil {
		return nil
	}
	var b bytes.Buffer
	if err := audit.Render(&b, rep, "prometheus"); err != nil {
		return nil
	}
	return b.Bytes()
}

// message is what a failed apply said, for a condition: its progress
// lines and its errors (the last ones when long).
func message(parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			keep = append(keep, p)
		}
	}
	lines := strings.Split(strings.Join(keep, "\n"), "\n")
	if len(lines) > 12 {
		lines = append([]string{"..."}, lines[len(lines)-12:]...)
	}
	return strings.Join(lines, "\n")
}

// activated is what an activation did: its exit code (rdmaform
// activate's) and, when it was not 0, what it said.
type activated struct {
	code int
	msg  string
}

// activate activates what is staged by way, as rdmaform activate -f SPEC
// --by WAY --yes does (session.Activate): its text and warnings are the
// message of a failure.
func (r *Reconciler) activate(ctx context.Context, spec *schema.Spec, way string) activated {
	h, err := r.open()
	if err != nil {
		return activated{code: plan.ExitError, msg: err.Error()}
	}
	var out, warn bytes.Buffer
	res, err := session.Activate(ctx, h, session.ActivateOptions{
		Spec: spec, By: way, Yes: true, Wait: DefaultActivateWait,
		LockTimeout: session.DefaultLockTimeout, Out: &out, Warn: &warn, Info: &warn, Environ: r.opts.Environ,
	})
	a := activated{}
	switch {
	case err != nil:
		a.code = plan.ExitError
		var ee *session.ExitError
		if errors.As(err, &ee) {
			a.code = ee.Code
		}
		a.msg = message(out.String(), warn.String(), "rdmaform: "+err.Error())
	default:
		a.code = res.Code
		if a.code != plan.ExitOK {
			a.msg = message(out.String(), warn.String())
		}
	}
	if a.code != plan.ExitOK && a.msg == "" {
		a.msg = fmt.Sprintf("rdmaform activate exited %d", a.code)
	}
	return a
}

// DefaultActivateWait is how long a reset card may take to register
// again (rdmaform activate --wait's default).
const DefaultActivateWait = 2 * time.Minute

// specSource names a config's hostSpec in findings, as a file would be
// named: rdmahostconfig/NAME/spec.hostSpec:LINE:COL: error: $.PATH: ...
func specSource(config string) string { return "rdmahostconfig/" + config + "/spec.hostSpec" }

// specYAML renders a hostSpec (JSON, as the API server stores it) as a
// YAML document in block style, keys in the order the API server gave
// them, and checks it with the CLI's own loader and validation
// (schema.Parse), which also gives the spec to plan, apply and audit: a
// spec error comes back as the findings, each with its
// line:col in this document and its path ($.devices[0].ports[0].mtu).
func specYAML(cfg *v1alpha1.RDMAHostConfig) ([]byte, *schema.Spec, schema.Report, error) {
	if len(cfg.Spec.HostSpec.Raw) == 0 {
		return nil, nil, nil, fmt.Errorf("%s: no hostSpec", specSource(cfg.Name))
	}
	var n yaml.Node
	if err := yaml.Unmarshal(cfg.Spec.HostSpec.Raw, &n); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", specSource(cfg.Name), err)
	}
	block(&n)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", specSource(cfg.Name), err)
	}
	if err := enc.Close(); err != nil {
		return nil, nil, nil, err
	}
	spec, rep := schema.Parse(specSource(cfg.Name), b.Bytes())
	if len(rep) > 0 {
		return b.Bytes(), nil, rep, nil
	}
	return b.Bytes(), spec, nil, nil
}

// block makes every node of a document parsed from JSON block style.
func block(n *yaml.Node) {
	n.Style &^= yaml.FlowStyle
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" && n.Style == yaml.DoubleQuotedStyle {
		// Keep strings quoted where YAML would read them as something
		// else ("0x8001", "yes"); quoting every one is harmless.
		return
	}
	for _, c := range n.Content {
		block(c)
	}
}
