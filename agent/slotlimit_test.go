package agent_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rdmaform/rdmaform/agent"
	"github.com/rdmaform/rdmaform/api/v1alpha1"
)

// ghostSlots makes slots i of config held by nodes that are activating
// (phase activating), as the agents of a config with a higher
// maxUnavailable left them, and returns their Leases.
func (k *cluster) ghostSlots(config string, holders map[int]string) map[int]*coordinationv1.Lease {
	k.t.Helper()
	out := map[int]*coordinationv1.Lease{}
	for i, h := range holders {
		h := h
		now := metav1.NewMicroTime(time.Now())
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name: agent.SlotName(config, i), Namespace: ns,
				Labels:      map[string]string{agent.LabelConfig: config},
				Annotations: map[string]string{agent.AnnotationPhase: "activating"},
			},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &h, AcquireTime: &now},
		}
		if err := k.c.Create(context.Background(), l); err != nil {
			k.t.Fatal(err)
		}
		k.t.Cleanup(func() { _ = k.c.Delete(context.Background(), l) })
		out[i] = l
	}
	return out
}

// heldSlots counts the config's held slots.
func (k *cluster) heldSlots(config string) int {
	k.t.Helper()
	var l coordinationv1.LeaseList
	if err := k.c.List(context.Background(), &l, client.InNamespace(ns), client.MatchingLabels{agent.LabelConfig: config}); err != nil {
		k.t.Fatal(err)
	}
	n := 0
	for _, x := range l.Items {
		if x.Spec.HolderIdentity != nil && *x.Spec.HolderIdentity != "" {
			n++
		}
	}
	return n
}

// TestLoweredMaxUnavailableHolds: maxUnavailable was 3 and three nodes
// hold slots 0, 1 and 2; it is now 2. With three held (one past the new
// limit) and with two held (at it), no node takes a slot; with one held
// (slot 2, past the new names), one node takes one and a second does not.
// (TestSlotsHeldPastALowerLimit checks one Take at each limit; this goes
// through the release of the slots one by one.)
func TestLoweredMaxUnavailableHolds(t *testing.T) {
	k := newCluster(t)
	const config = "lowered-steps"
	ghosts := k.ghostSlots(config, map[int]string{0: "ghost-a", 1: "ghost-b", 2: "ghost-c"})
	ctx := context.Background()
	taker := func(name string) *agent.Slots {
		return &agent.Slots{C: k.c, Namespace: ns, Holder: name, Now: time.Now}
	}
	d, e := taker("node-d"), taker("node-e")
	for _, step := range []struct {
		release int
		held    int
	}{{-1, 3}, {0, 2}} {
		if step.release >= 0 {
			if err := k.c.Delete(ctx, ghosts[step.release]); err != nil {
				t.Fatal(err)
			}
		}
		l, err := d.Take(ctx, config, 2)
		if err != nil || l != nil {
			t.Errorf("%d held, maxUnavailable 2: took %v (%v), want none", step.held, l, err)
		}
		if got := k.heldSlots(config); got != step.held {
			t.Errorf("%d slots held, want %d", got, step.held)
		}
	}
	if err := k.c.Delete(ctx, ghosts[1]); err != nil {
		t.Fatal(err)
	}
	l, err := d.Take(ctx, config, 2)
	if err != nil || l == nil {
		t.Fatalf("1 held, maxUnavailable 2: took %v (%v), want a slot", l, err)
	}
	if l2, err := e.Take(ctx, config, 2); err != nil || l2 != nil {
		t.Errorf("2 held again: a second node took %v (%v), want none", l2, err)
	}
	if got := k.heldSlots(config); got != 2 {
		t.Errorf("%d slots held, want 2", got)
	}
}

// pausingClient runs pause once, after its first List: the agent has
// read the slots and not yet taken one.
type pausingClient struct {
	client.Client
	once  sync.Once
	pause func()
}

func (p *pausingClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	err := p.Client.List(ctx, list, opts...)
	p.once.Do(p.pause)
	return err
}

