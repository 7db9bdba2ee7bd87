// Package agent is rdmaform-agent: rdmaform on a Kubernetes node. It finds
// the RDMAHostConfig whose nodeSelector selects its Node, plans the
// config's hostSpec against the host with rdmaform's own code (plan,
// apply, activate and audit, run in process through the session package:
// the same lock and verification as the CLI), writes the node's
// RDMAHostState, applies in apply mode, and activates staged firmware one
// slot at a time (slots.go). It plans again when a config changes, when
// its Node's labels change, when a slot is freed, and every interval.
package agent

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rdmaform/rdmaform/api/v1alpha1"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Options configure an agent.
type Options struct {
	// NodeName is the Node the agent runs on (its RDMAHostState's name).
	NodeName string
	// Namespace holds the activation slots' Leases.
	Namespace string
	// HostArgs are rdmaform's host flags: --sim DIR, --root DIR or none.
	HostArgs []string
	// Environ is the environment rdmaform runs with.
	Environ []string
	// Interval is the time between two plans when nothing changes, unless
	// a config's policy.interval says otherwise (default 5m).
	Interval time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Metrics receives the audit and the counters (may be nil).
	Metrics *Metrics
}

// DefaultInterval is the drift check's interval when none is given.
const DefaultInterval = 5 * time.Minute

// Reconciler is one node's agent. It reads and writes through c, a client
// that goes to the API server (no cache: slots need the latest version).
type Reconciler struct {
	c     client.Client
	opts  Options
	slots *Slots
	mu    sync.Mutex
	// rebootingUntil: the agent started a reboot of its node and waits
	// for it (activation.go).
	rebootingUntil time.Time
	// wakeAt: the rollout's bake ends then; plan again at that time
	// rather than after the interval (activation.go).
	wakeAt time.Time
	// seen: the state's status as the API server has it (quiet.go).
	seen *seenState
	// release: the slot finish gave up, released after the state is
	// written (activation.go).
	release *coordinationv1.Lease
	// slotEvents: which slot events wake the agent (slotwatch.go);
	// waitsOn the slot label (configLabel) of the config this reconcile
	// leaves the node waiting on.
	slotEvents slotWatch
	waitsOn    string
}

// NewReconciler makes a node's agent on a client.
func NewReconciler(c client.Client, o Options) *Reconciler {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	return &Reconciler{c: c, opts: o, slots: &Slots{C: c, Namespace: o.Namespace, Holder: o.NodeName, Now: o.Now}}
}

// Reconcile plans (and applies, activates) the node; whatever the event,
// the node is planned whole.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wakeAt = time.Time{}
	r.release = nil
	mark := r.slotEvents.mark()
	r.waitsOn = ""
	interval, err := r.reconcile(ctx)
	r.opts.Metrics.reconciled(err, r.opts.Now())
	if err != nil {
		// Retried with a backoff; meanwhile every slot event of its
		// config still wakes it.
		r.slotEvents.set(r.waitsOn, mark)
		return reconcile.Result{}, err
	}
	if r.slotEvents.set(r.waitsOn, mark) {
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	if !r.wakeAt.IsZero() {
		if d := r.wakeAt.Sub(r.opts.Now()) + time.Second; d < interval {
			interval = max(d, time.Second)
		}
	}
	return reconcile.Result{RequeueAfter: interval}, nil
}

// cond sets one condition of st.
func cond(st *v1alpha1.RDMAHostState, gen int64, typ string, on bool, reason, msg string) {
	s := metav1.ConditionFalse
	if on {
		s = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&st.Status.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen})
}

