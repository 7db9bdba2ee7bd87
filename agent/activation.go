package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmaform/rdmaform/api/v1alpha1"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// rebootWait is how long an agent that started a reboot of its own node
// waits for the reboot to stop it before planning again.
const rebootWait = 10 * time.Minute

// activation handles staged values: with nothing pending it releases a
// slot the node still holds (what was activated took); with values
// pending and an activation policy it waits for a slot, cordons the node,
// evicts its pods if asked, activates (rdmaform activate --by WAY), checks
// that it took (the plan is empty, nothing pending), uncordons and
// releases. A failure keeps the slot, marked: the line stops. It returns
// the plan that describes the host now.
func (r *Reconciler) activation(ctx context.Context, st *v1alpha1.RDMAHostState, cfg *v1alpha1.RDMAHostConfig, spec *schema.Spec, p *plan.Plan) (*plan.Plan, error) {
	gen := cfg.Generation
	held, err := r.slots.Held(ctx, cfg.Name)
	if err != nil {
		return nil, err
	}
	if len(p.Pending) == 0 {
		if held != nil {
			if done, err := r.leave(ctx, st, cfg, spec, held); err != nil || !done {
				return p, err
			}
			cond(st, gen, v1alpha1.ConditionActivationRequired, false, "Activated", "the staged values are current; slot "+held.Name+" released")
		} else {
			cond(st, gen, v1alpha1.ConditionActivationRequired, false, "NothingPending", "")
		}
		cond(st, gen, v1alpha1.ConditionActivationFailed, false, "NoFailure", "")
		return p, nil
	}
	way := cfg.Spec.Policy.Activation
	if modeOf(cfg) != v1alpha1.ModeApply || way == "" || way == v1alpha1.ActivationNone {
		cond(st, gen, v1alpha1.ConditionActivationRequired, true, "ActivationNotAllowed",
			fmt.Sprintf("%d staged values wait for %s; the config's policy (mode %s, activation %s) does not activate them", len(p.Pending), ways(p), modeOf(cfg), orNone(way)))
		cond(st, gen, v1alpha1.ConditionActivationFailed, false, "NoFailure", "")
		return p, nil
	}
	if held != nil && held.Annotations[AnnotationFailed] != "" {
		msg := fmt.Sprintf("%s\nThe node keeps activation slot %s/%s and no node of %s activates until a person acts: fix the node, then delete the Lease (kubectl -n %s delete lease %s) to try again",
			held.Annotations[AnnotationFailed], held.Namespace, held.Name, cfg.Name, held.Namespace, held.Name)
		cond(st, gen, v1alpha1.ConditionActivationRequired, true, "ActivationFailed", fmt.Sprintf("%d staged values wait for %s", len(p.Pending), ways(p)))
		cond(st, gen, v1alpha1.ConditionActivationFailed, true, "ActivationFailed", msg)
		return p, nil
	}
	if held != nil && held.Annotations[AnnotationPhase] == phaseActivating {
		if r.rebootingUntil.After(r.opts.Now()) {
			return p, nil
		}
		return p, r.fail(ctx, st, gen, held, fmt.Sprintf("after the activation (%s), %d values are still pending: %s", way, len(p.Pending), pendingList(p)))
	}
	if held == nil {
		ro, err := RolloutOf(cfg.Spec.Policy)
		if err == nil {
			_, err = gateProbes(cfg, spec)
		}
		if err != nil {
			cond(st, gen, v1alpha1.ConditionActivationRequired, true, "BadPolicy", err.Error())
			return p, nil
		}
		if why, err := r.maintenanceBlocked(ctx, cfg); err != nil || why != "" {
			cond(st, gen, v1alpha1.ConditionActivationRequired, true, "WaitingForMaintenance", fmt.Sprintf("%d staged values wait for %s: %s", len(p.Pending), way, why))
			cond(st, gen, v1alpha1.ConditionActivationFailed, false, "NoFailure", "")
			return p, err
		}
		var stop *coordinationv1.Lease
		if ro == nil {
			stop, err = r.slots.Stopped(ctx, cfg.Name)
		} else {
			var ls []coordinationv1.Lease
			if ls, err = r.slots.List(ctx, cfg.Name); err == nil {
				var g gate
				if g, err = r.rolloutGate(ctx, cfg, *ro, ls); err == nil && !g.ok {
					reason := "WaitingForWave"
					if g.stopped {
						reason = "LineStopped"
						g.why = fmt.Sprintf("%d staged values wait: the rollout policy's stop rule stopped the line (%s): no node of %s activates until a person acts (fix the failed nodes, delete their Leases)", len(p.Pending), g.why, cfg.Name)
					} else {
						g.why = fmt.Sprintf("%d staged values wait for %s: %s", len(p.Pending), way, g.why)
					}
					if !g.until.IsZero() {
						r.wakeAt = g.until
					}
					cond(st, gen, v1alpha1.ConditionActivationRequired, true, reason, g.why)
					cond(st, gen, v1alpha1.ConditionActivationFailed, false, "NoFailure", "")
					return p, nil
				}
			}
		}
		if err != nil {
			return nil, err
		}
		if stop != nil {
			cond(st, gen, v1alpha1.ConditionActivationRequired, true, "LineStopped",
				fmt.Sprintf("%d staged values wait: the activation of node %s failed (Lease %s/%s): no node of %s activates until a person acts", len(p.Pending), holder(stop), stop.Namespace, stop.Name, cfg.Name))
			cond(st, gen, v1alpha1.ConditionActivationFailed, false, "NoFailure", "")
			return p, nil
		}
		total, err := r.selected(ctx, cfg)
		if err != nil {
			return nil, err
		}
		n, err := MaxUnavailable(cfg.Spec.Policy, total)
		if err != nil {
			cond(st, gen, v1alpha1.ConditionActivationRequired, true, "BadPolicy", err.Error())
			return p, nil
		}
		held, err = r.slots.Take(ctx, cfg.Name, n)
		if err != nil {
			return nil, err
		}
		if held == nil {
			cond(st, gen, v1alpha1.ConditionActivationRequired, true, "WaitingForSlot",
				fmt.Sprintf("%d staged values wait for %s and for one of %s's %d activation slots (a failed node's slot counts: it stays cordoned until a person deletes its Lease)", len(p.Pending), way, cfg.Name, n))
			cond(st, gen, v1alpha1.ConditionActivationFailed, false, "NoFailure", "")
			return p, nil
		}
		r.opts.Metrics.slotTaken()
	}
	// The node holds a slot: cordon, evict (or the maintenance operator
	// does: maintenance.go), activate, check.
	if usesOperator(cfg) {
		ok, why, err := r.maintenanceReady(ctx, cfg, st)
		if err != nil {
			return nil, err
		}
		if !ok {
			why = fmt.Sprintf("holding activation slot %s/%s: %s", held.Namespace, held.Name, why)
			cond(st, gen, v1alpha1.ConditionActivationRequired, true, "WaitingForMaintenance", why)
			cond(st, gen, v1alpha1.ConditionProgressing, true, "WaitingForMaintenance", why)
			cond(st, gen, v1alpha1.ConditionActivationFailed, false, "NoFailure", "")
			return p, nil
		}
	}
	msg := fmt.Sprintf("holding activation slot %s/%s: activating by %s", held.Namespace, held.Name, way)
	cond(st, gen, v1alpha1.ConditionActivationRequired, true, "Activating", msg)
	cond(st, gen, v1alpha1.ConditionProgressing, true, "Activating", msg)
	fill(st, p, r.opts.Now())
	if err := r.write(ctx, st); err != nil {
		return nil, err
	}
	if !usesOperator(cfg) {
		if err := r.cordon(ctx); err != nil {
			return nil, err
		}
		if cfg.Spec.Policy.Evict {
			if _, err := r.evict(ctx); err != nil {
				return nil, err
			}
		}
	}
	if err := r.slots.Annotate(ctx, held, map[string]string{AnnotationPhase: phaseActivating}); err != nil {
		return nil, err
	}
	a := r.activate(ctx, spec, string(way))
	st.Status.LastApply = &v1alpha1.ApplyResult{Action: "activate", Time: metav1.NewTime(r.opts.Now()), ExitCode: a.code}
	if a.code != plan.ExitOK {
		st.Status.LastApply.Message = a.msg
		r.opts.Metrics.activated(false)
		return p, r.fail(ctx, st, gen, held, fmt.Sprintf("rdmaform activate --by %s exited %d:\n%s", way, a.code, a.msg))
	}
	if way == v1alpha1.ActivationReboot && !slices.Contains(r.opts.HostArgs, "--sim") {
		// A real reboot stops this process; after the boot the agent
		// finds its slot "activating" and checks that it took.
		r.rebootingUntil = r.opts.Now().Add(rebootWait)
		return p, nil
	}
	// Did it take? The plan is empty and nothing is pending.
	after, err := r.plan(ctx, spec)
	if err != nil {
		r.opts.Metrics.activated(false)
		return p, r.fail(ctx, st, gen, held, "planning after the activation: "+err.Error())
	}
	if len(after.Changes) > 0 || len(after.Pending) > 0 || len(after.Errors) > 0 {
		r.opts.Metrics.activated(false)
		return after, r.fail(ctx, st, gen, held, fmt.Sprintf("after the activation (%s) the plan is not empty: %d changes, %d pending (%s), %d errors", way, len(after.Changes), len(after.Pending), pendingList(after), len(after.Errors)))
	}
	if done, err := r.leave(ctx, st, cfg, spec, held); err != nil || !done {
		return after, err
	}
	r.opts.Metrics.activated(true)
	cond(st, gen, v1alpha1.ConditionActivationRequired, false, "Activated", fmt.Sprintf("activated by %s; slot %s released", way, held.Name))
	cond(st, gen, v1alpha1.ConditionActivationFailed, false, "NoFailure", "")
	return after, nil
}

