package agent_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	maintv1 "github.com/Mellanox/maintenance-operator/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rdmaform/rdmaform/agent"
	"github.com/rdmaform/rdmaform/api/v1alpha1"
)

// NVIDIA's maintenance operator in these tests. The Go module proxy
// refuses its module, github.com/Mellanox/maintenance-operator, at every
// version (403 "This module version is not available" for @v/list,
// v0.3.0 and v0.2.3; only its API module, .../api v0.3.0, is served), so
// CI cannot build the operator. The tests install its own CRDs
// (testdata/maintenance-operator, from its repository at the commit of
// api/v0.3.0 and v0.3.0, see PROVENANCE.md there) on the real API server,
// and a played operator takes the steps the operator documents, with the
// API module's types. RDMAFORM_MAINTENANCE_OPERATOR naming the operator's
// binary (its cmd/maintenance-manager built from a checkout of v0.3.0)
// runs the same tests against the real operator instead.

var (
	maintCRDOnce sync.Once
	maintCRDErr  error
)

// maintenanceCRDs installs the operator's CRDs once for the package.
func (k *cluster) maintenanceCRDs() {
	k.t.Helper()
	maintCRDOnce.Do(func() {
		ctx := context.Background()
		dir := filepath.Join("testdata", "maintenance-operator")
		var out string
		if out, maintCRDErr = k.lab.Kubectl(ctx, "apply", "--server-side", "-f", dir+"/"); maintCRDErr != nil {
			maintCRDErr = fmt.Errorf("%v: %s", maintCRDErr, out)
			return
		}
		out, maintCRDErr = k.lab.Kubectl(ctx, "wait", "--for", "condition=established", "--timeout", "120s",
			"crd/nodemaintenances.maintenance.nvidia.com", "crd/maintenanceoperatorconfigs.maintenance.nvidia.com")
		if maintCRDErr != nil {
			maintCRDErr = fmt.Errorf("%v: %s", maintCRDErr, out)
		}
	})
	if maintCRDErr != nil {
		k.t.Fatalf("installing the maintenance operator's CRDs: %v", maintCRDErr)
	}
}

// The operator's annotations (internal/cordon/cordon.go,
// internal/controller/nodemaintenance_controller.go and
// garbage_collector_controller.go at v0.3.0).
const (
	initialStateAnnot = "maintenance.nvidia.com/node-initial-state.unschedulable"
	readyTimeAnnot    = "maintenance.nvidia.com/ready-time"
	gcIgnoreAnnot     = "maintenance.nvidia.com/garbage-collector.ignore"
)

// maintenanceOperator runs the maintenance operator for the test: the
// real one when RDMAFORM_MAINTENANCE_OPERATOR names its binary, else the
// played one, for the NodeMaintenances of nodes named PREFIX*.
func (k *cluster) maintenanceOperator(prefix string) {
	k.t.Helper()
	k.maintenanceCRDs()
	if bin := os.Getenv("RDMAFORM_MAINTENANCE_OPERATOR"); bin != "" {
		k.realOperator(bin)
		return
	}
	po := &playedOperator{k: k, prefix: prefix}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			po.pass(ctx)
			time.Sleep(100 * time.Millisecond)
		}
	}()
	k.t.Cleanup(func() { cancel(); <-done })
}

// realOperator runs the operator's manager against the lab's API server
// as the admin, its webhooks off (ENABLE_WEBHOOKS=false, as its main.go
// allows), its metrics and health endpoints off; it is stopped at the
// test's end by its PID, and its log shown when the test failed.
func (k *cluster) realOperator(bin string) {
	t := k.t
	log := filepath.Join(t.TempDir(), "maintenance-operator.log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--metrics-bind-address=0", "--health-probe-bind-address=0")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+k.lab.Kubeconfig, "ENABLE_WEBHOOKS=false", "OPERATOR_NAMESPACE=maintenance-operator")
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the maintenance operator %s: %v", bin, err)
	}
	t.Logf("maintenance operator %s: pid %d, log %s", bin, cmd.Process.Pid, log)
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		f.Close()
		if t.Failed() {
			b, _ := os.ReadFile(log)
			if len(b) > 20000 {
				b = b[len(b)-20000:]
			}
			t.Logf("maintenance operator log (end):\n%s", b)
		}
	})
}

