package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rdmaform/rdmaform/api/v1alpha1"
	"github.com/rdmaform/rdmaform/fleet"
)

// The rollout policy in the agent: the config's policy.rollout is the
// policy file's document (the same keys), read by fleet.ReadPolicy, the
// code `rdmaform waves --policy` and the rollout role use; the selected
// Nodes are the inventory, their labels the inventory's host variables.
// So the agent cuts the same waves as rdmaform waves and the role for
// the same hosts and policy.
const (
	// LabelDomain is a node's failure domain (rdmaform_domain).
	LabelDomain = "rdmaform.io/domain"
	// LabelFabric tells the subnet manager nodes of fabrics apart
	// (rdmaform_fabric).
	LabelFabric = "rdmaform.io/fabric"
	// LabelRoles is a node's roles, separated by dots ("sm": it runs a
	// subnet manager; rdmaform_roles).
	LabelRoles = "rdmaform.io/roles"
	// LabelCompartment is a node's compartment, one of the policy's
	// compartments.groups (an inventory group in Ansible).
	LabelCompartment = "rdmaform.io/compartment"
)

// RolloutOf is a config's rollout policy: its policy.rollout and
// policy.maxUnavailable as a policy document, read by fleet.ReadPolicy;
// nil when the config has no rollout policy.
func RolloutOf(p v1alpha1.Policy) (*fleet.Rollout, error) {
	if p.Rollout == nil {
		return nil, nil
	}
	doc := map[string]any{}
	b, err := json.Marshal(p.Rollout)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if p.MaxUnavailable != nil {
		doc["max_unavailable"] = p.MaxUnavailable.String()
	} else {
		doc["max_unavailable"] = "1" // the agent's default
	}
	if d, ok := doc["bake"].(string); ok {
		// metav1.Duration writes 10m as "10m0s": the same duration.
		doc["bake"] = d
	}
	b, err = json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	r, err := fleet.ReadPolicy("spec.policy.rollout", b)
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// Inventory is the nodes as an rdmaform inventory: a host per node, in
// name order, with its domain, fabric, roles and compartment from its
// labels; every node is pending (the agent cuts the waves of every
// selected node, so that the waves do not move as nodes finish).
func Inventory(nodes []corev1.Node) *fleet.Inventory {
	inv := &fleet.Inventory{Format: fleet.Own}
	for _, n := range nodes {
		h := fleet.Host{Name: n.Name, Domain: n.Labels[LabelDomain], Fabric: n.Labels[LabelFabric], Pending: fleet.PendingYes}
		if r := n.Labels[LabelRoles]; r != "" {
			h.Roles = strings.Split(r, ".")
		}
		if c := n.Labels[LabelCompartment]; c != "" {
			h.Groups = []string{c}
		}
		inv.Hosts = append(inv.Hosts, h)
	}
	sort.Slice(inv.Hosts, func(i, j int) bool { return fleet.NameLess(inv.Hosts[i].Name, inv.Hosts[j].Name) })
	return inv
}

// Waves are the nodes' waves under the policy: each wave's node names.
func Waves(nodes []corev1.Node, r fleet.Rollout) ([][]string, error) {
	rolled, err := fleet.PlanRollout(Inventory(nodes), r)
	if err != nil {
		return nil, err
	}
	out := make([][]string, len(rolled.Waves.Waves))
	for i, w := range rolled.Waves.Waves {
		out[i] = w.Hosts
	}
	return out, nil
}

// gate is what the rollout policy says about this node taking a slot
// now: go (ok), or wait (why), or wait until a time (the bake).
type gate struct {
	ok    bool
	why   string
	until time.Time
	// stopped: a stop rule stopped the line (why says which).
	stopped bool
}

// rolloutGate applies the config's rollout policy to this node: the
// stop rules over the config's failed slots, then its wave: every node
// of the waves before it must be done (in sync for this generation,
// holding no slot) or failed (its slot marked), and the bake after the
// wave before it must have passed.
func (r *Reconciler) rolloutGate(ctx context.Context, cfg *v1alpha1.RDMAHostConfig, ro fleet.Rollout, slots []coordinationv1.Lease) (gate, error) {
	sel, err := metav1.LabelSelectorAsSelector(&cfg.Spec.NodeSelector)
	if err != nil {
		return gate{}, err
	}
	var nodes corev1.NodeList
	if err := r.c.List(ctx, &nodes, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return gate{}, err
	}
	waves, err := Waves(nodes.Items, ro)
	if err != nil {
		return gate{why: "the rollout policy: " + err.Error()}, nil
	}
	failed, holding := map[string]bool{}, map[string]bool{}
	for i := range slots {
		h := holder(&slots[i])
		if h == "" {
			continue
		}
		holding[h] = true
		if slots[i].Annotations[AnnotationFailed] != "" {
			failed[h] = true
		}
	}
	mine := -1
	for i, w := range waves {
		for _, h := range w {
			if h == r.opts.NodeName {
				mine = i
			}
		}
	}
	if mine < 0 {
		return gate{why: "this node is in none of the rollout's waves"}, nil
	}
	// The stop rules: failed in all, counted at the last wave with a
	// failed node (where the count reached it), and more than the
	// percentage of any one wave.
	if total := len(failed); total > 0 {
		counts, last := make([]int, len(waves)), 0
		for i, w := range waves {
			for _, h := range w {
				if failed[h] {
					counts[i]++
					last = i
				}
			}
		}
		if stop, why := ro.Stop.StopAfter(total, counts[last], len(waves[last])); stop {
			return gate{stopped: true, why: fmt.Sprintf("wave %d: %s", last+1, why)}, nil
		}
		for i, w := range waves {
			if stop, why := ro.Stop.StopAfter(0, counts[i], len(w)); counts[i] > 0 && stop {
				return gate{stopped: true, why: fmt.Sprintf("wave %d: %s", i+1, why)}, nil
			}
		}
	}
	if mine == 0 {
		return gate{ok: true}, nil
	}
	var states v1alpha1.RDMAHostStateList
	if err := r.c.List(ctx, &states); err != nil {
		return gate{}, err
	}
	stateOf := map[string]*v1alpha1.RDMAHostState{}
	for i := range states.Items {
		stateOf[states.Items[i].Name] = &states.Items[i]
	}
	var lastDone time.Time
	for i := 0; i < mine; i++ {
		for _, h := range waves[i] {
			if failed[h] {
				continue
			}
			st := stateOf[h]
			var c *metav1.Condition
			if st != nil && st.Status.Config == cfg.Name {
				c = meta.FindStatusCondition(st.Status.Conditions, v1alpha1.ConditionInSync)
			}
			if holding[h] || c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != cfg.Generation {
				return gate{why: fmt.Sprintf("waiting for wave %d of %d (node %s is not in sync yet)", i+1, len(waves), h)}, nil
			}
			if i == mine-1 && c.LastTransitionTime.After(lastDone) {
				lastDone = c.LastTransitionTime.Time
			}
		}
	}
	if ro.Bake > 0 && !lastDone.IsZero() {
		if until := lastDone.Add(ro.Bake); until.After(r.opts.Now()) {
			return gate{until: until, why: fmt.Sprintf("the bake after wave %d: its nodes must stay in sync until %s", mine, until.UTC().Format(time.RFC3339))}, nil
		}
	}
	return gate{ok: true}, nil
}