// TestLoweredMaxUnavailableRace: maxUnavailable lowered from 3 to 2 while
// a node still activates on slot 2. Node d reads the slots (one held),
// then node e takes slot 0 before d goes on: d must not take slot 1,
// which would make three nodes activating under a limit of 2. It finds
// the two others when it checks its take, and gives its slot back.
func TestLoweredMaxUnavailableRace(t *testing.T) {
	k := newCluster(t)
	const config = "lowered-race"
	k.ghostSlots(config, map[int]string{2: "ghost-c"})
	ctx := context.Background()
	e := &agent.Slots{C: k.c, Namespace: ns, Holder: "node-e", Now: time.Now}
	var eTook *coordinationv1.Lease
	var eErr error
	d := &agent.Slots{Namespace: ns, Holder: "node-d", Now: time.Now, C: &pausingClient{Client: k.c, pause: func() {
		eTook, eErr = e.Take(ctx, config, 2)
	}}}
	dTook, err := d.Take(ctx, config, 2)
	if eErr != nil || eTook == nil {
		t.Fatalf("node e: took %v (%v), want a slot", eTook, eErr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if dTook != nil {
		t.Errorf("node d took %s beside ghost-c and node e: three activating under maxUnavailable 2", dTook.Name)
	}
	if got := k.heldSlots(config); got != 2 {
		t.Errorf("%d slots held, want 2 (ghost-c, node e)", got)
	}
}

// TestLoweredMaxUnavailableAgents: a config's maxUnavailable is lowered
// from 3 to 2 while three nodes of it activate (their slots held); two
// agents with firmware to activate wait (WaitingForSlot) while three and
// then two are held, and each activates only when fewer than two others
// do: whenever one starts, at most two slots are activating. When the others finish, both
// end activated, their hosts planning empty.
func TestLoweredMaxUnavailableAgents(t *testing.T) {
	k := newCluster(t)
	const config = "lowered-agents"
	nodes := k.nodes("lowered", 2, func(int) map[string]string { return map[string]string{"rail": config} })
	ghosts := k.ghostSlots(config, map[int]string{0: "ghost-a", 1: "ghost-b", 2: "ghost-c"})
	lw := k.watchTakes(config)
	cfg := k.config(config, "rail", config, firmwareSpec, policy(v1alpha1.ModeApply, v1alpha1.ActivationFWReset, 3))
	k.start(nodes...)
	for _, n := range nodes {
		k.waitState(n.name, condIs(v1alpha1.ConditionActivationRequired, metav1.ConditionTrue, "WaitingForSlot", cfg.Generation))
	}
	two := intstr.FromInt32(2)
	cfg.Spec.Policy.MaxUnavailable = &two
	if err := k.c.Update(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	for _, release := range []int{-1, 0} {
		if release >= 0 {
			if err := k.c.Delete(context.Background(), ghosts[release]); err != nil {
				t.Fatal(err)
			}
		}
		for _, n := range nodes {
			k.waitState(n.name, condIs(v1alpha1.ConditionActivationRequired, metav1.ConditionTrue, "WaitingForSlot", cfg.Generation))
		}
		// Long enough for a wrong take to show: the agents plan every 3 s.
		time.Sleep(4 * time.Second)
		if takes := lw.result(); len(takes) > 0 {
			t.Fatalf("with %d ghosts holding slots, the agents took %v", 3-release-1, takes)
		}
	}
	for _, i := range []int{1, 2} {
		if err := k.c.Delete(context.Background(), ghosts[i]); err != nil {
			t.Fatal(err)
		}
	}
	k.activatedAll(nodes, cfg, firmwareSpec)
	for _, tk := range lw.result() {
		if tk.held > 2 {
			t.Errorf("%s started activating with %d slots activating, want at most 2", tk.node, tk.held)
		}
	}
}

// take is one node starting its activation (its slot's phase turned
// activating), and how many slots were activating then, its own among
// them.
type take struct {
	node string
	held int
}

func (tk take) String() string { return fmt.Sprintf("%s (%d activating)", tk.node, tk.held) }

type takeWatch struct {
	mu    sync.Mutex
	takes []take
}

func (w *takeWatch) result() []take {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]take(nil), w.takes...)
}

// watchTakes records every activation a node that is not a ghost starts
// on a slot of the config, with the count of slots activating at that
// version. A slot taken and given back at once (Slots.confirm) never
// activates, and is not counted.
func (k *cluster) watchTakes(config string) *takeWatch {
	k.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	wi, err := k.c.Watch(ctx, &coordinationv1.LeaseList{}, client.InNamespace(ns), client.MatchingLabels{agent.LabelConfig: config})
	if err != nil {
		k.t.Fatal(err)
	}
	tw := &takeWatch{}
	done := make(chan struct{})
	k.t.Cleanup(func() { cancel(); wi.Stop(); <-done })
	go func() {
		defer close(done)
		activating := map[string]string{} // lease -> the node activating on it
		for ev := range wi.ResultChan() {
			l, ok := ev.Object.(*coordinationv1.Lease)
			if !ok {
				continue
			}
			h := ""
			if l.Spec.HolderIdentity != nil && ev.Type != watch.Deleted && l.Annotations[agent.AnnotationPhase] == "activating" {
				h = *l.Spec.HolderIdentity
			}
			prev := activating[l.Name]
			activating[l.Name] = h
			if h == "" || h == prev || strings.HasPrefix(h, "ghost-") {
				continue
			}
			n := 0
			for _, x := range activating {
				if x != "" {
					n++
				}
			}
			tw.mu.Lock()
			tw.takes = append(tw.takes, take{node: h, held: n})
			tw.mu.Unlock()
		}
	}()
	return tw
}