// playedOperator plays the maintenance operator's documented steps on
// the lab's API server (its README's state diagram and scheduling rules;
// internal/controller/nodemaintenance_controller.go and
// internal/cordon/cordon.go at v0.3.0), as the admin, for the
// NodeMaintenances whose nodeName starts with its prefix:
//   - a new one is Pending (Ready False, reason Pending);
//   - Pending becomes Scheduled only when no other NodeMaintenance of its
//     node is in progress (one per node, oldest first);
//   - Scheduled gets the finalizer and goes to Cordon;
//   - Cordon records the node's schedulability (annotation
//     node-initial-state.unschedulable) and cordons it if spec.cordon,
//     then WaitForPodCompletion, Draining;
//   - Draining, with a drainSpec, evicts the node's pods but DaemonSet
//     pods and waits until they are gone (kubectl's drain, which the
//     operator runs, waits for their deletion); then Ready (Ready True,
//     ready-time annotation);
//   - a Ready one whose requestor set RequestorFailed True goes to reason
//     RequestorFailed (Ready False), and back to Ready when cleared;
//   - a deleted one (its finalizer holds it) waits for its
//     additionalRequestors to clear, uncordons the node if it was
//     schedulable before, and loses the finalizer.
//
// It steps each object one state per pass, every 100 ms.
type playedOperator struct {
	k      *cluster
	prefix string
}

func nmPhase(nm *maintv1.NodeMaintenance) string {
	if c := meta.FindStatusCondition(nm.Status.Conditions, maintv1.ConditionTypeReady); c != nil {
		return c.Reason
	}
	return ""
}

