package agent_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rdmaform/rdmaform/agent"
	"github.com/rdmaform/rdmaform/api/v1alpha1"
)

// TestSlotFreedAfterInSync: a node frees its activation slot only after
// its state says InSync for the config's generation. The release wakes
// the config's other nodes, and under a rollout policy those of the next
// wave read this node's state then: a state still saying Activating makes
// them wait for their interval (5 minutes by default) instead of going
// on. The order is read from the API server's own versions: the
// resourceVersion of the state's first InSync version against that of
// the Lease's deletion (both revisions of the lab's one etcd, so they
// compare as numbers here; a client elsewhere treats them as opaque).
func TestSlotFreedAfterInSync(t *testing.T) {
	k := newCluster(t)
	nodes := k.nodes("freed", 3, func(int) map[string]string { return map[string]string{"rail": "freed"} })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	inSyncAt := map[string]int64{} // node -> revision of its first InSync state
	freedAt := map[string]int64{}  // holder -> revision of its Lease's deletion
	var gen int64
	rev := func(s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Errorf("resourceVersion %q: %v", s, err)
		}
		return n
	}
	sw, err := k.c.Watch(ctx, &v1alpha1.RDMAHostStateList{})
	if err != nil {
		t.Fatal(err)
	}
	lw, err := k.c.Watch(ctx, &coordinationv1.LeaseList{}, client.InNamespace(ns), client.MatchingLabels{agent.LabelConfig: "freed"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for ev := range sw.ResultChan() {
			st, ok := ev.Object.(*v1alpha1.RDMAHostState)
			mu.Lock()
			if ok && gen > 0 && condIs(v1alpha1.ConditionInSync, "True", "InSync", gen)(st) == "" {
				if _, seen := inSyncAt[st.Name]; !seen {
					inSyncAt[st.Name] = rev(st.ResourceVersion)
				}
			}
			mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		for ev := range lw.ResultChan() {
			l, ok := ev.Object.(*coordinationv1.Lease)
			if ok && ev.Type == watch.Deleted && l.Spec.HolderIdentity != nil {
				mu.Lock()
				freedAt[*l.Spec.HolderIdentity] = rev(l.ResourceVersion)
				mu.Unlock()
			}
		}
	}()
	k.start(nodes...)
	cfg := k.config("freed", "rail", "freed", firmwareSpec, policy(v1alpha1.ModeApply, v1alpha1.ActivationFWReset, 1))
	mu.Lock()
	gen = cfg.Generation
	mu.Unlock()
	k.activatedAll(nodes, cfg, firmwareSpec)
	sw.Stop()
	lw.Stop()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, n := range nodes {
		f, ok := freedAt[n.name]
		if !ok {
			t.Errorf("%s: its slot's deletion was not seen", n.name)
			continue
		}
		if s, ok := inSyncAt[n.name]; !ok || s > f {
			t.Errorf("%s: slot freed at revision %d, its state InSync at %d (0: not seen): want InSync first", n.name, f, s)
		}
	}
}

// TestSlotEventsWakeOnlyWaitingNodes: with an interval of an hour, so
// that only events wake an agent, three nodes of one config roll a
// firmware change out one at a time (maxUnavailable 1): each node that
// waits for a slot is woken by the slot the one before it frees. A node
// of another config, in sync, sleeps through those slot events: its
// agent reconciles once, for the new config, while the three roll out
// (before, every slot freed anywhere in the namespace woke every agent).
func TestSlotEventsWakeOnlyWaitingNodes(t *testing.T) {
	k := newCluster(t)
	k.interval = time.Hour
	wake := k.nodes("wake", 3, func(int) map[string]string { return map[string]string{"rail": "wake"} })
	quiet := k.nodes("sleep", 1, func(int) map[string]string { return map[string]string{"rail": "sleep"} })
	m := agent.NewMetrics()
	k.startWith(m, quiet...)
	k.start(wake...)
	other := k.config("sleep", "rail", "sleep", modulesSpec, policy(v1alpha1.ModeApply, v1alpha1.ActivationFWReset, 1))
	k.waitState(quiet[0].name, condIs(v1alpha1.ConditionInSync, metav1.ConditionTrue, "InSync", other.Generation))
	before, _ := reconciles(m)
	cfg := k.config("wake", "rail", "wake", firmwareSpec, policy(v1alpha1.ModeApply, v1alpha1.ActivationFWReset, 1))
	k.activatedAll(wake, cfg, firmwareSpec)
	// The new config wakes every agent once (it may select any node);
	// the three slots freed after it wake none but the config's.
	if after, _ := reconciles(m); after-before != 1 {
		t.Errorf("the node of the other config reconciled %d times during the rollout, want 1 (the new config)", after-before)
	}
}
