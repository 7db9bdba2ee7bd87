package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"

	maintv1 "github.com/Mellanox/maintenance-operator/api/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rdmaform/rdmaform/api/v1alpha1"
)

// The maintenance operator's path (policy.maintenance:
// maintenance-operator). NVIDIA's maintenance operator
// (github.com/Mellanox/maintenance-operator, API group
// maintenance.nvidia.com) coordinates cordon and drain between the
// components that take nodes out of service (the network operator, its
// NIC and SR-IOV operators): a requestor creates a NodeMaintenance for a
// node; the operator schedules it (at most one in progress per node, and
// within its MaintenanceOperatorConfig's maxParallelOperations and
// maxUnavailable), cordons and drains the node as its spec says, and sets
// its Ready condition True; the requestor does its work and deletes the
// NodeMaintenance, and the operator uncordons the node (if it was
// schedulable before) and removes its finalizer. The flow, the types and
// the condition reasons are the operator's README and
// api/v1alpha1/nodemaintenance_types.go at v0.3.0 (the Go module
// github.com/Mellanox/maintenance-operator/api v0.3.0, whose types this
// file uses).
//
// The agent, holding its activation slot, requests one NodeMaintenance
// for its node (in the agent's namespace, named after the node), waits
// for it to be Ready, activates and checks, passes the gates, then
// deletes it and releases its slot once the operator has let it go. A
// failure marks it RequestorFailed (the operator's documented way for a
// requestor to say so) and asks the operator's garbage collector to leave
// it alone: the node stays out of service until a person acts.
const (
	// MaintenanceRequestor is the agent's requestorID in its
	// NodeMaintenances (the operator wants a domain name).
	MaintenanceRequestor = "rdmaform.io"
	// maintenancePoll is how soon the agent looks again at a
	// NodeMaintenance it waits for (it does not watch them: the
	// operator's CRD may not be installed when the agent starts).
	maintenancePoll = 3 * time.Second
	// releaseWait bounds how long the agent waits in one reconcile for
	// the operator to let a deleted NodeMaintenance go.
	releaseWait = 20 * time.Second
	// drainTimeoutSecs is the drainSpec's timeoutSeconds (the operator's
	// own default).
	drainTimeoutSecs = 300
	// gcIgnore is the operator's annotation that keeps its garbage
	// collector from deleting a NodeMaintenance Ready for longer than its
	// maxNodeMaintenanceTime (internal/controller/garbage_collector_controller.go).
	gcIgnore = "maintenance.nvidia.com/garbage-collector.ignore"
)

// MaintenanceName is the NodeMaintenance the agent of a node requests:
// rdmaform-NODE, or a digest of the node's name past 253 characters.
func MaintenanceName(node string) string {
	name := "rdmaform-" + node
	if len(name) <= 253 {
		return name
	}
	sum := sha256.Sum256([]byte(node))
	return "rdmaform-" + hex.EncodeToString(sum[:16])
}

func usesOperator(cfg *v1alpha1.RDMAHostConfig) bool {
	return cfg.Spec.Policy.Maintenance == v1alpha1.MaintenanceOperator
}

func nmKey(nm *maintv1.NodeMaintenance) string { return nm.Namespace + "/" + nm.Name }

// phaseOf is a NodeMaintenance's phase: its Ready condition's reason
// (Pending, Scheduled, Cordon, WaitForPodCompletion, Draining, Ready,
// RequestorFailed), or "" before the operator has seen it.
func phaseOf(nm *maintv1.NodeMaintenance) string {
	if c := meta.FindStatusCondition(nm.Status.Conditions, maintv1.ConditionTypeReady); c != nil {
		return c.Reason
	}
	return ""
}

// maintenances are the NodeMaintenances of every namespace for this node
// (the CRD's selectable field spec.nodeName, there since the operator's
// v0.2.0), and among them the agent's own.
func (r *Reconciler) maintenances(ctx context.Context) (own *maintv1.NodeMaintenance, others []maintv1.NodeMaintenance, err error) {
	var l maintv1.NodeMaintenanceList
	if err := r.c.List(ctx, &l, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("spec.nodeName", r.opts.NodeName)}); err != nil {
		return nil, nil, fmt.Errorf("listing the NodeMaintenances of node %s (is NVIDIA's maintenance operator installed?): %w", r.opts.NodeName, err)
	}
	for i := range l.Items {
		nm := &l.Items[i]
		if nm.Spec.NodeName != r.opts.NodeName {
			continue
		}
		if nm.Namespace == r.opts.Namespace && nm.Name == MaintenanceName(r.opts.NodeName) {
			own = nm
		} else {
			others = append(others, *nm)
		}
	}
	sort.Slice(others, func(i, j int) bool { return nmKey(&others[i]) < nmKey(&others[j]) })
	return own, others, nil
}

