package agent_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rdmaform/rdmaform/agent"
	"github.com/rdmaform/rdmaform/api/v1alpha1"
	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/internal/testlab/kubelab"
	"github.com/rdmaform/rdmaform/sim"
)

// ns holds the activation slots in these tests.
const ns = "rdmaform-system"

// waitLimit bounds every wait: the machine is loaded, so it is generous;
// it is a bound, never an assertion on time.
const waitLimit = 5 * time.Minute

type cluster struct {
	t   *testing.T
	lab *kubelab.Lab
	cfg *rest.Config
	c   client.WithWatch
	// metricsAddress is the agents' --metrics-address ("0": none).
	metricsAddress string
	// interval is the agents' interval (default 3 s); wait bounds each
	// wait (default waitLimit).
	interval, wait time.Duration
}

func newCluster(t *testing.T) *cluster {
	l := lab(t)
	cfg := rest.CopyConfig(l.Config)
	s, err := agent.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return &cluster{t: t, lab: l, cfg: cfg, c: c, interval: 3 * time.Second, wait: waitLimit}
}

// node is one Node object (there is no kubelet: only the API object) and
// the simulated host its agent plans.
type node struct {
	name string
	dir  string
}

// nodes creates Nodes named PREFIX-1..n, each with labels, and a
// simulated cx6-vpi-ib host for each.
func (k *cluster) nodes(prefix string, n int, lbl func(i int) map[string]string) []node {
	k.t.Helper()
	var out []node
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl(i)}}
		if err := k.c.Create(context.Background(), obj); err != nil {
			k.t.Fatal(err)
		}
		st, err := sim.NewState("cx6-vpi-ib", name, 0)
		if err != nil {
			k.t.Fatal(err)
		}
		dir := filepath.Join(k.t.TempDir(), "host")
		if _, err := sim.Create(dir, st); err != nil {
			k.t.Fatal(err)
		}
		out = append(out, node{name: name, dir: dir})
		k.t.Cleanup(func() {
			_ = k.c.Delete(context.Background(), obj)
			_ = k.c.Delete(context.Background(), &v1alpha1.RDMAHostState{ObjectMeta: metav1.ObjectMeta{Name: name}})
		})
	}
	return out
}

// start runs an agent for each node (in-process managers), until the test
// ends, each as the agent's ServiceAccount (deploy/kubernetes/10-rbac.yaml)
// with a token bound to its Node, as the DaemonSet's pod would have: the
// RBAC rules and the own-node admission policy apply to it.
func (k *cluster) start(nodes ...node) {
	k.t.Helper()
	k.startWith(nil, nodes...)
}

func (k *cluster) startWith(m *agent.Metrics, nodes ...node) {
	k.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make([]chan error, len(nodes))
	for i, n := range nodes {
		done[i] = make(chan error, 1)
		o := agent.Options{NodeName: n.name, Namespace: ns, HostArgs: []string{"--sim", n.dir}, Interval: k.interval, Metrics: m}
		cfg, _ := k.lab.AsUser(k.t, "agent-"+n.name, k.lab.Token(k.t, ns, "rdmaform-agent", n.name))
		addr := k.metricsAddress
		if addr == "" {
			addr = "0"
		}
		go func() { done[i] <- agent.Run(ctx, cfg, o, addr) }()
	}
	// The agents stop together (one by one, 200 took minutes).
	k.t.Cleanup(func() {
		cancel()
		for i, n := range nodes {
			if err := <-done[i]; err != nil {
				k.t.Errorf("agent %s: %v", n.name, err)
			}
		}
	})
}

// config creates an RDMAHostConfig selecting label key=value.
func (k *cluster) config(name, key, value, spec string, p v1alpha1.Policy) *v1alpha1.RDMAHostConfig {
	k.t.Helper()
	js, err := yaml.YAMLToJSON([]byte(spec))
	if err != nil {
		k.t.Fatal(err)
	}
	c := &v1alpha1.RDMAHostConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.RDMAHostConfigSpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{key: value}},
			HostSpec:     v1alpha1.HostSpec{Raw: js},
			Policy:       p,
		},
	}
	if err := k.c.Create(context.Background(), c); err != nil {
		k.t.Fatal(err)
	}
	k.t.Cleanup(func() { _ = k.c.Delete(context.Background(), c) })
	return c
}