// waitMaintenance waits (up to waitLimit) for the node's NodeMaintenance
// to be in phase (its Ready condition's reason) and returns it.
func (k *cluster) waitMaintenance(node, phase string) *maintv1.NodeMaintenance {
	k.t.Helper()
	name := agent.MaintenanceName(node)
	deadline := time.Now().Add(waitLimit)
	for {
		var nm maintv1.NodeMaintenance
		err := k.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &nm)
		if err == nil && nmPhase(&nm) == phase {
			return &nm
		}
		if time.Now().After(deadline) {
			k.t.Fatalf("NodeMaintenance %s/%s: %v, phase %q, want %s", ns, name, err, nmPhase(&nm), phase)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (po *playedOperator) pass(ctx context.Context) {
	var l maintv1.NodeMaintenanceList
	if err := po.k.c.List(ctx, &l); err != nil {
		return
	}
	sort.Slice(l.Items, func(i, j int) bool {
		return l.Items[i].CreationTimestamp.Before(&l.Items[j].CreationTimestamp) ||
			(l.Items[i].CreationTimestamp.Equal(&l.Items[j].CreationTimestamp) && l.Items[i].Name < l.Items[j].Name)
	})
	busy := map[string]bool{}
	for i := range l.Items {
		if ph := nmPhase(&l.Items[i]); ph != "" && ph != maintv1.ConditionReasonPending {
			busy[l.Items[i].Spec.NodeName] = true
		}
	}
	for i := range l.Items {
		if nm := &l.Items[i]; strings.HasPrefix(nm.Spec.NodeName, po.prefix) {
			_ = po.step(ctx, nm, busy)
		}
	}
}

func (po *playedOperator) setPhase(ctx context.Context, nm *maintv1.NodeMaintenance, reason string) error {
	st := metav1.ConditionFalse
	if reason == maintv1.ConditionReasonReady {
		st = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&nm.Status.Conditions, metav1.Condition{Type: maintv1.ConditionTypeReady, Status: st, Reason: reason, ObservedGeneration: nm.Generation})
	return po.k.c.Status().Update(ctx, nm)
}

func (po *playedOperator) cordon(ctx context.Context, name string, on bool) error {
	var n corev1.Node
	if err := po.k.c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
		return err
	}
	if n.Spec.Unschedulable == on {
		return nil
	}
	patch := client.MergeFrom(n.DeepCopy())
	n.Spec.Unschedulable = on
	return po.k.c.Patch(ctx, &n, patch)
}

func (po *playedOperator) step(ctx context.Context, nm *maintv1.NodeMaintenance, busy map[string]bool) error {
	c := po.k.c
	if nm.DeletionTimestamp != nil {
		if len(nm.Spec.AdditionalRequestors) > 0 {
			return nil
		}
		if nm.Spec.Cordon && nm.Annotations[initialStateAnnot] == "false" {
			if err := po.cordon(ctx, nm.Spec.NodeName, false); err != nil {
				return err
			}
		}
		nm.Finalizers = nil
		return c.Update(ctx, nm)
	}
	switch nmPhase(nm) {
	case "":
		return po.setPhase(ctx, nm, maintv1.ConditionReasonPending)
	case maintv1.ConditionReasonPending:
		if busy[nm.Spec.NodeName] {
			return nil
		}
		busy[nm.Spec.NodeName] = true
		return po.setPhase(ctx, nm, maintv1.ConditionReasonScheduled)
	case maintv1.ConditionReasonScheduled:
		nm.Finalizers = append(nm.Finalizers, maintv1.MaintenanceFinalizerName)
		if err := c.Update(ctx, nm); err != nil {
			return err
		}
		return po.setPhase(ctx, nm, maintv1.ConditionReasonCordon)
	case maintv1.ConditionReasonCordon:
		if nm.Spec.Cordon {
			if _, ok := nm.Annotations[initialStateAnnot]; !ok {
				var n corev1.Node
				if err := c.Get(ctx, client.ObjectKey{Name: nm.Spec.NodeName}, &n); err != nil {
					return err
				}
				metav1.SetMetaDataAnnotation(&nm.ObjectMeta, initialStateAnnot, strconv.FormatBool(n.Spec.Unschedulable))
				if err := c.Update(ctx, nm); err != nil {
					return err
				}
			}
			if nm.Annotations[initialStateAnnot] == "false" {
				if err := po.cordon(ctx, nm.Spec.NodeName, true); err != nil {
					return err
				}
			}
		}
		return po.setPhase(ctx, nm, maintv1.ConditionReasonWaitForPodCompletion)
	case maintv1.ConditionReasonWaitForPodCompletion:
		return po.setPhase(ctx, nm, maintv1.ConditionReasonDraining)
	case maintv1.ConditionReasonDraining:
		if nm.Spec.DrainSpec != nil {
			if left, err := po.drain(ctx, nm.Spec.NodeName); err != nil || left > 0 {
				return err
			}
		}
		return po.setPhase(ctx, nm, maintv1.ConditionReasonReady)
	case maintv1.ConditionReasonReady, maintv1.ConditionReasonRequestorFailed:
		if nm.Annotations[readyTimeAnnot] == "" {
			metav1.SetMetaDataAnnotation(&nm.ObjectMeta, readyTimeAnnot, time.Now().UTC().Format(time.RFC3339))
			if err := c.Update(ctx, nm); err != nil {
				return err
			}
		}
		failed := meta.IsStatusConditionTrue(nm.Status.Conditions, maintv1.ConditionTypeRequestorFailed)
		switch ph := nmPhase(nm); {
		case failed && ph == maintv1.ConditionReasonReady:
			return po.setPhase(ctx, nm, maintv1.ConditionReasonRequestorFailed)
		case !failed && ph == maintv1.ConditionReasonRequestorFailed:
			return po.setPhase(ctx, nm, maintv1.ConditionReasonReady)
		}
	}
	return nil
}

// drain evicts the node's pods but DaemonSet pods (kubectl's drain, which
// the operator uses, leaves those) and counts those not gone yet.
func (po *playedOperator) drain(ctx context.Context, node string) (int, error) {
	var pods corev1.PodList
	if err := po.k.c.List(ctx, &pods, client.MatchingFields{"spec.nodeName": node}); err != nil {
		return 0, err
	}
	left := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		ds := false
		for _, o := range p.OwnerReferences {
			ds = ds || (o.Kind == "DaemonSet" && o.Controller != nil && *o.Controller)
		}
		if ds {
			continue
		}
		left++
		if p.DeletionTimestamp != nil {
			continue
		}
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
		if err := po.k.c.SubResource("eviction").Create(ctx, p, ev); err != nil && !apierrors.IsNotFound(err) {
			return left, err
		}
	}
	return left, nil
}

