package agent_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmaform/rdmaform/agent"
	"github.com/rdmaform/rdmaform/api/v1alpha1"
)

// quietInterval is the agents' interval in the quiet tests, and
// quietWindow how long a steady node is watched: several intervals.
const (
	quietInterval = time.Second
	quietWindow   = 5 * quietInterval
)

// steady watches the agent's requests for quietWindow and fails t when
// it wrote anything, or did not plan again at least three times (a
// quiet agent that stopped would prove nothing).
func steady(t *testing.T, what string, rec *recorder, m *agent.Metrics) {
	t.Helper()
	_, mark := rec.since(0)
	ok0, _ := reconciles(m)
	time.Sleep(quietWindow)
	reqs, _ := rec.since(mark)
	ok1, failed := reconciles(m)
	if w := writesOf(reqs); len(w) > 0 {
		t.Errorf("%s: %d writes in %s of a steady node, want none:\n%s", what, len(w), quietWindow, strings.Join(w, "\n"))
	}
	if ok1-ok0 < 3 || failed > 0 {
		t.Errorf("%s: %d reconciles in %s (%d failed), want at least 3, none failed", what, ok1-ok0, quietWindow, failed)
	}
	t.Logf("%s: %d reconciles, %d requests, no write in %s", what, ok1-ok0, len(reqs), quietWindow)
}

// TestSteadyNodeMakesNoWrites: an agent planning every second on a node in
// sync writes nothing (no state update, node patch or slot) over five
// intervals; it still plans (its reconcile counter grows). One drift (a
// module unloaded behind its back) costs exactly the two state updates an
// apply makes (Progressing, then in sync again), and the node is quiet
// again after; the host plans empty.
func TestSteadyNodeMakesNoWrites(t *testing.T) {
	k := newCluster(t)
	n := k.nodeWith("quiet-1", map[string]string{"rail": "quiet"})
	rec, m := &recorder{}, agent.NewMetrics()
	k.startRecorded(rec, m, quietInterval, n)
	cfg := k.config("quiet", "rail", "quiet", modulesSpec, policy(v1alpha1.ModeApply, v1alpha1.ActivationNone, 1))
	first := k.waitState(n.name, condIs(v1alpha1.ConditionInSync, metav1.ConditionTrue, "InSync", cfg.Generation))
	steady(t, "in sync", rec, m)

	_, mark := rec.since(0)
	if code, out := cliRun("", "sim", "tool", n.dir, "--", "modprobe", "-r", "rdma_ucm"); code != 0 {
		t.Fatal(out)
	}
	k.waitState(n.name, func(st *v1alpha1.RDMAHostState) string {
		if st.Status.LastApply == nil || !st.Status.LastApply.Time.After(first.Status.LastApply.Time.Time) {
			return "not applied again"
		}
		return condIs(v1alpha1.ConditionInSync, metav1.ConditionTrue, "InSync", cfg.Generation)(st)
	})
	steady(t, "after the drift", rec, m)
	reqs, _ := rec.since(mark)
	want := "update rdmahoststates.rdmaform.io quiet-1\nupdate rdmahoststates.rdmaform.io quiet-1"
	if got := strings.Join(writesOf(reqs), "\n"); got != want {
		t.Errorf("the drift's writes:\n%s\nwant\n%s", got, want)
	}
	if code := planExit(t, n, modulesSpec); code != 0 {
		t.Errorf("plan after the drift: exit %d, want 0", code)
	}
}
