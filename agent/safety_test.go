package agent_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rdmaform/rdmaform/agent"
	"github.com/rdmaform/rdmaform/api/v1alpha1"
	"github.com/rdmaform/rdmaform/plan"
)

// slotLeases lists the config's slot Leases.
func (k *cluster) slotLeases(config string) []coordinationv1.Lease {
	k.t.Helper()
	var l coordinationv1.LeaseList
	if err := k.c.List(context.Background(), &l, client.InNamespace(ns), client.MatchingLabels{agent.LabelConfig: config}); err != nil {
		k.t.Fatal(err)
	}
	return l.Items
}

func (k *cluster) nodeObj(name string) *corev1.Node {
	k.t.Helper()
	var n corev1.Node
	if err := k.c.Get(context.Background(), client.ObjectKey{Name: name}, &n); err != nil {
		k.t.Fatal(err)
	}
	return &n
}

// condSet says what is missing until condition typ is set for the
// config's generation, whatever its status and reason.
func condSet(typ string, gen int64) func(*v1alpha1.RDMAHostState) string {
	return func(st *v1alpha1.RDMAHostState) string {
		if c := meta.FindStatusCondition(st.Status.Conditions, typ); c == nil || c.ObservedGeneration != gen {
			return typ + " not set for this generation"
		}
		return ""
	}
}

// TestActivationNoneLeavesFirmwareStaged: in apply mode with activation
// none (the CRD's default) and firmware staged, the agent applies the
// runtime part and leaves the firmware staged: ActivationRequired says
// the policy does not activate, no slot is taken, the node is not
// cordoned, and the host still plans exit 3 (staged, not active) with
// nothing reset.
func TestActivationNoneLeavesFirmwareStaged(t *testing.T) {
	k := newCluster(t)
	nodes := k.nodes("none", 1, func(int) map[string]string { return map[string]string{"rail": "none"} })
	sw := k.watchSlots("none")
	k.start(nodes...)
	cfg := k.config("none", "rail", "none", firmwareSpec, policy(v1alpha1.ModeApply, v1alpha1.ActivationNone, 1))
	st := k.waitState(nodes[0].name, condSet(v1alpha1.ConditionActivationRequired, cfg.Generation))
	c := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.ConditionActivationRequired)
	if c.Status != metav1.ConditionTrue || c.Reason != "ActivationNotAllowed" || !strings.Contains(c.Message, "activation none") {
		t.Fatalf("ActivationRequired %s %s: %s; want True, ActivationNotAllowed, naming activation none", c.Status, c.Reason, c.Message)
	}
	if la := st.Status.LastApply; la == nil || la.Action != "apply" || la.ExitCode != plan.ExitReboot || la.Applied != 2 {
		t.Errorf("last apply %+v, want the apply (the module and the staging), exit 3: the firmware waits", la)
	}
	if _, takers := sw.result(); len(takers) != 0 {
		t.Errorf("slots taken by %v, want none", takers)
	}
	if n := k.nodeObj(nodes[0].name); n.Spec.Unschedulable {
		t.Error("the node was cordoned")
	}
	if code := planExit(t, nodes[0], firmwareSpec); code != 3 {
		t.Errorf("plan exit %d, want 3 (the firmware staged, not active)", code)
	}
	if len(k.slotLeases("none")) != 0 {
		t.Error("a slot Lease is left")
	}
}