func (k *cluster) state(name string) (*v1alpha1.RDMAHostState, error) {
	var st v1alpha1.RDMAHostState
	err := k.c.Get(context.Background(), client.ObjectKey{Name: name}, &st)
	return &st, err
}

// waitState waits until the node's state satisfies ok (which says what
// is missing), failing with the last state when the bound passes.
func (k *cluster) waitState(name string, ok func(*v1alpha1.RDMAHostState) string) *v1alpha1.RDMAHostState {
	k.t.Helper()
	deadline := time.Now().Add(k.wait)
	var why string
	for time.Now().Before(deadline) {
		st, err := k.state(name)
		if err == nil {
			if why = ok(st); why == "" {
				return st
			}
		} else {
			why = err.Error()
		}
		time.Sleep(300 * time.Millisecond)
	}
	st, _ := k.state(name)
	b, _ := yaml.Marshal(st.Status)
	k.t.Fatalf("%s: %s\n%s", name, why, b)
	return nil
}

// condIs says what is wrong unless condition typ has status want (and,
// when reason is given, that reason) for the config's generation.
func condIs(typ string, want metav1.ConditionStatus, reason string, gen int64) func(*v1alpha1.RDMAHostState) string {
	return func(st *v1alpha1.RDMAHostState) string {
		c := meta.FindStatusCondition(st.Status.Conditions, typ)
		switch {
		case c == nil:
			return typ + " not set"
		case c.Status != want:
			return fmt.Sprintf("%s is %s (%s: %s), want %s", typ, c.Status, c.Reason, c.Message, want)
		case reason != "" && c.Reason != reason:
			return fmt.Sprintf("%s reason %s (%s), want %s", typ, c.Reason, c.Message, reason)
		case gen > 0 && c.ObservedGeneration != gen:
			return fmt.Sprintf("%s observedGeneration %d, want %d", typ, c.ObservedGeneration, gen)
		}
		return ""
	}
}

// rdmaform runs the CLI on a node's simulated host; spec on stdin.
func rdmaform(dir, spec string, args ...string) (int, string) {
	return cliRun(spec, append([]string{"--sim", dir}, args...)...)
}

func cliRun(stdin string, args ...string) (int, string) {
	var out bytes.Buffer
	code := cli.Run(args, cli.Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &out})
	return code, out.String()
}

// planExit is rdmaform plan's exit code on the node (0: nothing to do,
// nothing pending).
func planExit(t *testing.T, n node, spec string) int {
	t.Helper()
	code, out := rdmaform(n.dir, spec, "plan", "-f", "-")
	if code == 1 {
		t.Fatalf("%s: plan: %s", n.name, out)
	}
	return code
}

func readSim(t *testing.T, n node) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(n.dir, "sim.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// slotWatch records every version of the namespace's slot Leases, and
// the most nodes that ever held a slot of a config at once.
type slotWatch struct {
	mu      sync.Mutex
	holders map[string]string // lease -> holder
	most    int
	takers  []string    // each acquisition: holder, in order
	at      []time.Time // each acquisition's Lease acquireTime
	stop    func()
	done    chan struct{}
}

func (k *cluster) watchSlots(config string) *slotWatch {
	k.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := k.c.Watch(ctx, &coordinationv1.LeaseList{}, client.InNamespace(ns), client.MatchingLabels{agent.LabelConfig: config})
	if err != nil {
		k.t.Fatal(err)
	}
	sw := &slotWatch{holders: map[string]string{}, done: make(chan struct{})}
	sw.stop = func() { cancel(); w.Stop(); <-sw.done }
	go func() {
		defer close(sw.done)
		for ev := range w.ResultChan() {
			l, ok := ev.Object.(*coordinationv1.Lease)
			if !ok {
				continue
			}
			h := ""
			if l.Spec.HolderIdentity != nil {
				h = *l.Spec.HolderIdentity
			}
			sw.mu.Lock()
			if ev.Type == watch.Deleted {
				h = ""
			}
			if h != "" && sw.holders[l.Name] != h {
				sw.takers = append(sw.takers, h)
				var at time.Time
				if l.Spec.AcquireTime != nil {
					at = l.Spec.AcquireTime.Time
				}
				sw.at = append(sw.at, at)
			}
			sw.holders[l.Name] = h
			n := 0
			for _, x := range sw.holders {
				if x != "" {
					n++
				}
			}
			sw.most = max(sw.most, n)
			sw.mu.Unlock()
		}
	}()
	k.t.Cleanup(sw.stop)
	return sw
}

func (sw *slotWatch) result() (int, []string) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.most, append([]string(nil), sw.takers...)
}

