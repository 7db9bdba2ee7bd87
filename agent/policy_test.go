package agent_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rdmaform/rdmaform/agent"
	"github.com/rdmaform/rdmaform/api/v1alpha1"
)

// agentHosts is RDMAFORM_AGENT_HOSTS (200 for the proof on a fleet), or 12.
func agentHosts(t *testing.T) int {
	n := 12
	if s := os.Getenv("RDMAFORM_AGENT_HOSTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 12 {
			t.Fatalf("RDMAFORM_AGENT_HOSTS=%q: want 12 or more", s)
		}
	}
	return n
}

// TestRolloutPolicyInTheAgent: RDMAFORM_AGENT_HOSTS nodes (12 by
// default), each with an in-process agent and a simulated host, in 4
// domains (label rdmaform.io/domain) and two compartments (label
// rdmaform.io/compartment: gpu, storage), two of them subnet manager
// nodes; a config with activation fw-reset, maxUnavailable 50 % and the
// rollout policy canary 1, ramp steps [2, 50%], bake 2 s, stop rules
// failed_hosts 3 and failed_percent 50, compartments gpu then storage.
//
// The agents take their slots in the policy's waves (agent.Waves, which
// TestRolloutPolicy in ansible/ checks against rdmaform waves and the
// role): no node of a wave takes a slot before every node of the waves
// before it is in sync or failed, and none before the bake after the
// wave before it has passed.
//
// Planted failures (firmware that only a power cycle loads): one of
// wave 2's two nodes (50 %: the percent rule's limit; the line goes on),
// one of wave 3 (2 failed: the host rule's limit less one; goes on), and
// one of a later wave of two or more: 3 failed, the line stops (the
// nodes after it LineStopped, naming the rule, their firmware still
// staged). A person clears the faults and deletes the three failed
// Leases: the line resumes where it stopped, the waves after the stop
// still in order, and every node ends in sync with an empty plan.
func TestRolloutPolicyInTheAgent(t *testing.T) {
	n := agentHosts(t)
	k := newCluster(t)
	// The agents share this machine's CPUs: on 200 nodes an interval of
	// 3 s asks for 67 plans a second, more than two CPUs make, and the
	// waves crawl. The interval grows with the nodes (3 s for 12, 50 s
	// for 200): the waves do not wait for it, a freed slot wakes every
	// agent (and a node's state says InSync before its slot is freed).
	k.interval = max(3*time.Second, time.Duration(n)*250*time.Millisecond)
	k.wait = max(waitLimit, time.Duration(n)*6*time.Second)
	nodes := k.nodes("ramp", n, func(i int) map[string]string {
		l := map[string]string{"rail": "ramp", agent.LabelDomain: fmt.Sprintf("leaf%d", (i-1)/2%4+1),
			agent.LabelCompartment: map[bool]string{true: "gpu", false: "storage"}[i%2 == 1]}
		if i <= 2 {
			l[agent.LabelRoles] = "sm"
		}
		return l
	})
	// maxUnavailable 50 %: the waves are those of 25 % (the ramp's steps
	// and the domains cut them first), and the failed nodes' slots,
	// which count against it, leave every wave room for all its nodes:
	// the order in which a wave's nodes take their slots does not
	// change which of them the stop leaves out.
	mu := intstr.FromString("50%")
	ro := &v1alpha1.Rollout{
		MaxPerDomain: i32(int32(max(1, n/4/4))), Canary: i32(1), Bake: &metav1.Duration{Duration: 2 * time.Second},
		Ramp:         &v1alpha1.RolloutRamp{Steps: []intstr.IntOrString{intstr.FromInt32(2), intstr.FromString("50%")}},
		Stop:         &v1alpha1.RolloutStop{FailedHosts: i32(3), FailedPercent: i32(50)},
		Compartments: &v1alpha1.RolloutCompartments{Order: "sequential", Groups: []string{"gpu", "storage"}},
	}
	pol := v1alpha1.Policy{Mode: v1alpha1.ModeApply, Activation: v1alpha1.ActivationFWReset, MaxUnavailable: &mu, Rollout: ro}
	r, err := agent.RolloutOf(pol)
	if err != nil {
		t.Fatal(err)
	}
	var objs corev1.NodeList
	if err := k.c.List(context.Background(), &objs, client.MatchingLabels{"rail": "ramp"}); err != nil {
		t.Fatal(err)
	}
	waves, err := agent.Waves(objs.Items, *r)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("waves: %v", waves)
	if len(waves) < 5 || len(waves[1]) != 2 || len(waves[2]) < 2 {
		t.Fatalf("waves %v: want 5 or more, the second of 2 and the third of 2 or more", waves)
	}
	stopAt := -1
	for i := 3; i < len(waves)-1; i++ {
		if len(waves[i]) >= 2 {
			stopAt = i
			break
		}
	}
	if stopAt < 0 {
		t.Fatalf("waves %v: want a wave of 2 or more after the third, not the last", waves)
	}
	waveOf := map[string]int{}
	for i, w := range waves {
		for _, h := range w {
			waveOf[h] = i
		}
	}
	dir := map[string]node{}
	for _, nd := range nodes {
		dir[nd.name] = nd
	}
	bad := []string{waves[1][0], waves[2][0], waves[stopAt][0]}
	for _, h := range bad {
		if code, out := cliRun("", "sim", "fault", dir[h].dir, "--reset", "power-cycle"); code != 0 {
			t.Fatal(out)
		}
	}
	sw := k.watchSlots("ramp")
	k.start(nodes...)
	cfg := k.config("ramp", "rail", "ramp", firmwareSpec, pol)

	// The line stops at the wave with the third failure.
	for _, h := range bad {
		k.waitState(h, condIs(v1alpha1.ConditionActivationFailed, metav1.ConditionTrue, "ActivationFailed", cfg.Generation))
	}
	var after []string
	for _, w := range waves[stopAt+1:] {
		after = append(after, w...)
	}
	for _, h := range after {
		st := k.waitState(h, condIs(v1alpha1.ConditionActivationRequired, metav1.ConditionTrue, "LineStopped", cfg.Generation))
		msg := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.ConditionActivationRequired).Message
		if want := fmt.Sprintf("wave %d: 3 failed hosts: the policy stops at 3 (stop.failed_hosts)", stopAt+1); !strings.Contains(msg, want) {
			t.Errorf("%s: LineStopped message lacks %q:\n%s", h, want, msg)
		}
		if code := planExit(t, dir[h], firmwareSpec); code != 3 {
			t.Errorf("%s (after the stop): plan exit %d, want 3 (staged)", h, code)
		}
	}
	for i := 0; i <= stopAt; i++ {
		for _, h := range waves[i] {
			if !slices.Contains(bad, h) {
				k.waitState(h, condIs(v1alpha1.ConditionInSync, metav1.ConditionTrue, "InSync", cfg.Generation))
			}
		}
	}
	_, takers := sw.result()
	for _, h := range takers {
		if waveOf[h] > stopAt {
			t.Errorf("%s of wave %d took a slot after the line stopped at wave %d", h, waveOf[h]+1, stopAt+1)
		}
	}
	k.checkOrder(sw, 0, waveOf, cfg.Name, ro.Bake.Duration)

	// A person clears the faults and deletes the failed Leases.
	mark := len(takers)
	for _, h := range bad {
		if code, out := cliRun("", "sim", "fault", dir[h].dir, "--clear"); code != 0 {
			t.Fatal(out)
		}
	}
	for _, l := range k.slotLeases("ramp") {
		if l.Annotations[agent.AnnotationFailed] == "" {
			t.Errorf("lease %s (%s) is not marked failed", l.Name, *l.Spec.HolderIdentity)
		}
		if err := k.c.Delete(context.Background(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: l.Name, Namespace: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	k.activatedAll(nodes, cfg, firmwareSpec)
	_, takers = sw.result()
	var resumed []string
	for _, h := range takers[mark:] {
		if !slices.Contains(bad, h) {
			resumed = append(resumed, h)
		}
	}
	slices.Sort(resumed)
	slices.Sort(after)
	if !slices.Equal(resumed, after) {
		t.Errorf("after the resume, slots taken by %v (beside the failed nodes), want the waves after the stop %v", resumed, after)
	}
	k.checkOrder(sw, mark, waveOf, cfg.Name, ro.Bake.Duration)
}

// checkOrder checks the slots taken from the from'th: a node takes its
// slot only after every node of the waves before its own took theirs
// (failed nodes aside, whose retake after a resume may come later), and
// no earlier than the bake after its wave's predecessor.
func (k *cluster) checkOrder(sw *slotWatch, from int, waveOf map[string]int, config string, bake time.Duration) {
	k.t.Helper()
	sw.mu.Lock()
	before := append([]string(nil), sw.takers[:from]...)
	takers, at := append([]string(nil), sw.takers[from:]...), append([]time.Time(nil), sw.at[from:]...)
	sw.mu.Unlock()
	highest := -1
	for _, h := range takers {
		if slices.Contains(before, h) {
			continue // a failed node's take after the resume
		}
		if w := waveOf[h]; w < highest {
			k.t.Errorf("%s (wave %d) took its slot after a node of wave %d: takers %v", h, w+1, highest+1, takers)
		} else {
			highest = w
		}
	}
	// The bake: a wave's first take comes at least bake after the last
	// node of the wave before it was in sync (InSync's transition, as the
	// agent reads it).
	first := map[int]time.Time{}
	for i, h := range takers {
		w := waveOf[h]
		if t, ok := first[w]; !ok || at[i].Before(t) {
			first[w] = at[i]
		}
	}
	var states v1alpha1.RDMAHostStateList
	if err := k.c.List(context.Background(), &states); err != nil {
		k.t.Fatal(err)
	}
	synced := map[int]time.Time{}
	for _, st := range states.Items {
		w, ok := waveOf[st.Name]
		c := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.ConditionInSync)
		if !ok || c == nil || c.Status != metav1.ConditionTrue {
			continue
		}
		if c.LastTransitionTime.After(synced[w]) {
			synced[w] = c.LastTransitionTime.Time
		}
	}
	for w, t := range first {
		prev, ok := synced[w-1]
		if w == 0 || !ok || prev.After(t) {
			continue // the wave before finished (again) after this one started: a resume
		}
		if t.Before(prev.Add(bake)) {
			k.t.Errorf("wave %d's first slot at %s, less than the bake %s after wave %d was in sync (%s)", w+1, t.Format(time.RFC3339Nano), bake, w, prev.Format(time.RFC3339Nano))
		}
	}
}