// nmWatch records, from a watch, each NodeMaintenance's spec as first
// seen and the phases (its Ready condition's reasons) it went through,
// by namespace/name: what the operator did, whichever runs.
type nmWatch struct {
	mu     sync.Mutex
	specs  map[string]maintv1.NodeMaintenanceSpec
	phases map[string][]string
}

func (k *cluster) watchMaintenances() *nmWatch {
	k.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := k.c.Watch(ctx, &maintv1.NodeMaintenanceList{})
	if err != nil {
		k.t.Fatal(err)
	}
	nw := &nmWatch{specs: map[string]maintv1.NodeMaintenanceSpec{}, phases: map[string][]string{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			nm, ok := ev.Object.(*maintv1.NodeMaintenance)
			if !ok {
				continue
			}
			key := nm.Namespace + "/" + nm.Name
			nw.mu.Lock()
			if _, ok := nw.specs[key]; !ok {
				nw.specs[key] = *nm.Spec.DeepCopy()
			}
			ph := nw.phases[key]
			if r := nmPhase(nm); r != "" && (len(ph) == 0 || ph[len(ph)-1] != r) {
				nw.phases[key] = append(ph, r)
			}
			nw.mu.Unlock()
		}
	}()
	k.t.Cleanup(func() { cancel(); w.Stop(); <-done })
	return nw
}

func (nw *nmWatch) record(key string) (maintv1.NodeMaintenanceSpec, []string, bool) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	s, ok := nw.specs[key]
	return s, append([]string(nil), nw.phases[key]...), ok
}

// nodeMaintenances lists the NodeMaintenances of a node, in every
// namespace.
func (k *cluster) nodeMaintenances(node string) []maintv1.NodeMaintenance {
	k.t.Helper()
	var l maintv1.NodeMaintenanceList
	if err := k.c.List(context.Background(), &l); err != nil {
		k.t.Fatal(err)
	}
	var out []maintv1.NodeMaintenance
	for _, nm := range l.Items {
		if nm.Spec.NodeName == node {
			out = append(out, nm)
		}
	}
	return out
}

func operatorPolicy(evict bool) v1alpha1.Policy {
	p := policy(v1alpha1.ModeApply, v1alpha1.ActivationFWReset, 1)
	p.Maintenance = v1alpha1.MaintenanceOperator
	p.Evict = evict
	return p
}