func policy(mode v1alpha1.Mode, act v1alpha1.Activation, maxUnavailable int) v1alpha1.Policy {
	mu := intstr.FromInt32(int32(maxUnavailable))
	return v1alpha1.Policy{Mode: mode, Activation: act, MaxUnavailable: &mu}
}

const modulesSpec = "version: 1\nmodules: [rdma_ucm]\n"

// firmwareSpec stages SR-IOV in the firmware (active after a firmware
// reset) besides a module.
const firmwareSpec = `version: 1
modules: [rdma_ucm]
devices:
  - pci: "0000:3b:00.0"
    firmware:
      params: {SRIOV_EN: true, NUM_OF_VFS: 4}
`

// TestConfigSelectsFourOfFive: a config selecting 4 of 5 nodes: those 4
// apply it and report InSync for the config's generation, their hosts
// plan empty; the fifth gets no state and its host is untouched.
func TestConfigSelectsFourOfFive(t *testing.T) {
	k := newCluster(t)
	nodes := k.nodes("four", 5, func(i int) map[string]string {
		if i == 5 {
			return map[string]string{"rail": "other"}
		}
		return map[string]string{"rail": "four"}
	})
	fifth := readSim(t, nodes[4])
	k.start(nodes...)
	cfg := k.config("four", "rail", "four", modulesSpec, policy(v1alpha1.ModeApply, v1alpha1.ActivationNone, 1))
	for _, n := range nodes[:4] {
		st := k.waitState(n.name, condIs(v1alpha1.ConditionInSync, metav1.ConditionTrue, "InSync", cfg.Generation))
		if st.Status.Config != "four" || st.Status.LastApply == nil || st.Status.LastApply.ExitCode != 0 || st.Status.LastApply.Applied != 1 {
			t.Errorf("%s: config %q, last apply %+v", n.name, st.Status.Config, st.Status.LastApply)
		}
		if code := planExit(t, n, modulesSpec); code != 0 {
			t.Errorf("%s: plan after the agent: exit %d, want 0", n.name, code)
		}
	}
	// The fifth: its agent ran all along (its Node exists) but no config
	// selects it.
	if _, err := k.state(nodes[4].name); !apierrors.IsNotFound(err) {
		t.Errorf("%s: state %v, want none", nodes[4].name, err)
	}
	if !bytes.Equal(readSim(t, nodes[4]), fifth) {
		t.Errorf("%s: the simulated host changed", nodes[4].name)
	}
	if code := planExit(t, nodes[4], modulesSpec); code != 2 {
		t.Errorf("%s: plan exit %d, want 2 (untouched)", nodes[4].name, code)
	}

	// A label change brings the fifth in.
	var n5 corev1.Node
	if err := k.c.Get(context.Background(), client.ObjectKey{Name: nodes[4].name}, &n5); err != nil {
		t.Fatal(err)
	}
	n5.Labels["rail"] = "four"
	if err := k.c.Update(context.Background(), &n5); err != nil {
		t.Fatal(err)
	}
	k.waitState(nodes[4].name, condIs(v1alpha1.ConditionInSync, metav1.ConditionTrue, "InSync", cfg.Generation))
	if code := planExit(t, nodes[4], modulesSpec); code != 0 {
		t.Errorf("%s: plan after the label change: exit %d, want 0", nodes[4].name, code)
	}
}