// TestPersonsCordonStays: a node a person cordoned (no rdmaform mark) is
// activated (it is already unschedulable: the agent does not cordon it
// again) and stays cordoned after: only the agent's own cordon is
// undone.
func TestPersonsCordonStays(t *testing.T) {
	k := newCluster(t)
	nodes := k.nodes("cordoned", 1, func(int) map[string]string { return map[string]string{"rail": "cordoned"} })
	n := k.nodeObj(nodes[0].name)
	n.Spec.Unschedulable = true
	if err := k.c.Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	k.start(nodes...)
	cfg := k.config("cordoned", "rail", "cordoned", firmwareSpec, policy(v1alpha1.ModeApply, v1alpha1.ActivationFWReset, 1))
	st := k.waitState(nodes[0].name, condIs(v1alpha1.ConditionInSync, metav1.ConditionTrue, "InSync", cfg.Generation))
	if la := st.Status.LastApply; la == nil || la.Action != "activate" || la.ExitCode != 0 {
		t.Errorf("last apply %+v, want the activation", la)
	}
	n = k.nodeObj(nodes[0].name)
	if !n.Spec.Unschedulable {
		t.Error("the agent uncordoned a node a person cordoned")
	}
	if _, ok := n.Annotations[agent.AnnotationCordoned]; ok {
		t.Errorf("the node carries %s, which only the agent's own cordon sets", agent.AnnotationCordoned)
	}
	if code := planExit(t, nodes[0], firmwareSpec); code != 0 {
		t.Errorf("plan exit %d after the activation, want 0", code)
	}
}

// TestEmptySelectorSelectsNothing: a config whose nodeSelector is empty
// (it would take the whole cluster) selects no node: the node another
// config selects is that config's alone (no ConfigConflict) and is
// applied.
func TestEmptySelectorSelectsNothing(t *testing.T) {
	k := newCluster(t)
	nodes := k.nodes("emptysel", 1, func(int) map[string]string { return map[string]string{"rail": "emptysel"} })
	everything := k.config("emptysel-all", "rail", "emptysel", "version: 1\nmodules: [rdma_cm]\n", policy(v1alpha1.ModeApply, v1alpha1.ActivationNone, 1))
	everything.Spec.NodeSelector = metav1.LabelSelector{}
	if err := k.c.Update(context.Background(), everything); err != nil {
		t.Fatal(err)
	}
	k.start(nodes...)
	cfg := k.config("emptysel", "rail", "emptysel", modulesSpec, policy(v1alpha1.ModeApply, v1alpha1.ActivationNone, 1))
	st := k.waitState(nodes[0].name, func(st *v1alpha1.RDMAHostState) string {
		if c := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.ConditionConfigConflict); c != nil && c.Status == metav1.ConditionTrue {
			return "" // fails below
		}
		return condIs(v1alpha1.ConditionInSync, metav1.ConditionTrue, "InSync", cfg.Generation)(st)
	})
	if c := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.ConditionConfigConflict); c == nil || c.Status != metav1.ConditionFalse || st.Status.Config != "emptysel" {
		t.Fatalf("config %q, ConfigConflict %+v: want emptysel alone", st.Status.Config, c)
	}
	if code := planExit(t, nodes[0], modulesSpec); code != 0 {
		t.Errorf("plan exit %d, want 0", code)
	}
}

// TestFailedSlotKeepsItsCause: after a failed activation the node's
// later reconciles leave the failure as it was: the Lease's mark and the
// ActivationFailed message keep the activation's own error (the reset
// that needs a power cycle), not a later "still pending".
func TestFailedSlotKeepsItsCause(t *testing.T) {
	k := newCluster(t)
	nodes := k.nodes("keepfail", 1, func(int) map[string]string { return map[string]string{"rail": "keepfail"} })
	if code, out := cliRun("", "sim", "fault", nodes[0].dir, "--reset", "power-cycle"); code != 0 {
		t.Fatal(out)
	}
	m := agent.NewMetrics()
	k.startWith(m, nodes...)
	cfg := k.config("keepfail", "rail", "keepfail", firmwareSpec, policy(v1alpha1.ModeApply, v1alpha1.ActivationFWReset, 1))
	st := k.waitState(nodes[0].name, condIs(v1alpha1.ConditionActivationFailed, metav1.ConditionTrue, "ActivationFailed", cfg.Generation))
	first := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.ConditionActivationFailed).Message
	ls := k.slotLeases("keepfail")
	if len(ls) != 1 || !strings.Contains(ls[0].Annotations[agent.AnnotationFailed], "power cycle") {
		t.Fatalf("slots %+v, want one marked with the reset's error", ls)
	}
	mark := ls[0].Annotations[agent.AnnotationFailed]
	// Two more reconciles (the agent's counter: a state that says the
	// same is not written again).
	ok0, _ := reconciles(m)
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(300 * time.Millisecond) {
		if ok, _ := reconciles(m); ok >= ok0+2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no two reconciles in %s", waitLimit)
		}
	}
	st, err := k.state(nodes[0].name)
	if err != nil {
		t.Fatal(err)
	}
	if got := k.slotLeases("keepfail"); len(got) != 1 || got[0].Annotations[agent.AnnotationFailed] != mark {
		t.Errorf("the slot's mark changed:\n%v\nwas:\n%s", got, mark)
	}
	c := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.ConditionActivationFailed)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "power cycle") {
		t.Errorf("ActivationFailed now %+v; was:\n%s", c, first)
	}
	if !k.nodeObj(nodes[0].name).Spec.Unschedulable {
		t.Error("the failed node was uncordoned")
	}
}