// TestMaintenanceOperatorPath: with policy.maintenance
// maintenance-operator, on two nodes with one slot, the agent holding the
// slot requests a NodeMaintenance for its node (requestor rdmaform.io,
// cordon, and for policy.evict a drainSpec that evicts what the agent's
// own eviction would). While the operator drains (a pod on the node is
// evicted and, with no kubelet, stays terminating) the NodeMaintenance is
// not Ready: the firmware stays staged, the node is cordoned by the
// operator (not by the agent) and the other node has requested nothing.
// Once the pod is gone it is Ready: the agent activates, checks, deletes
// it, and the operator uncordons: every host plans empty, every node is
// schedulable, no NodeMaintenance or slot is left.
func TestMaintenanceOperatorPath(t *testing.T) {
	k := newCluster(t)
	k.maintenanceOperator("maint-")
	nw := k.watchMaintenances()
	nodes := k.nodes("maint", 2, func(int) map[string]string { return map[string]string{"rail": "maint"} })
	busy, other := nodes[0], nodes[1]
	work := k.lab.CreatePod(t, "default", "maint-work", busy.name)
	t.Cleanup(func() { _ = k.c.Delete(context.Background(), work, client.GracePeriodSeconds(0)) })
	k.start(nodes...)
	cfg := k.config("maint", "rail", "maint", firmwareSpec, operatorPolicy(true))

	// The node with the pod: its NodeMaintenance drains and waits.
	key := ns + "/" + agent.MaintenanceName(busy.name)
	k.waitMaintenance(busy.name, maintv1.ConditionReasonDraining)
	waiting := condIs(v1alpha1.ConditionActivationRequired, metav1.ConditionTrue, "WaitingForMaintenance", cfg.Generation)
	st := k.waitState(busy.name, func(st *v1alpha1.RDMAHostState) string {
		if why := waiting(st); why != "" {
			return why
		}
		if msg := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.ConditionActivationRequired).Message; !strings.Contains(msg, key+" to be Ready (Draining)") {
			return "waiting message " + msg
		}
		return ""
	})
	if st.Status.Maintenance != key {
		t.Errorf("%s: state's maintenance %q, want %s", busy.name, st.Status.Maintenance, key)
	}
	if code := planExit(t, busy, firmwareSpec); code != 3 {
		t.Errorf("%s: plan exit %d before the NodeMaintenance is Ready, want 3 (staged, not activated)", busy.name, code)
	}
	if n := k.nodeObj(busy.name); !n.Spec.Unschedulable || n.Annotations[agent.AnnotationCordoned] != "" {
		t.Errorf("%s: unschedulable %v, annotations %v: want cordoned by the operator alone", busy.name, n.Spec.Unschedulable, n.Annotations)
	}
	var pod corev1.Pod
	if err := k.c.Get(context.Background(), client.ObjectKeyFromObject(work), &pod); err != nil || pod.DeletionTimestamp == nil {
		t.Errorf("%s: %v, deletion %v: want evicted by the drain", work.Name, err, pod.DeletionTimestamp)
	}
	if got := k.nodeMaintenances(other.name); len(got) != 0 {
		t.Errorf("%s has %d NodeMaintenances while %s holds the one slot", other.name, len(got), busy.name)
	}

	// The pod's kubelet would finish it: the drain ends.
	k.lab.FinishTerminatingPods(t)
	k.activatedAll(nodes, cfg, firmwareSpec)
	for _, n := range nodes {
		if got := k.nodeMaintenances(n.name); len(got) != 0 {
			t.Errorf("%s: %d NodeMaintenances left", n.name, len(got))
		}
		spec, phases, ok := nw.record(ns + "/" + agent.MaintenanceName(n.name))
		if !ok {
			t.Errorf("%s: no NodeMaintenance was requested", n.name)
			continue
		}
		d := spec.DrainSpec
		if spec.RequestorID != agent.MaintenanceRequestor || spec.NodeName != n.name || !spec.Cordon || d == nil || !d.Force || !d.DeleteEmptyDir || d.TimeoutSecond != 300 || d.PodSelector != "" {
			t.Errorf("%s: NodeMaintenance spec %+v (drain %+v)", n.name, spec, d)
		}
		if want := "Pending Scheduled Cordon WaitForPodCompletion Draining Ready"; strings.Join(phases, " ") != want {
			t.Errorf("%s: phases %v, want %s", n.name, phases, want)
		}
		if st, err := k.state(n.name); err != nil || st.Status.Maintenance != "" {
			t.Errorf("%s: state's maintenance %q (%v), want none after the release", n.name, st.Status.Maintenance, err)
		}
	}
}