// activatedAll waits until every node is InSync for the config, then
// checks each host plans empty and is schedulable, and no slot is left.
func (k *cluster) activatedAll(nodes []node, cfg *v1alpha1.RDMAHostConfig, spec string) {
	t := k.t
	t.Helper()
	for _, n := range nodes {
		k.waitState(n.name, condIs(v1alpha1.ConditionInSync, metav1.ConditionTrue, "InSync", cfg.Generation))
		if code := planExit(t, n, spec); code != 0 {
			t.Errorf("%s: plan after activation: exit %d, want 0", n.name, code)
		}
		var obj corev1.Node
		if err := k.c.Get(context.Background(), client.ObjectKey{Name: n.name}, &obj); err != nil {
			t.Fatal(err)
		}
		if obj.Spec.Unschedulable {
			t.Errorf("%s: still cordoned", n.name)
		}
	}
	var leases coordinationv1.LeaseList
	if err := k.c.List(context.Background(), &leases, client.InNamespace(ns), client.MatchingLabels{agent.LabelConfig: cfg.Name}); err != nil {
		t.Fatal(err)
	}
	if len(leases.Items) != 0 {
		t.Errorf("%d slots left, want none", len(leases.Items))
	}
}

// TestActivationOneSlotAtATime: a firmware change with activation
// fw-reset and maxUnavailable 1 on 5 nodes: watching the slots, never two
// nodes hold one at once, each node takes one once, and every host ends
// with its firmware active and an empty plan.
func TestActivationOneSlotAtATime(t *testing.T) {
	k := newCluster(t)
	nodes := k.nodes("fw", 5, func(int) map[string]string { return map[string]string{"rail": "fw"} })
	sw := k.watchSlots("fw")
	k.start(nodes...)
	cfg := k.config("fw", "rail", "fw", firmwareSpec, policy(v1alpha1.ModeApply, v1alpha1.ActivationFWReset, 1))
	k.activatedAll(nodes, cfg, firmwareSpec)
	most, takers := sw.result()
	if most != 1 {
		t.Errorf("at most %d nodes held a slot at once, want 1", most)
	}
	seen := map[string]int{}
	for _, h := range takers {
		seen[h]++
	}
	for _, n := range nodes {
		if seen[n.name] != 1 {
			t.Errorf("%s took a slot %d times, want once (takers %v)", n.name, seen[n.name], takers)
		}
	}
}