// racingClient is a client whose first Lease update loses a race: just
// before it, another holder updates the same Lease (through the real API
// server), so the update carries an old resourceVersion.
type racingClient struct {
	client.Client
	once  sync.Once
	raced error
}

func (c *racingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if l, ok := obj.(*coordinationv1.Lease); ok {
		c.once.Do(func() {
			var cur coordinationv1.Lease
			if c.raced = c.Client.Get(ctx, client.ObjectKeyFromObject(l), &cur); c.raced != nil {
				return
			}
			other := "other-node"
			cur.Spec.HolderIdentity = &other
			c.raced = c.Client.Update(ctx, &cur)
		})
	}
	return c.Client.Update(ctx, obj, opts...)
}

// TestSlotTakeLosesARace: a free slot Lease (no holder) another node
// takes between this node's read and its update: the API server answers
// Conflict, and Take goes on to the next slot instead of failing; the
// other node keeps the first.
func TestSlotTakeLosesARace(t *testing.T) {
	k := newCluster(t)
	ctx := context.Background()
	const cfg = "lostupdate"
	free := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: agent.SlotName(cfg, 0), Namespace: ns, Labels: map[string]string{agent.LabelConfig: cfg}}}
	if err := k.c.Create(ctx, free); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, l := range k.slotLeases(cfg) {
			_ = k.c.Delete(ctx, &l)
		}
	})
	rc := &racingClient{Client: k.c}
	s := &agent.Slots{C: rc, Namespace: ns, Holder: "this-node", Now: time.Now}
	got, err := s.Take(ctx, cfg, 2)
	if rc.raced != nil {
		t.Fatalf("the other holder's update: %v", rc.raced)
	}
	if err != nil || got == nil || got.Name != agent.SlotName(cfg, 1) {
		t.Fatalf("Take after losing slot 0: %v, %v; want slot 1", got, err)
	}
	hs := map[string]string{}
	for _, l := range k.slotLeases(cfg) {
		hs[l.Name] = *l.Spec.HolderIdentity
	}
	if hs[agent.SlotName(cfg, 0)] != "other-node" || hs[agent.SlotName(cfg, 1)] != "this-node" {
		t.Errorf("holders %v, want slot 0 other-node, slot 1 this-node", hs)
	}
}