// selecting returns the configs whose nodeSelector selects the node.
func (r *Reconciler) selecting(ctx context.Context, node *corev1.Node) ([]v1alpha1.RDMAHostConfig, error) {
	var l v1alpha1.RDMAHostConfigList
	if err := r.c.List(ctx, &l); err != nil {
		return nil, err
	}
	var out []v1alpha1.RDMAHostConfig
	for _, c := range l.Items {
		sel, err := metav1.LabelSelectorAsSelector(&c.Spec.NodeSelector)
		if err != nil || sel.Empty() {
			// A selector that selects nothing or everything by mistake
			// selects nothing: an empty one would take the whole cluster.
			continue
		}
		if sel.Matches(labels.Set(node.Labels)) {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// selected counts the nodes a config selects (for a percentage).
func (r *Reconciler) selected(ctx context.Context, cfg *v1alpha1.RDMAHostConfig) (int, error) {
	sel, err := metav1.LabelSelectorAsSelector(&cfg.Spec.NodeSelector)
	if err != nil {
		return 0, err
	}
	var nodes corev1.NodeList
	if err := r.c.List(ctx, &nodes, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return 0, err
	}
	return len(nodes.Items), nil
}

// state is the node's RDMAHostState, or a new one (not yet created).
func (r *Reconciler) state(ctx context.Context) (*v1alpha1.RDMAHostState, bool, error) {
	var st v1alpha1.RDMAHostState
	err := r.c.Get(ctx, client.ObjectKey{Name: r.opts.NodeName}, &st)
	if apierrors.IsNotFound(err) {
		return &v1alpha1.RDMAHostState{ObjectMeta: metav1.ObjectMeta{Name: r.opts.NodeName}}, false, nil
	}
	if err == nil {
		r.remember(&st)
	}
	return &st, err == nil, err
}

// write creates or updates the node's state with st's status.
func (r *Reconciler) write(ctx context.Context, st *v1alpha1.RDMAHostState) error {
	if r.unchanged(st) {
		return nil
	}
	if st.ResourceVersion == "" {
		if err := r.c.Create(ctx, st); err != nil {
			return fmt.Errorf("creating RDMAHostState %s: %w", st.Name, err)
		}
	} else if err := r.c.Update(ctx, st); err != nil {
		return fmt.Errorf("updating RDMAHostState %s: %w", st.Name, err)
	}
	r.remember(st)
	return nil
}

func (r *Reconciler) reconcile(ctx context.Context) (time.Duration, error) {
	interval := r.opts.Interval
	var node corev1.Node
	if err := r.c.Get(ctx, client.ObjectKey{Name: r.opts.NodeName}, &node); err != nil {
		return 0, fmt.Errorf("node %s: %w", r.opts.NodeName, err)
	}
	cfgs, err := r.selecting(ctx, &node)
	if err != nil {
		return 0, err
	}
	st, exists, err := r.state(ctx)
	if err != nil {
		return 0, err
	}
	switch len(cfgs) {
	case 0:
		// No config: the node is not rdmaform's; a state left from an
		// earlier config says so, and none is made.
		if !exists {
			return interval, nil
		}
		st.Status = v1alpha1.RDMAHostStateStatus{}
		cond(st, 0, v1alpha1.ConditionInSync, false, "NoConfig", "no RDMAHostConfig selects this node")
		return interval, r.write(ctx, st)
	case 1:
	default:
		names := make([]string, len(cfgs))
		for i, c := range cfgs {
			names[i] = c.Name
		}
		msg := fmt.Sprintf("RDMAHostConfigs %s all select this node: nothing is planned or applied until exactly one does", strings.Join(names, ", "))
		st.Status.Config = ""
		st.Status.Plan = v1alpha1.PlanSummary{}
		st.Status.Pending, st.Status.Drift = nil, nil
		cond(st, 0, v1alpha1.ConditionConfigConflict, true, "ConfigConflict", msg)
		cond(st, 0, v1alpha1.ConditionInSync, false, "ConfigConflict", msg)
		cond(st, 0, v1alpha1.ConditionProgressing, false, "ConfigConflict", msg)
		return interval, r.write(ctx, st)
	}
	cfg := &cfgs[0]
	if cfg.Spec.Policy.Interval != nil && cfg.Spec.Policy.Interval.Duration > 0 {
		interval = cfg.Spec.Policy.Interval.Duration
	}
	gen := cfg.Generation
	st.Status.Config = cfg.Name
	cond(st, gen, v1alpha1.ConditionConfigConflict, false, "OneConfig", "selected by "+cfg.Name)

	_, spec, rep, err := specYAML(cfg)
	if err == nil && len(rep) > 0 {
		err = rep
	}
	if err != nil {
		msg := "the hostSpec is refused:\n" + err.Error()
		st.Status.Plan = v1alpha1.PlanSummary{}
		st.Status.Pending, st.Status.Drift = nil, nil
		cond(st, gen, v1alpha1.ConditionDegraded, true, "SpecError", msg)
		cond(st, gen, v1alpha1.ConditionInSync, false, "SpecError", msg)
		cond(st, gen, v1alpha1.ConditionProgressing, false, "SpecError", msg)
		return interval, r.write(ctx, st)
	}
	if stop, again, err := r.toolCheck(ctx, st, gen, spec, cfg.Spec.Policy, interval); stop {
		return again, err
	}

	p, err := r.plan(ctx, spec)
	if err != nil {
		return interval, r.degraded(ctx, st, gen, "PlanFailed", err.Error())
	}
	if cfg.Spec.Policy.Mode == v1alpha1.ModeApply && len(p.Errors) == 0 && len(p.Changes) > 0 {
		cond(st, gen, v1alpha1.ConditionProgressing, true, "Applying", fmt.Sprintf("applying %d changes", len(p.Changes)))
		fill(st, p, r.opts.Now())
		if err := r.write(ctx, st); err != nil {
			return 0, err
		}
		a := r.apply(ctx, spec)
		res := &v1alpha1.ApplyResult{Action: "apply", Time: metav1.NewTime(r.opts.Now()), ExitCode: a.code}
		if a.report != nil && a.report.Ran {
			res.Applied = len(a.report.Before.Changes)
		}
		if a.code == plan.ExitError {
			res.Message = a.msg
		}
		st.Status.LastApply = res
		if a.code == plan.ExitError {
			return interval, r.degraded(ctx, st, gen, "ApplyFailed", res.Message)
		}
		if a.report != nil && a.report.After != nil {
			p = a.report.After
		} else if again, err := r.plan(ctx, spec); err == nil {
			p = again
		}
	}
	if len(p.Errors) > 0 {
		var msgs []string
		for _, f := range p.Errors {
			msgs = append(msgs, f.String())
		}
		fill(st, p, r.opts.Now())
		return interval, r.degraded(ctx, st, gen, "PlanErrors", strings.Join(msgs, "\n"))
	}
	cond(st, gen, v1alpha1.ConditionDegraded, false, "Planned", "")
	// Until the activation says otherwise, a node with staged values
	// waits on its config's slots (slotwatch.go).
	r.waitsOn = configLabel(cfg.Name)
	p, err = r.activation(ctx, st, cfg, spec, p)
	if err != nil {
		return 0, err
	}
	if len(p.Pending) == 0 && len(p.Deferred) == 0 && !meta.IsStatusConditionTrue(st.Status.Conditions, v1alpha1.ConditionActivationFailed) {
		r.waitsOn = ""
	}
	fill(st, p, r.opts.Now())
	switch {
	case len(p.Changes) > 0:
		cond(st, gen, v1alpha1.ConditionInSync, false, "Drift", fmt.Sprintf("%d changes to make (mode %s)", len(p.Changes), modeOf(cfg)))
	case len(p.Pending) > 0 || len(p.Deferred) > 0:
		cond(st, gen, v1alpha1.ConditionInSync, false, "ActivationRequired", fmt.Sprintf("%d staged values wait for activation", len(p.Pending)))
	case meta.IsStatusConditionTrue(st.Status.Conditions, v1alpha1.ConditionActivationFailed):
		// The values took, but a gate keeps the node out (gate.go).
		cond(st, gen, v1alpha1.ConditionInSync, false, "GateFailed", "the plan is empty, but a gate probe keeps the node out of service (ActivationFailed says which)")
	default:
		cond(st, gen, v1alpha1.ConditionInSync, true, "InSync", "the host matches the spec: the plan is empty, nothing pending")
	}
	if !meta.IsStatusConditionTrue(st.Status.Conditions, v1alpha1.ConditionActivationFailed) {
		cond(st, gen, v1alpha1.ConditionProgressing, false, "Idle", "")
	}
	if err := r.write(ctx, st); err != nil {
		return 0, err
	}
	if held := r.release; held != nil {
		r.release = nil
		if err := r.slots.Release(ctx, held); err != nil {
			return 0, err
		}
	}
	r.audit(ctx, spec)
	return interval, nil
}

func modeOf(cfg *v1alpha1.RDMAHostConfig) v1alpha1.Mode {
	if cfg.Spec.Policy.Mode == "" {
		return v1alpha1.ModeAudit
	}
	return cfg.Spec.Policy.Mode
}

func (r *Reconciler) degraded(ctx context.Context, st *v1alpha1.RDMAHostState, gen int64, reason, msg string) error {
	cond(st, gen, v1alpha1.ConditionDegraded, true, reason, msg)
	cond(st, gen, v1alpha1.ConditionInSync, false, reason, msg)
	cond(st, gen, v1alpha1.ConditionProgressing, false, reason, msg)
	return r.write(ctx, st)
}

// maxDrift bounds status.drift.
const maxDrift = 100

// fill writes a plan's summary, pending items and drift into the state.
func fill(st *v1alpha1.RDMAHostState, p *plan.Plan, now time.Time) {
	st.Status.Plan = v1alpha1.PlanSummary{Add: p.Summary.Add, Change: p.Summary.Change, Remove: p.Summary.Remove}
	st.Status.Pending = nil
	for _, it := range p.Pending {
		pi := v1alpha1.PendingItem{Resource: it.Address.String(), Attribute: it.Attribute, Value: it.NextBoot}
		if it.Activation != nil {
			pi.Activation = it.Activation.By
		}
		st.Status.Pending = append(st.Status.Pending, pi)
	}
	st.Status.Drift = nil
	for _, c := range p.Changes {
		if len(st.Status.Drift) == maxDrift {
			break
		}
		st.Status.Drift = append(st.Status.Drift, c.Address.String())
	}
	t := metav1.NewTime(now)
	st.Status.LastPlanTime = &t
}

// audit audits the host against the spec (rdmaform audit -o
// prometheus) for /metrics.
func (r *Reconciler) audit(ctx context.Context, spec *schema.Spec) {
	if r.opts.Metrics == nil {
		return
	}
	r.opts.Metrics.setAudit(r.auditMetrics(ctx, spec))
}