// busyWith says which other requestors' NodeMaintenances hold the node:
// two requestors never drain one node at once, so the agent requests
// none while another exists (the operator would also schedule only one).
func busyWith(others []maintv1.NodeMaintenance) string {
	var out []string
	for i := range others {
		nm := &others[i]
		ph := phaseOf(nm)
		if ph == "" {
			ph = "new"
		}
		out = append(out, fmt.Sprintf("%s (requestor %s, %s)", nmKey(nm), nm.Spec.RequestorID, ph))
	}
	return strings.Join(out, ", ")
}

// newMaintenance is the NodeMaintenance the agent requests: cordon, and
// with policy.evict a drain of every pod but DaemonSet pods (the agent's
// own eviction: pods without a controller and pods with emptyDir
// volumes go too, hence force and deleteEmptyDir), within the operator's
// default drain timeout.
func (r *Reconciler) newMaintenance(cfg *v1alpha1.RDMAHostConfig) *maintv1.NodeMaintenance {
	nm := &maintv1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{
			Name: MaintenanceName(r.opts.NodeName), Namespace: r.opts.Namespace,
			Labels: map[string]string{LabelConfig: configLabel(cfg.Name)},
		},
		Spec: maintv1.NodeMaintenanceSpec{RequestorID: MaintenanceRequestor, NodeName: r.opts.NodeName, Cordon: true},
	}
	if cfg.Spec.Policy.Evict {
		nm.Spec.DrainSpec = &maintv1.DrainSpec{Force: true, DeleteEmptyDir: true, TimeoutSecond: drainTimeoutSecs}
	}
	return nm
}

// maintenanceReady requests the node's NodeMaintenance if there is none
// and says whether the operator made it Ready; when not, why (for the
// state) and the agent looks again soon.
func (r *Reconciler) maintenanceReady(ctx context.Context, cfg *v1alpha1.RDMAHostConfig, st *v1alpha1.RDMAHostState) (bool, string, error) {
	own, others, err := r.maintenances(ctx)
	if err != nil {
		return false, "", err
	}
	r.wakeAt = r.opts.Now().Add(maintenancePoll)
	if own == nil {
		if len(others) > 0 {
			return false, "another requestor's NodeMaintenance holds the node: " + busyWith(others), nil
		}
		own = r.newMaintenance(cfg)
		if err := r.c.Create(ctx, own); err != nil {
			return false, "", fmt.Errorf("requesting NodeMaintenance %s: %w", nmKey(own), err)
		}
		st.Status.Maintenance = nmKey(own)
		return false, fmt.Sprintf("requested NodeMaintenance %s; waiting for the maintenance operator to make it Ready", nmKey(own)), nil
	}
	st.Status.Maintenance = nmKey(own)
	if own.DeletionTimestamp != nil {
		return false, fmt.Sprintf("NodeMaintenance %s is being deleted; waiting for the maintenance operator to let it go", nmKey(own)), nil
	}
	if c := meta.FindStatusCondition(own.Status.Conditions, maintv1.ConditionTypeRequestorFailed); c != nil && c.Status == metav1.ConditionTrue {
		// A person deleted the failed slot's Lease to try again: clear
		// the failure (the operator then sets Ready again).
		meta.SetStatusCondition(&own.Status.Conditions, metav1.Condition{Type: maintv1.ConditionTypeRequestorFailed, Status: metav1.ConditionFalse,
			Reason: "Retry", Message: "rdmaform tries the activation again", ObservedGeneration: own.Generation})
		if err := r.c.Status().Update(ctx, own); err != nil {
			return false, "", fmt.Errorf("clearing RequestorFailed on NodeMaintenance %s: %w", nmKey(own), err)
		}
		if own.Annotations[gcIgnore] != "" {
			delete(own.Annotations, gcIgnore)
			if err := r.c.Update(ctx, own); err != nil {
				return false, "", fmt.Errorf("updating NodeMaintenance %s: %w", nmKey(own), err)
			}
		}
		return false, fmt.Sprintf("cleared RequestorFailed on NodeMaintenance %s; waiting for it to be Ready again", nmKey(own)), nil
	}
	c := meta.FindStatusCondition(own.Status.Conditions, maintv1.ConditionTypeReady)
	if c != nil && c.Status == metav1.ConditionTrue {
		return true, "", nil
	}
	ph := phaseOf(own)
	if ph == "" {
		ph = "not yet seen by the operator"
	}
	msg := fmt.Sprintf("waiting for NodeMaintenance %s to be Ready (%s)", nmKey(own), ph)
	if own.Status.Drain != nil {
		msg += fmt.Sprintf(": drained %d%% of %d pods", own.Status.Drain.DrainProgress, own.Status.Drain.EvictionPods)
	}
	if len(others) > 0 {
		msg += "; also on the node: " + busyWith(others)
	}
	return false, msg, nil
}