// TestSlotsHeldPastALowerLimit: slots held count against the limit
// wherever they are (maxUnavailable lowered while nodes activate on slots
// 1 and 2): with slot 0 free, a node takes none while as many slots as
// the limit are held, at the limit and past it, and takes slot 0 once
// the limit is one more than the slots held.
func TestSlotsHeldPastALowerLimit(t *testing.T) {
	k := newCluster(t)
	ctx := context.Background()
	const cfg = "lowered"
	t.Cleanup(func() {
		for _, l := range k.slotLeases(cfg) {
			_ = k.c.Delete(ctx, &l)
		}
	})
	hold := func(i int, h string) {
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: agent.SlotName(cfg, i), Namespace: ns, Labels: map[string]string{agent.LabelConfig: cfg}},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &h},
		}
		if err := k.c.Create(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	s := &agent.Slots{C: k.c, Namespace: ns, Holder: "node-a", Now: time.Now}
	take := func(n int) *coordinationv1.Lease {
		t.Helper()
		got, err := s.Take(ctx, cfg, n)
		if err != nil {
			t.Fatalf("Take(%d): %v", n, err)
		}
		return got
	}
	hold(1, "node-b")
	if got := take(1); got != nil {
		t.Fatalf("slot 1 held, limit 1: took %s, want none", got.Name)
	}
	hold(2, "node-c")
	for _, n := range []int{1, 2} {
		if got := take(n); got != nil {
			t.Fatalf("slots 1 and 2 held, limit %d: took %s, want none", n, got.Name)
		}
	}
	if got := take(3); got == nil || got.Name != agent.SlotName(cfg, 0) {
		t.Fatalf("slots 1 and 2 held, limit 3: took %v, want slot 0", got)
	}
}

// TestSlotNameLimit: a slot's Lease is named rdmaform-CONFIG-slot-N while
// that fits a Lease name (a DNS subdomain, 253 characters); one character
// more and the config's name is replaced by its hash, the same for every
// slot of the config and different between configs.
func TestSlotNameLimit(t *testing.T) {
	fits := strings.Repeat("c", 253-len("rdmaform--slot-0"))
	if got := agent.SlotName(fits, 0); got != "rdmaform-"+fits+"-slot-0" || len(got) != 253 {
		t.Errorf("a name of 253: %q (%d), want it kept", got, len(got))
	}
	long := fits + "c"
	a, b := agent.SlotName(long, 0), agent.SlotName(long, 1)
	if len(a) > 253 || strings.Contains(a, fits) || !strings.HasPrefix(a, "rdmaform-") || !strings.HasSuffix(a, "-slot-0") {
		t.Errorf("a name of 254: %q (%d), want the config's hash", a, len(a))
	}
	if strings.TrimSuffix(a, "-slot-0") != strings.TrimSuffix(b, "-slot-1") {
		t.Errorf("slots 0 and 1 of one config: %q, %q", a, b)
	}
	if other := agent.SlotName(fits+"d", 0); other == a {
		t.Errorf("two configs share %q", a)
	}
	if agent.SlotName("rail", 7) != "rdmaform-rail-slot-7" {
		t.Errorf("a short name: %q", agent.SlotName("rail", 7))
	}
}

// TestSlotLabelLimit: a slot's Lease carries its config's name as a
// label value, which the API server limits to 63 characters: a config
// named with 63 takes and releases a slot by that label, one named with
// 64 by its hash, and each finds its own slot again.
func TestSlotLabelLimit(t *testing.T) {
	k := newCluster(t)
	ctx := context.Background()
	for _, n := range []int{63, 64} {
		cfg := strings.Repeat("l", n)
		s := &agent.Slots{C: k.c, Namespace: ns, Holder: "node-l", Now: time.Now}
		got, err := s.Take(ctx, cfg, 1)
		if err != nil || got == nil {
			t.Fatalf("a config name of %d: Take: %v, %v", n, got, err)
		}
		label := got.Labels[agent.LabelConfig]
		if (n == 63) != (label == cfg) || len(label) > 63 {
			t.Errorf("a config name of %d: label %q", n, label)
		}
		held, err := s.Held(ctx, cfg)
		if err != nil || held == nil || held.Name != got.Name {
			t.Fatalf("a config name of %d: Held: %v, %v; want %s", n, held, err, got.Name)
		}
		if err := s.Release(ctx, held); err != nil {
			t.Fatal(err)
		}
	}
}
