package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmaform/rdmaform/api/v1alpha1"
	"github.com/rdmaform/rdmaform/probe"
	"github.com/rdmaform/rdmaform/schema"
)

// The gates (policy.gates): after an activation took (the plan is empty,
// nothing pending) and before the node goes back into service, the
// agent runs the hostSpec's probes the policy names, with rdmaform's own
// probe runner (rdmaform probe: perftest for the bandwidth and latency
// kinds, their floors and ceilings, the transport checks). The node
// returns only when every one passed; a probe that failed or could not
// run keeps it out (cordoned, or its NodeMaintenance kept) and marks its
// slot failed, which the rollout's stop rules count, with the figures in
// the state's gates. The agent runs them again at each reconcile and
// returns the node once they pass (the node's activation took: only the
// measurement stands between it and its work). This is the Ansible
// rollout role's bandwidth gate (rdmaform_rollout_bandwidth), in the
// agent.

// gateProbes are the hostSpec's probes the policy's gates name, in the
// policy's order, or why the policy cannot be used.
func gateProbes(cfg *v1alpha1.RDMAHostConfig, spec *schema.Spec) ([]schema.Probe, error) {
	g := cfg.Spec.Policy.Gates
	if g == nil {
		return nil, nil
	}
	if len(g.Probes) == 0 {
		return nil, errors.New("policy.gates.probes: name at least one of the hostSpec's probes")
	}
	var out []schema.Probe
	for i, name := range g.Probes {
		if slices.Contains(g.Probes[:i], name) {
			return nil, fmt.Errorf("policy.gates.probes: %q twice", name)
		}
		j := slices.IndexFunc(spec.Probes, func(p schema.Probe) bool { return p.Name == name })
		if j < 0 {
			var have []string
			for _, p := range spec.Probes {
				have = append(have, p.Name)
			}
			return nil, fmt.Errorf("policy.gates.probes: the hostSpec has no probe %q (its probes: %s)", name, orNoneList(have))
		}
		out = append(out, spec.Probes[j])
	}
	return out, nil
}

func orNoneList(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// runGates runs the gate probes on the host and records them in the
// state; failed says what kept the node out ("" when all passed).
func (r *Reconciler) runGates(ctx context.Context, st *v1alpha1.RDMAHostState, ps []schema.Probe, spec *schema.Spec) (failed string, err error) {
	h, err := r.open()
	if err != nil {
		return "", err
	}
	only := *spec
	only.Probes = ps
	res, runErr := probe.Run(ctx, h, &only)
	if len(res) != len(ps) {
		// The probes did not run at all (the host could not be read).
		if runErr == nil {
			runErr = fmt.Errorf("%d results for %d probes", len(res), len(ps))
		}
		return "the gate probes could not run: " + runErr.Error(), nil
	}
	now := metav1.NewTime(r.opts.Now())
	st.Status.Gates = nil
	var bad []string
	for _, p := range res {
		g := v1alpha1.GateResult{Name: p.Name, Kind: p.Kind, Target: p.Target, Outcome: string(p.Outcome), Reason: p.Reason, Time: now}
		if pf := p.Perf; pf != nil {
			g.BandwidthGbps, g.FloorGbps = decimal(pf.BandwidthGbps), decimal(pf.FloorGbps)
			g.LatencyUs, g.CeilingUs = decimal(pf.LatencyUs), decimal(pf.CeilingUs)
		}
		if len(g.Reason) > 1000 {
			g.Reason = g.Reason[:1000] + "..."
		}
		st.Status.Gates = append(st.Status.Gates, g)
		if !p.Passed {
			bad = append(bad, fmt.Sprintf("probe %s (%s to %s) %s: %s", p.Name, p.Kind, p.Target, p.Outcome, p.Reason))
		}
	}
	if len(bad) == 0 {
		return "", nil
	}
	return "the gate failed: " + strings.Join(bad, "; "), nil
}

// decimal writes a figure as a decimal string, "" for none.
func decimal(v float64) string {
	if v == 0 {
		return ""
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// leave returns a node whose activation took to service: the gates, then
// the uncordon (or the NodeMaintenance's release: the operator
// uncordons), then the slot. done is false while the node stays out: a
// gate failed (its slot marked failed, the conditions say why), or the
// operator has not let the NodeMaintenance go yet (the slot is kept
// until it has, so that no more nodes than the slots are out at once).
func (r *Reconciler) leave(ctx context.Context, st *v1alpha1.RDMAHostState, cfg *v1alpha1.RDMAHostConfig, spec *schema.Spec, held *coordinationv1.Lease) (bool, error) {
	gen := cfg.Generation
	ps, err := gateProbes(cfg, spec)
	if err != nil {
		return false, r.fail(ctx, st, gen, held, err.Error())
	}
	if len(ps) > 0 {
		why, err := r.runGates(ctx, st, ps, spec)
		if err != nil {
			return false, err
		}
		if why != "" {
			if err := r.fail(ctx, st, gen, held, why); err != nil {
				return false, err
			}
			// The values took: only the measurement keeps the node out,
			// and it is taken again at each reconcile.
			msg := fmt.Sprintf("%s\nThe node stays out of service and keeps activation slot %s/%s, marked failed (the stop rules count it); the agent measures again at each reconcile and returns the node once the probes pass",
				why, held.Namespace, held.Name)
			if st.Status.Maintenance != "" {
				msg += maintenanceKept(st.Status.Maintenance)
			}
			cond(st, gen, v1alpha1.ConditionActivationFailed, true, "ActivationFailed", msg)
			cond(st, gen, v1alpha1.ConditionActivationRequired, false, "GateFailed", "the staged values are current; "+why)
			return false, nil
		}
	}
	if usesOperator(cfg) || st.Status.Maintenance != "" {
		gone, err := r.releaseMaintenance(ctx, st)
		if err != nil {
			return false, err
		}
		if !gone {
			msg := fmt.Sprintf("the staged values are current; waiting for the maintenance operator to release NodeMaintenance %s before slot %s is released", st.Status.Maintenance, held.Name)
			cond(st, gen, v1alpha1.ConditionActivationRequired, false, "ReleasingMaintenance", msg)
			cond(st, gen, v1alpha1.ConditionActivationFailed, false, "NoFailure", "")
			return false, nil
		}
	}
	return true, r.finish(ctx, held)
}