// releaseMaintenance deletes the node's NodeMaintenance (the operator
// uncordons the node and removes its finalizer); gone says it no longer
// exists, and only then is the slot released.
func (r *Reconciler) releaseMaintenance(ctx context.Context, st *v1alpha1.RDMAHostState) (gone bool, err error) {
	own, _, err := r.maintenances(ctx)
	if err != nil {
		return false, err
	}
	if own == nil {
		st.Status.Maintenance = ""
		return true, nil
	}
	if own.DeletionTimestamp == nil {
		uid := own.UID
		err := r.c.Delete(ctx, own, client.Preconditions{UID: &uid})
		if apierrors.IsNotFound(err) {
			st.Status.Maintenance = ""
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("releasing NodeMaintenance %s: %w", nmKey(own), err)
		}
	}
	// The operator uncordons and drops its finalizer in one reconcile:
	// wait a little for it rather than a whole poll.
	for end := time.Now().Add(releaseWait); ; {
		var again maintv1.NodeMaintenance
		err := r.c.Get(ctx, client.ObjectKeyFromObject(own), &again)
		if apierrors.IsNotFound(err) {
			st.Status.Maintenance = ""
			return true, nil
		}
		if err != nil || time.Now().After(end) {
			break
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	r.wakeAt = r.opts.Now().Add(maintenancePoll)
	st.Status.Maintenance = nmKey(own)
	return false, nil
}

// failMaintenance marks the node's NodeMaintenance RequestorFailed, with
// why, and keeps the operator's garbage collector off it: the node stays
// cordoned (and drained) until a person acts.
func (r *Reconciler) failMaintenance(ctx context.Context, why string) error {
	own, _, err := r.maintenances(ctx)
	if err != nil || own == nil {
		return err
	}
	if own.Annotations[gcIgnore] != "true" {
		if own.Annotations == nil {
			own.Annotations = map[string]string{}
		}
		own.Annotations[gcIgnore] = "true"
		if err := r.c.Update(ctx, own); err != nil {
			return fmt.Errorf("updating NodeMaintenance %s: %w", nmKey(own), err)
		}
	}
	if len(why) > 1000 {
		why = why[:1000] + "..."
	}
	if !meta.SetStatusCondition(&own.Status.Conditions, metav1.Condition{Type: maintv1.ConditionTypeRequestorFailed, Status: metav1.ConditionTrue,
		Reason: maintv1.ConditionReasonFailedMaintenance, Message: "rdmaform: " + why, ObservedGeneration: own.Generation}) {
		return nil
	}
	if err := r.c.Status().Update(ctx, own); err != nil {
		return fmt.Errorf("marking NodeMaintenance %s RequestorFailed: %w", nmKey(own), err)
	}
	return nil
}

// maintenanceBlocked says why the node may not take a slot yet under the
// maintenance operator: another requestor's NodeMaintenance on the node,
// or the operator's API missing ("" and nil: go).
func (r *Reconciler) maintenanceBlocked(ctx context.Context, cfg *v1alpha1.RDMAHostConfig) (string, error) {
	if !usesOperator(cfg) {
		return "", nil
	}
	_, others, err := r.maintenances(ctx)
	if err != nil {
		r.wakeAt = r.opts.Now().Add(maintenancePoll)
		return err.Error(), nil
	}
	if len(others) > 0 {
		r.wakeAt = r.opts.Now().Add(maintenancePoll)
		return "another requestor's NodeMaintenance holds the node: " + busyWith(others), nil
	}
	return "", nil
}

// maintenanceKept is what a failure's message adds about the node's
// NodeMaintenance.
func maintenanceKept(key string) string {
	ns, name, _ := strings.Cut(key, "/")
	return fmt.Sprintf("\nNodeMaintenance %s stays, marked RequestorFailed (and kept from the operator's garbage collector): the maintenance operator keeps the node cordoned. Delete it (kubectl -n %s delete nodemaintenance %s) to return the node to service without a retry", key, ns, name)
}