// TestActivationFailureStopsTheLine: the first node's firmware reset
// fails (the simulator answers that only a power cycle loads the
// firmware): ActivationFailed, it keeps its slot (still cordoned), and
// the other nodes wait (LineStopped) without taking one. A person fixes
// the node and deletes the Lease: the line goes on and every node ends
// active with an empty plan.
func TestActivationFailureStopsTheLine(t *testing.T) {
	k := newCluster(t)
	nodes := k.nodes("stop", 3, func(int) map[string]string { return map[string]string{"rail": "stop"} })
	bad := nodes[0]
	if code, out := cliRun("", "sim", "fault", bad.dir, "--reset", "power-cycle"); code != 0 {
		t.Fatal(out)
	}
	sw := k.watchSlots("stop")
	cfg := k.config("stop", "rail", "stop", firmwareSpec, policy(v1alpha1.ModeApply, v1alpha1.ActivationFWReset, 2))
	k.start(bad)
	st := k.waitState(bad.name, condIs(v1alpha1.ConditionActivationFailed, metav1.ConditionTrue, "ActivationFailed", cfg.Generation))
	msg := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.ConditionActivationFailed).Message
	lease := agent.SlotName("stop", 0)
	if !strings.Contains(msg, "power cycle") || !strings.Contains(msg, "delete lease "+lease) {
		t.Errorf("ActivationFailed message:\n%s", msg)
	}
	var obj corev1.Node
	if err := k.c.Get(context.Background(), client.ObjectKey{Name: bad.name}, &obj); err != nil || !obj.Spec.Unschedulable {
		t.Errorf("%s: unschedulable %v (%v), want cordoned", bad.name, obj.Spec.Unschedulable, err)
	}
	// The others start now: a second slot is free (maxUnavailable 2), but
	// the line is stopped.
	k.start(nodes[1:]...)
	for _, n := range nodes[1:] {
		k.waitState(n.name, condIs(v1alpha1.ConditionActivationRequired, metav1.ConditionTrue, "LineStopped", cfg.Generation))
	}
	if _, takers := sw.result(); strings.Join(takers, ",") != bad.name {
		t.Errorf("slot takers %v, want only %s", takers, bad.name)
	}
	for _, n := range nodes[1:] {
		if code := planExit(t, n, firmwareSpec); code != 3 {
			t.Errorf("%s: plan exit %d, want 3 (staged, not active)", n.name, code)
		}
	}
	// A person acts: the node is power-cycled into firmware that resets
	// (the fault cleared) and the Lease deleted.
	if code, out := cliRun("", "sim", "fault", bad.dir, "--clear"); code != 0 {
		t.Fatal(out)
	}
	if err := k.c.Delete(context.Background(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: lease, Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	k.activatedAll(nodes, cfg, firmwareSpec)
	if most, _ := sw.result(); most > 2 {
		t.Errorf("%d slots held at once, want at most 2", most)
	}
}

// TestConfigConflict: two configs select one node: ConfigConflict naming
// both, no config in its state, and nothing applied.
func TestConfigConflict(t *testing.T) {
	k := newCluster(t)
	nodes := k.nodes("conflict", 1, func(int) map[string]string { return map[string]string{"rail": "conflict", "zone": "z"} })
	before := readSim(t, nodes[0])
	k.config("conflict-a", "rail", "conflict", modulesSpec, policy(v1alpha1.ModeApply, v1alpha1.ActivationNone, 1))
	k.config("conflict-b", "zone", "z", modulesSpec, policy(v1alpha1.ModeApply, v1alpha1.ActivationNone, 1))
	k.start(nodes...)
	st := k.waitState(nodes[0].name, condIs(v1alpha1.ConditionConfigConflict, metav1.ConditionTrue, "ConfigConflict", 0))
	if msg := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.ConditionConfigConflict).Message; !strings.Contains(msg, "conflict-a, conflict-b") {
		t.Errorf("ConfigConflict message %q", msg)
	}
	if st.Status.Config != "" || st.Status.LastApply != nil {
		t.Errorf("config %q, last apply %+v: want none", st.Status.Config, st.Status.LastApply)
	}
	if !bytes.Equal(readSim(t, nodes[0]), before) {
		t.Error("the simulated host changed")
	}
	if code := planExit(t, nodes[0], modulesSpec); code != 2 {
		t.Errorf("plan exit %d, want 2 (nothing applied)", code)
	}
}

// TestBadHostSpec: a hostSpec the API server accepts (its schema keeps
// unknown keys) but rdmaform refuses: Degraded with the finding's
// position and path, nothing applied; the API server itself refuses a
// hostSpec whose version is not 1 (the schema generated from the spec's
// JSON Schema).
func TestBadHostSpec(t *testing.T) {
	k := newCluster(t)
	nodes := k.nodes("badspec", 1, func(int) map[string]string { return map[string]string{"rail": "badspec"} })
	before := readSim(t, nodes[0])
	bad := "version: 1\nmodules: [rdma_ucm]\ndevices:\n  - pci: \"0000:3b:00.0\"\n    ports:\n      - port: 1\n        bogus: 7\n"
	cfg := k.config("badspec", "rail", "badspec", bad, policy(v1alpha1.ModeApply, v1alpha1.ActivationNone, 1))
	k.start(nodes...)
	st := k.waitState(nodes[0].name, condIs(v1alpha1.ConditionDegraded, metav1.ConditionTrue, "SpecError", cfg.Generation))
	msg := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.ConditionDegraded).Message
	// Line 4 of the hostSpec as the agent renders it: the API server
	// keeps an object's keys sorted (devices, modules, version), so the
	// key is on line 4, column 9: "        bogus: 7".
	want := `rdmahostconfig/badspec/spec.hostSpec:4:9: error: $.devices[0].ports[0].bogus: unknown key "bogus"`
	if !strings.Contains(msg, want) {
		t.Errorf("Degraded message:\n%s\nwant it to contain\n%s", msg, want)
	}
	if !bytes.Equal(readSim(t, nodes[0]), before) {
		t.Error("the simulated host changed")
	}
	// version 2: refused by the API server's schema.
	js, _ := yaml.YAMLToJSON([]byte("version: 2\n"))
	c := &v1alpha1.RDMAHostConfig{ObjectMeta: metav1.ObjectMeta{Name: "version2"}, Spec: v1alpha1.RDMAHostConfigSpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"rail": "none"}}, HostSpec: v1alpha1.HostSpec{Raw: js}}}
	err := k.c.Create(context.Background(), c)
	if err == nil {
		_ = k.c.Delete(context.Background(), c)
	}
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.hostSpec.version") {
		t.Errorf("hostSpec version 2: %v, want refused (Invalid) at spec.hostSpec.version", err)
	}
}