// TestMaintenanceOtherRequestorBlocks: a NodeMaintenance of another
// requestor (the network operator's) holds the node: the agent requests
// none, takes no slot and says which one it waits for; the firmware
// stays staged. Once the other requestor deletes its NodeMaintenance (the
// operator uncordons), the agent goes on and the host ends active. The
// agent's token may not request maintenance of another node, nor of its
// own in another namespace or as another requestor.
func TestMaintenanceOtherRequestorBlocks(t *testing.T) {
	k := newCluster(t)
	k.maintenanceOperator("busy-")
	nw := k.watchMaintenances()
	nodes := k.nodes("busy", 1, func(int) map[string]string { return map[string]string{"rail": "busy"} })
	n := nodes[0]
	k.lab.ServiceAccount(t, "nvidia-network-operator", "default")
	theirs := &maintv1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: "netop-" + n.name, Namespace: "nvidia-network-operator"},
		Spec:       maintv1.NodeMaintenanceSpec{RequestorID: "nvidia.network.operator", NodeName: n.name, Cordon: true},
	}
	ctx := context.Background()
	if err := k.c.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	// It is Ready (the node cordoned for them) before the agent starts.
	deadline := time.Now().Add(waitLimit)
	for {
		if err := k.c.Get(ctx, client.ObjectKeyFromObject(theirs), theirs); err != nil {
			t.Fatal(err)
		}
		if nmPhase(theirs) == maintv1.ConditionReasonReady {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the other requestor's NodeMaintenance is %q", nmPhase(theirs))
		}
		time.Sleep(100 * time.Millisecond)
	}
	k.start(n)
	cfg := k.config("busy", "rail", "busy", firmwareSpec, operatorPolicy(false))
	st := k.waitState(n.name, condIs(v1alpha1.ConditionActivationRequired, metav1.ConditionTrue, "WaitingForMaintenance", cfg.Generation))
	want := "nvidia-network-operator/netop-busy-1 (requestor nvidia.network.operator, Ready)"
	if msg := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.ConditionActivationRequired).Message; !strings.Contains(msg, want) {
		t.Errorf("waiting message %q, want it to name %s", msg, want)
	}
	// A few reconciles later (interval 3 s) still nothing requested.
	time.Sleep(7 * time.Second)
	if got := k.nodeMaintenances(n.name); len(got) != 1 {
		t.Errorf("%d NodeMaintenances on %s while another requestor's holds it, want only theirs", len(got), n.name)
	}
	if l := k.slotLeases("busy"); len(l) != 0 {
		t.Errorf("%d slots taken while another requestor holds the node", len(l))
	}
	if code := planExit(t, n, firmwareSpec); code != 3 {
		t.Errorf("plan exit %d, want 3 (staged, not activated)", code)
	}

	// What the agent's own token may not do.
	cfgAgent, _ := k.lab.AsUser(t, "agent-"+n.name, k.lab.Token(t, ns, "rdmaform-agent", n.name))
	s, err := agent.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	ac, err := client.New(cfgAgent, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	for what, nm := range map[string]*maintv1.NodeMaintenance{
		"another node's":        {ObjectMeta: metav1.ObjectMeta{Name: "rdmaform-elsewhere", Namespace: ns}, Spec: maintv1.NodeMaintenanceSpec{RequestorID: agent.MaintenanceRequestor, NodeName: "elsewhere", Cordon: true}},
		"another requestor's":   {ObjectMeta: metav1.ObjectMeta{Name: "as-netop", Namespace: ns}, Spec: maintv1.NodeMaintenanceSpec{RequestorID: "nvidia.network.operator", NodeName: n.name, Cordon: true}},
		"another namespace's":   {ObjectMeta: metav1.ObjectMeta{Name: agent.MaintenanceName(n.name), Namespace: "default"}, Spec: maintv1.NodeMaintenanceSpec{RequestorID: agent.MaintenanceRequestor, NodeName: n.name, Cordon: true}},
		"the other requestor's": theirs,
	} {
		var err error
		if what == "the other requestor's" {
			err = ac.Delete(ctx, nm)
		} else {
			err = ac.Create(ctx, nm)
		}
		if !apierrors.IsForbidden(err) {
			t.Errorf("the agent's token writing %s NodeMaintenance: %v, want forbidden", what, err)
		}
	}

	// The network operator is done.
	if err := k.c.Delete(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	k.activatedAll(nodes, cfg, firmwareSpec)
	spec, _, ok := nw.record(ns + "/" + agent.MaintenanceName(n.name))
	if !ok || spec.DrainSpec != nil || !spec.Cordon {
		t.Errorf("the agent's NodeMaintenance %+v (recorded %v): want cordon and no drain without policy.evict", spec, ok)
	}
}

// gateSpec stages firmware, gives ib1 an address and measures the
// bandwidth to a peer on its subnet with a floor of 90 % of the port's
// rate (the simulated HDR port's 200 Gb/s).
const gateSpec = firmwareSpec + `interfaces:
  - name: ib1
    state: up
    addresses: [192.0.2.11/24]
probes:
  - name: ping-peer
    ping: {to: 192.0.2.12}
  - name: bw
    bandwidth: {to: 192.0.2.12, netdev: ib1, duration: 1s, floor: 90%}
`

// gateOf is the state's result for a gate probe.
func gateOf(t *testing.T, st *v1alpha1.RDMAHostState, name string) v1alpha1.GateResult {
	t.Helper()
	for _, g := range st.Status.Gates {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("no gate result for %s in %+v", name, st.Status.Gates)
	return v1alpha1.GateResult{}
}

func figure(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("figure %q: %v", s, err)
	}
	return v
}

// TestBandwidthGateBeforeUncordon: policy.gates names the hostSpec's
// bandwidth probe. A simulated host whose runs measure half the port's
// rate (sim fault --slow 0.5) activates (the plan is empty) but fails the
// gate: it stays cordoned, its slot marked failed with the probe's
// figures, which its state's gates give (bandwidth below the floor).
// Once the fault is cleared, a later reconcile measures again, passes,
// uncordons it and releases the slot.
func TestBandwidthGateBeforeUncordon(t *testing.T) {
	k := newCluster(t)
	nodes := k.nodes("gate", 1, func(int) map[string]string { return map[string]string{"rail": "gate"} })
	n := nodes[0]
	if code, out := cliRun("", "sim", "fault", n.dir, "--slow", "0.5"); code != 0 {
		t.Fatal(out)
	}
	p := policy(v1alpha1.ModeApply, v1alpha1.ActivationFWReset, 1)
	p.Gates = &v1alpha1.Gates{Probes: []string{"bw"}}
	k.start(n)
	cfg := k.config("gate", "rail", "gate", gateSpec, p)
	st := k.waitState(n.name, condIs(v1alpha1.ConditionActivationFailed, metav1.ConditionTrue, "ActivationFailed", cfg.Generation))
	g := gateOf(t, st, "bw")
	if g.Outcome != "failed" || g.Kind != "bandwidth" || g.Target != "192.0.2.12" || figure(t, g.FloorGbps) != 180 || figure(t, g.BandwidthGbps) >= 180 || !strings.Contains(g.Reason, "below the floor") {
		t.Errorf("gate result %+v: want failed, below the floor of 180 Gb/s", g)
	}
	if len(st.Status.Gates) != 1 {
		t.Errorf("gates %+v: want the one the policy names", st.Status.Gates)
	}
	if code := planExit(t, n, gateSpec); code != 0 {
		t.Errorf("plan exit %d after the activation, want 0 (it took; only the gate failed)", code)
	}
	if obj := k.nodeObj(n.name); !obj.Spec.Unschedulable {
		t.Errorf("%s: uncordoned although its bandwidth gate failed", n.name)
	}
	ls := k.slotLeases("gate")
	if len(ls) != 1 || !strings.Contains(ls[0].Annotations[agent.AnnotationFailed], "probe bw (bandwidth to 192.0.2.12) failed") {
		t.Fatalf("slots %+v: want one, marked failed by the gate", ls)
	}

	if c := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.ConditionInSync); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "GateFailed" {
		t.Errorf("InSync %+v, want False (GateFailed) while the gate keeps the node out", c)
	}

	if code, out := cliRun("", "sim", "fault", n.dir, "--clear"); code != 0 {
		t.Fatal(out)
	}
	k.activatedAll(nodes, cfg, gateSpec)
	st = k.waitState(n.name, condIs(v1alpha1.ConditionActivationFailed, metav1.ConditionFalse, "", cfg.Generation))
	if g := gateOf(t, st, "bw"); g.Outcome != "passed" || figure(t, g.BandwidthGbps) < 180 {
		t.Errorf("gate result after the fault cleared %+v: want passed, at least 180 Gb/s", g)
	}
}

