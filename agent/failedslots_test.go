package agent_test

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmaform/rdmaform/agent"
)

// TestFailedSlotsCountAgainstTheLimit: a failed node keeps its slot,
// cordoned: it is out of service, and maxUnavailable counts it (a
// rollout policy lets the line go on past a failure, below its stop
// rules). With the limit 3 and two failed slots (0 and 1), a node takes
// one slot (2: the limit, one left); with three failed slots, none (one
// past: the failed nodes hold them all) until the limit is one more.
func TestFailedSlotsCountAgainstTheLimit(t *testing.T) {
	k := newCluster(t)
	ctx := context.Background()
	const cfg = "failedcount"
	t.Cleanup(func() {
		for _, l := range k.slotLeases(cfg) {
			_ = k.c.Delete(ctx, &l)
		}
	})
	failed := func(i int, h string) {
		t.Helper()
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: agent.SlotName(cfg, i), Namespace: ns, Labels: map[string]string{agent.LabelConfig: cfg},
				Annotations: map[string]string{agent.AnnotationFailed: "after the activation (fw-reset), 1 values are still pending"}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &h},
		}
		if err := k.c.Create(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	take := func(holder string, n int) *coordinationv1.Lease {
		t.Helper()
		s := &agent.Slots{C: k.c, Namespace: ns, Holder: holder, Now: time.Now}
		got, err := s.Take(ctx, cfg, n)
		if err != nil {
			t.Fatalf("Take(%d): %v", n, err)
		}
		return got
	}
	failed(0, "node-b")
	failed(1, "node-c")
	got := take("node-a", 3)
	if got == nil || got.Name != agent.SlotName(cfg, 2) {
		t.Fatalf("2 failed slots, limit 3: took %v, want slot 2", got)
	}
	// node-a's activation fails too: three failed nodes, limit 3.
	got.Annotations = map[string]string{agent.AnnotationFailed: "after the activation (fw-reset), 1 values are still pending"}
	if err := k.c.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	if got := take("node-d", 3); got != nil {
		t.Fatalf("3 failed slots, limit 3: took %s, want none (the failed nodes are out of service)", got.Name)
	}
	if got := take("node-d", 4); got == nil || got.Name != agent.SlotName(cfg, 3) {
		t.Fatalf("3 failed slots, limit 4: took %v, want slot 3", got)
	}
}