// TestActivationByReboot: activation reboot on two nodes, one slot: each
// simulated host reboots through rdmaform activate --by reboot (systemd's
// reboot, which the simulator carries out), and both end active with an
// empty plan, one at a time.
func TestActivationByReboot(t *testing.T) {
	k := newCluster(t)
	nodes := k.nodes("reboot", 2, func(int) map[string]string { return map[string]string{"rail": "reboot"} })
	sw := k.watchSlots("reboot")
	k.start(nodes...)
	cfg := k.config("reboot", "rail", "reboot", firmwareSpec, policy(v1alpha1.ModeApply, v1alpha1.ActivationReboot, 1))
	k.activatedAll(nodes, cfg, firmwareSpec)
	for _, n := range nodes {
		st, err := k.state(n.name)
		if err != nil {
			t.Fatal(err)
		}
		if la := st.Status.LastApply; la == nil || la.Action != "activate" || la.ExitCode != 0 {
			t.Errorf("%s: last apply %+v, want activate, exit 0", n.name, la)
		}
	}
	if most, takers := sw.result(); most != 1 || len(takers) != 2 {
		t.Errorf("at most %d held at once (want 1), takers %v (want 2)", most, takers)
	}
}

// TestEvictionBeforeActivation: with policy.evict the agent evicts the
// node's pods through the Eviction API after cordoning it (a pod there is
// terminating or gone: there is no kubelet to finish it), and leaves a
// DaemonSet's pod and other nodes' pods alone.
func TestEvictionBeforeActivation(t *testing.T) {
	k := newCluster(t)
	nodes := k.nodes("evict", 2, func(i int) map[string]string {
		if i == 2 {
			return map[string]string{"rail": "elsewhere"}
		}
		return map[string]string{"rail": "evict"}
	})
	ctx := context.Background()
	// A pod needs its namespace's ServiceAccount: no controller makes it here.
	k.lab.ServiceAccount(t, "default", "default")
	yes := true
	mkPod := func(name, nodeName string, ds bool) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec:       corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "example.invalid/none"}}},
		}
		if ds {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "0a0b", Controller: &yes}}
		}
		if err := k.c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k.c.Delete(ctx, p, client.GracePeriodSeconds(0)) })
		return p
	}
	work := mkPod("evict-work", nodes[0].name, false)
	ds := mkPod("evict-ds", nodes[0].name, true)
	other := mkPod("evict-other", nodes[1].name, false)
	k.start(nodes[0])
	p := policy(v1alpha1.ModeApply, v1alpha1.ActivationFWReset, 1)
	p.Evict = true
	cfg := k.config("evict", "rail", "evict", firmwareSpec, p)
	k.activatedAll(nodes[:1], cfg, firmwareSpec)
	terminating := func(p *corev1.Pod) bool {
		var got corev1.Pod
		err := k.c.Get(ctx, client.ObjectKeyFromObject(p), &got)
		return apierrors.IsNotFound(err) || (err == nil && got.DeletionTimestamp != nil)
	}
	if !terminating(work) {
		t.Errorf("%s was not evicted", work.Name)
	}
	if terminating(ds) || terminating(other) {
		t.Errorf("evicted a DaemonSet pod (%v) or another node's pod (%v)", terminating(ds), terminating(other))
	}
}