// TestMaintenanceGateFailureKeepsNodeOut: the maintenance operator's path
// with the bandwidth gate: the slow host activates, fails the gate, and
// its NodeMaintenance stays, marked RequestorFailed and kept from the
// operator's garbage collector, the node cordoned; the failure stops the
// line (the second node takes no slot). Cleared, the next reconcile
// passes the gate and deletes the NodeMaintenance, the operator
// uncordons, and the second node goes on. The agents run as the agent's
// ServiceAccount and every NodeMaintenance verb 10-rbac.yaml grants is
// used (checkGrants).
func TestMaintenanceGateFailureKeepsNodeOut(t *testing.T) {
	k := newCluster(t)
	k.maintenanceOperator("mgate-")
	nodes := k.nodes("mgate", 2, func(int) map[string]string { return map[string]string{"rail": "mgate"} })
	bad := nodes[0]
	if code, out := cliRun("", "sim", "fault", bad.dir, "--slow", "0.5"); code != 0 {
		t.Fatal(out)
	}
	p := operatorPolicy(false)
	p.Gates = &v1alpha1.Gates{Probes: []string{"bw", "ping-peer"}}
	rec := &recorder{}
	k.startRecorded(rec, nil, 3*time.Second, bad)
	cfg := k.config("mgate", "rail", "mgate", gateSpec, p)
	st := k.waitState(bad.name, condIs(v1alpha1.ConditionActivationFailed, metav1.ConditionTrue, "ActivationFailed", cfg.Generation))
	key := ns + "/" + agent.MaintenanceName(bad.name)
	msg := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.ConditionActivationFailed).Message
	if !strings.Contains(msg, "NodeMaintenance "+key+" stays, marked RequestorFailed") || !strings.Contains(msg, "below the floor") {
		t.Errorf("ActivationFailed message:\n%s", msg)
	}
	if g := gateOf(t, st, "ping-peer"); g.Outcome != "passed" {
		t.Errorf("ping gate %+v, want passed", g)
	}
	nm := k.waitMaintenance(bad.name, maintv1.ConditionReasonRequestorFailed)
	if c := meta.FindStatusCondition(nm.Status.Conditions, maintv1.ConditionTypeRequestorFailed); c == nil || c.Reason != maintv1.ConditionReasonFailedMaintenance || !strings.Contains(c.Message, "bandwidth") {
		t.Errorf("RequestorFailed condition %+v", c)
	}
	if nm.Annotations[gcIgnoreAnnot] != "true" {
		t.Errorf("annotations %v: want the garbage collector kept off", nm.Annotations)
	}
	if obj := k.nodeObj(bad.name); !obj.Spec.Unschedulable {
		t.Errorf("%s: uncordoned although its gate failed", bad.name)
	}
	k.startRecorded(rec, nil, 3*time.Second, nodes[1])
	k.waitState(nodes[1].name, condIs(v1alpha1.ConditionActivationRequired, metav1.ConditionTrue, "LineStopped", cfg.Generation))
	if got := k.nodeMaintenances(nodes[1].name); len(got) != 0 {
		t.Errorf("%s requested maintenance while the line is stopped", nodes[1].name)
	}

	if code, out := cliRun("", "sim", "fault", bad.dir, "--clear"); code != 0 {
		t.Fatal(out)
	}
	k.activatedAll(nodes, cfg, gateSpec)
	for _, n := range nodes {
		if got := k.nodeMaintenances(n.name); len(got) != 0 {
			t.Errorf("%s: %d NodeMaintenances left", n.name, len(got))
		}
	}
	checkGrants(t, rec, func(g grant) bool { return g.group == maintenanceGroup })
}
