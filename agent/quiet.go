package agent

import (
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/rdmaform/rdmaform/api/v1alpha1"
)

// Quiet: the agent writes its RDMAHostState only when what it says
// changes. Every reconcile plans again and fills the status afresh; when
// the result is the status the API server already has (the version the
// agent last read or wrote), no request is made. lastPlanTime alone does
// not count as a change: on a steady node it stays the time of the plan
// that last changed the state, and the agent's /metrics
// (rdmaform_agent_last_reconcile_timestamp_seconds) says when it last
// planned. A steady node thus makes reads only (its Node, the configs,
// its state, its config's slots), however many nodes there are.

// seenState is the status the API server has for the node's state at one
// resourceVersion.
type seenState struct {
	resourceVersion string
	status          v1alpha1.RDMAHostStateStatus
}

// remember records st as the API server has it (just read or written).
func (r *Reconciler) remember(st *v1alpha1.RDMAHostState) {
	r.seen = &seenState{resourceVersion: st.ResourceVersion, status: *st.Status.DeepCopy()}
}

// unchanged reports whether writing st would change nothing but its
// lastPlanTime: it is the version last seen and says the same.
func (r *Reconciler) unchanged(st *v1alpha1.RDMAHostState) bool {
	if r.seen == nil || st.ResourceVersion == "" || st.ResourceVersion != r.seen.resourceVersion {
		return false
	}
	a, b := r.seen.status.DeepCopy(), st.Status.DeepCopy()
	a.LastPlanTime, b.LastPlanTime = nil, nil
	return equality.Semantic.DeepEqual(a, b)
}