// fail marks the held slot failed (the line stops) and the state
// ActivationFailed. The node stays cordoned.
func (r *Reconciler) fail(ctx context.Context, st *v1alpha1.RDMAHostState, gen int64, held *coordinationv1.Lease, why string) error {
	if len(why) > 1000 {
		why = why[:1000] + "..."
	}
	if held.Annotations[AnnotationFailed] != why {
		if err := r.slots.Annotate(ctx, held, map[string]string{AnnotationFailed: why}); err != nil {
			return err
		}
	}
	msg := fmt.Sprintf("%s\nThe node keeps activation slot %s/%s and no node activates until a person acts: fix the node, then delete the Lease (kubectl -n %s delete lease %s) to try again",
		why, held.Namespace, held.Name, held.Namespace, held.Name)
	if st.Status.Maintenance != "" {
		if err := r.failMaintenance(ctx, why); err != nil {
			return err
		}
		msg += maintenanceKept(st.Status.Maintenance)
	}
	cond(st, gen, v1alpha1.ConditionActivationFailed, true, "ActivationFailed", msg)
	cond(st, gen, v1alpha1.ConditionActivationRequired, true, "ActivationFailed", why)
	cond(st, gen, v1alpha1.ConditionProgressing, false, "ActivationFailed", "")
	return nil
}

// finish uncordons the node if the agent cordoned it; the slot is
// released once the reconcile has written the node's state (reconcile):
// the release wakes the config's other nodes, and those of the next wave
// read this node's state then, so it must say InSync by that time (else
// they wait for their interval, 5 minutes by default).
func (r *Reconciler) finish(ctx context.Context, held *coordinationv1.Lease) error {
	if err := r.uncordon(ctx); err != nil {
		return err
	}
	r.release = held
	return nil
}

func ways(p *plan.Plan) string {
	var out []string
	for _, it := range p.Pending {
		w := "a reboot"
		if it.Activation != nil {
			w = it.Activation.By
		}
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return strings.Join(out, " or ")
}

func pendingList(p *plan.Plan) string {
	var out []string
	for _, it := range p.Pending {
		out = append(out, it.Address.String()+" "+it.Attribute)
	}
	if len(out) > 5 {
		out = append(out[:5], "...")
	}
	return strings.Join(out, ", ")
}

func orNone(a v1alpha1.Activation) v1alpha1.Activation {
	if a == "" {
		return v1alpha1.ActivationNone
	}
	return a
}
