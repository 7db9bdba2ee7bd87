// The manifests of deploy/kubernetes/ on a real API server (the
// Kubernetes lab, internal/testlab/kubelab): every one is accepted, and
// the agent's ServiceAccount, with a token bound to its node as a pod's
// projected token is, may do what the agent needs and nothing else.
package kubernetes_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/rdmaform/rdmaform/internal/testlab/kubelab"
)

const (
	namespace = "rdmaform-system"
	agentSA   = "rdmaform-agent"
	policy    = "rdmaform-agent-own-node"
)

var (
	configs = schema.GroupVersionResource{Group: "rdmaform.io", Version: "v1alpha1", Resource: "rdmahostconfigs"}
	states  = schema.GroupVersionResource{Group: "rdmaform.io", Version: "v1alpha1", Resource: "rdmahoststates"}
)

var lab kubelab.Shared

func TestMain(m *testing.M) { os.Exit(lab.Run(m)) }

var (
	applyOnce sync.Once
	applyErr  error
)

// applied is the package's lab with deploy/kubernetes applied the way
// docs/guides/kubernetes.md says: the CRDs, then the directory.
func applied(t *testing.T) *kubelab.Lab {
	t.Helper()
	l := lab.Get(t)
	applyOnce.Do(func() {
		ctx := context.Background()
		if _, applyErr = l.Kubectl(ctx, "apply", "--server-side", "-f", "crds"); applyErr != nil {
			return
		}
		if _, applyErr = l.Kubectl(ctx, "wait", "--for", "condition=Established", "--timeout", "60s",
			"crd/rdmahostconfigs.rdmaform.io", "crd/rdmahoststates.rdmaform.io"); applyErr != nil {
			return
		}
		_, applyErr = l.Kubectl(ctx, "apply", "--server-side", "-f", ".")
	})
	if applyErr != nil {
		t.Fatal(applyErr)
	}
	return l
}

// TestManifestsAreAccepted: the API server takes every manifest of
// deploy/kubernetes/ and deploy/kubernetes/crds/ with strict field validation (kubectl apply
// --server-side), and then has each object; a manifest with a field the
// API does not have is refused, so acceptance means something.
func TestManifestsAreAccepted(t *testing.T) {
	l := applied(t)
	ctx := context.Background()
	files, err := filepath.Glob("*.yaml")
	crds, err2 := filepath.Glob("crds/*.yaml")
	files = append(files, crds...)
	if err != nil || err2 != nil || len(files) < 6 {
		t.Fatalf("manifests: %v %v", files, err)
	}
	for _, f := range files {
		out, err := l.Kubectl(ctx, "get", "-f", f, "-o", "name")
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		t.Logf("%s: %s", f, strings.Join(strings.Fields(out), " "))
	}
	for _, want := range []string{
		"daemonset.apps/rdmaform-agent", "serviceaccount/rdmaform-agent",
		"clusterrole.rbac.authorization.k8s.io/rdmaform-agent",
		"validatingadmissionpolicy.admissionregistration.k8s.io/" + policy,
	} {
		if _, err := l.Kubectl(ctx, "get", "-n", namespace, want, "-o", "name"); err != nil {
			t.Error(err)
		}
	}

	ds, err := os.ReadFile("30-daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(ds), "hostNetwork: true", "hostNetwork: true\n      hostNetworking: true", 1)
	_, err = l.KubectlWith(ctx, l.Kubeconfig, []byte(bad), "apply", "--server-side", "--dry-run=server", "-f", "-")
	if err == nil || !strings.Contains(err.Error(), "hostNetworking") {
		t.Errorf("a DaemonSet with an unknown field: %v, want it refused naming the field", err)
	}
}

// agent is the agent's clients, as the agent on node sees the API.
type agent struct {
	node string
	core kubernetes.Interface
	dyn  dynamic.Interface
}

// newAgent is the agent on node as the DaemonSet runs it: a pod made from
// the DaemonSet's template (as its controller would, there being none
// here) bound to node, and the token the kubelet would project into it,
// bound to that pod.
func newAgent(t *testing.T, l *kubelab.Lab, node string) agent {
	t.Helper()
	ctx := context.Background()
	ds, err := l.Client.AppsV1().DaemonSets(namespace).Get(ctx, "rdmaform-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: *ds.Spec.Template.ObjectMeta.DeepCopy(),
		Spec:       *ds.Spec.Template.Spec.DeepCopy(),
	}
	pod.Name, pod.Namespace, pod.Spec.NodeName = "rdmaform-agent-"+node, namespace, node
	if _, err := l.Client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the DaemonSet's pod on %s: %v", node, err)
	}
	cfg, _ := l.AsUser(t, "agent-"+node, l.PodToken(t, namespace, agentSA, pod.Name))
	return agent{node: node, core: kubernetes.NewForConfigOrDie(cfg), dyn: dynamic.NewForConfigOrDie(cfg)}
}

func state(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rdmaform.io/v1alpha1", "kind": "RDMAHostState",
		"metadata": map[string]any{"name": name},
	}}
}

func hostConfig(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rdmaform.io/v1alpha1", "kind": "RDMAHostConfig",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"nodeSelector": map[string]any{"matchLabels": map[string]any{"rdmaform.io/pool": "rbac"}},
			"hostSpec":     map[string]any{"version": 1},
			"policy":       map[string]any{"mode": "audit", "activation": "none", "maxUnavailable": 1},
		},
	}}
}

// forbidden fails t unless err is the API server's 403 and its message
// has each of want.
func forbidden(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: %v, want forbidden", what, err)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: forbidden, but %q does not say %q", what, err, w)
		}
	}
}

// statusSubresource is how RDMAHostState's status is written: through
// the status subresource when its CRD has one, else with the object.
func statusSubresource(t *testing.T, admin dynamic.Interface) []string {
	t.Helper()
	crd, err := admin.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
		Get(context.Background(), "rdmahoststates.rdmaform.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		if v.(map[string]any)["name"] != states.Version {
			continue
		}
		if _, ok, _ := unstructured.NestedMap(v.(map[string]any), "subresources", "status"); ok {
			return []string{"status"}
		}
		return nil
	}
	t.Fatalf("the RDMAHostState CRD serves no %s", states.Version)
	return nil
}

// policyLoaded waits until the admission policy refuses the agent on
// node a writing node b's state (a server-side dry run: nothing is
// written), as the API server loads a new policy in the background.
func policyLoaded(t *testing.T, a agent, other string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := a.dyn.Resource(states).Create(ctx, state(other), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), policy) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the admission policy %s is not in force after 60 s: a dry-run write of another node's state: %v", policy, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestAgentLeastPrivilege: with the agent's ServiceAccount and the token
// of its pod on its node, the agent lists configs and Nodes, creates and
// updates its own node's state (its status with it), cordons its own
// Node, takes a slot Lease and evicts a pod; it may not write another
// node's state (the admission policy refuses it), get, create or change a
// config, patch or delete a state, delete a Node, cordon another Node or
// relabel its own, take a Lease outside its namespace, record events or
// read Secrets (RBAC refuses them: the verbs the agent never uses are not
// granted, agent/rbac_test.go). A token of the same ServiceAccount bound
// to no node writes no state at all.
func TestAgentLeastPrivilege(t *testing.T) {
	l := applied(t)
	ctx := context.Background()
	l.CreateNode(t, "rbac-1", map[string]string{"rdmaform.io/pool": "rbac"})
	l.CreateNode(t, "rbac-2", map[string]string{"rdmaform.io/pool": "rbac"})
	admin := dynamic.NewForConfigOrDie(l.Config)
	if _, err := admin.Resource(configs).Create(ctx, hostConfig("rbac"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Resource(states).Create(ctx, state("rbac-2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	a := newAgent(t, l, "rbac-1")
	policyLoaded(t, a, "rbac-3")

	// Reading.
	if list, err := a.dyn.Resource(configs).List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) == 0 {
		t.Errorf("list RDMAHostConfigs: %v (%d items)", err, len(list.Items))
	}
	_, err := a.dyn.Resource(configs).Get(ctx, "rbac", metav1.GetOptions{})
	forbidden(t, "get an RDMAHostConfig", err, "cannot get resource \"rdmahostconfigs\"")
	if _, err := a.core.CoreV1().Nodes().Get(ctx, "rbac-1", metav1.GetOptions{}); err != nil {
		t.Errorf("get Node: %v", err)
	}
	if _, err := a.core.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "rdmaform.io/pool=rbac"}); err != nil {
		t.Errorf("list Nodes: %v", err)
	}

	// Its own state: create, then update with its status (the CRD has no
	// status subresource: the agent writes the object whole).
	own, err := a.dyn.Resource(states).Create(ctx, state("rbac-1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the agent on rbac-1 creates its own state: %v", err)
	}
	if sub := statusSubresource(t, admin); len(sub) > 0 {
		t.Errorf("RDMAHostState has a status subresource: the agent's rules (10-rbac.yaml) grant no rdmahoststates/status")
	}
	withStatus := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		u = u.DeepCopy()
		_ = unstructured.SetNestedMap(u.Object, map[string]any{"config": "rbac", "conditions": []any{map[string]any{
			"type": "InSync", "status": "True", "reason": "PlanEmpty", "message": "", "lastTransitionTime": "2026-11-26T00:00:00Z"}}}, "status")
		return u
	}
	if got, err := a.dyn.Resource(states).Update(ctx, withStatus(own), metav1.UpdateOptions{}); err != nil {
		t.Errorf("update its own state's status: %v", err)
	} else if c, _, _ := unstructured.NestedString(got.Object, "status", "config"); c != "rbac" {
		t.Errorf("its own state's status after the update: %v", got.Object["status"])
	}
	_, err = a.dyn.Resource(states).Patch(ctx, "rbac-1", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
	forbidden(t, "patch its own state", err, "cannot patch resource \"rdmahoststates\"")

	// Another node's state: refused by the policy, whatever the verb
	// RBAC grants.
	_, err = a.dyn.Resource(states).Create(ctx, state("rbac-3"), metav1.CreateOptions{})
	forbidden(t, "create another node's state", err, policy, "rbac-1 may not write rdmahoststates rbac-3")
	other, err := admin.Resource(states).Get(ctx, "rbac-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.dyn.Resource(states).Update(ctx, withStatus(other), metav1.UpdateOptions{})
	forbidden(t, "update another node's state", err, policy, "rbac-1 may not write rdmahoststates rbac-2")
	err = a.dyn.Resource(states).Delete(ctx, "rbac-2", metav1.DeleteOptions{})
	forbidden(t, "delete another node's state", err, "cannot delete resource \"rdmahoststates\"")
	// Nor through a token of its ServiceAccount bound to no node.
	cfg, _ := l.AsUser(t, "agent-unbound", l.Token(t, namespace, agentSA, ""))
	mine, err := admin.Resource(states).Get(ctx, "rbac-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = dynamic.NewForConfigOrDie(cfg).Resource(states).Update(ctx, withStatus(mine), metav1.UpdateOptions{})
	forbidden(t, "write a state with an unbound token", err, policy, "bound to no node")
	if got, err := admin.Resource(states).Get(ctx, "rbac-2", metav1.GetOptions{}); err != nil || len(got.GetLabels()) != 0 {
		t.Errorf("rbac-2's state after the refused writes: %v, labels %v", err, got.GetLabels())
	}
	if _, err := admin.Resource(states).Get(ctx, "rbac-3", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("rbac-3's state exists after a refused create: %v", err)
	}

	// Configs: read only (RBAC).
	_, err = a.dyn.Resource(configs).Create(ctx, hostConfig("rbac-agent"), metav1.CreateOptions{})
	forbidden(t, "create an RDMAHostConfig", err, "cannot create resource \"rdmahostconfigs\"")
	_, err = a.dyn.Resource(configs).Patch(ctx, "rbac", types.MergePatchType, []byte(`{"spec":{"policy":{"mode":"apply"}}}`), metav1.PatchOptions{})
	forbidden(t, "change an RDMAHostConfig", err, "cannot patch resource \"rdmahostconfigs\"")
	_, err = a.dyn.Resource(configs).Patch(ctx, "rbac", types.MergePatchType, []byte(`{"status":{}}`), metav1.PatchOptions{}, "status")
	forbidden(t, "change an RDMAHostConfig's status", err, "rdmahostconfigs/status")

	// Nodes: cordon and uncordon its own; nothing else.
	cordon := []byte(`{"spec":{"unschedulable":true}}`)
	if _, err := a.core.CoreV1().Nodes().Patch(ctx, "rbac-1", types.StrategicMergePatchType, cordon, metav1.PatchOptions{}); err != nil {
		t.Errorf("cordon its own Node: %v", err)
	}
	if _, err := a.core.CoreV1().Nodes().Patch(ctx, "rbac-1", types.StrategicMergePatchType, []byte(`{"spec":{"unschedulable":null}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("uncordon its own Node: %v", err)
	}
	_, err = a.core.CoreV1().Nodes().Patch(ctx, "rbac-2", types.StrategicMergePatchType, cordon, metav1.PatchOptions{})
	forbidden(t, "cordon another Node", err, policy, "may not write nodes rbac-2")
	_, err = a.core.CoreV1().Nodes().Patch(ctx, "rbac-1", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"rdmaform.io/pool":"other"}}}`), metav1.PatchOptions{})
	forbidden(t, "relabel its own Node", err, policy, "not change its labels or taints")
	_, err = a.core.CoreV1().Nodes().Patch(ctx, "rbac-1", types.StrategicMergePatchType, []byte(`{"spec":{"taints":[{"key":"x","effect":"NoSchedule"}]}}`), metav1.PatchOptions{})
	forbidden(t, "taint its own Node", err, policy, "not change its labels or taints")
	err = a.core.CoreV1().Nodes().Delete(ctx, "rbac-2", metav1.DeleteOptions{})
	forbidden(t, "delete a Node", err, "cannot delete resource \"nodes\"")
	err = a.core.CoreV1().Nodes().Delete(ctx, "rbac-1", metav1.DeleteOptions{})
	forbidden(t, "delete its own Node", err, "cannot delete resource \"nodes\"")
	_, err = a.core.CoreV1().Nodes().UpdateStatus(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "rbac-1"}}, metav1.UpdateOptions{})
	forbidden(t, "write a Node's status", err, "nodes/status")

	// Slots: Leases in its namespace, not elsewhere.
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "rbac-slot-0"}}
	if _, err := a.core.CoordinationV1().Leases(namespace).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Errorf("create a Lease in %s: %v", namespace, err)
	}
	_, err = a.core.CoordinationV1().Leases("default").Create(ctx, lease, metav1.CreateOptions{})
	forbidden(t, "create a Lease in default", err, "leases")

	// Draining: list the node's pods, evict one.
	l.ServiceAccount(t, "rbac-work", "default")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "rbac-work"},
		Spec:       corev1.PodSpec{NodeName: "rbac-1", Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}},
	}
	if _, err := l.Client.CoreV1().Pods("rbac-work").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods, err := a.core.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=rbac-1"})
	if err != nil {
		t.Errorf("list the node's pods: %v", err)
	} else {
		var names []string
		for _, p := range pods.Items {
			names = append(names, p.Namespace+"/"+p.Name)
		}
		if strings.Join(names, " ") != "rbac-work/job rdmaform-system/rdmaform-agent-rbac-1" {
			t.Errorf("the node's pods: %v, want its job and its agent", names)
		}
	}
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "rbac-work"}}
	if err := a.core.CoreV1().Pods("rbac-work").EvictV1(ctx, ev); err != nil {
		t.Errorf("evict a pod: %v", err)
	}
	err = a.core.CoreV1().Pods("rbac-work").Delete(ctx, "job", metav1.DeleteOptions{})
	forbidden(t, "delete a pod", err, "cannot delete resource \"pods\"")

	// An event about its state.
	event := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "rbac-1.event", Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{APIVersion: "rdmaform.io/v1alpha1", Kind: "RDMAHostState", Name: "rbac-1"},
		Reason:         "InSync", Message: "the plan is empty", Type: corev1.EventTypeNormal,
	}
	_, err = a.core.CoreV1().Events("default").Create(ctx, event, metav1.CreateOptions{})
	forbidden(t, "record an event", err, "cannot create resource \"events\"")

	// Nothing else.
	_, err = a.core.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{})
	forbidden(t, "list Secrets", err, "secrets")
	_, err = a.core.RbacV1().ClusterRoles().Get(ctx, "rdmaform-agent", metav1.GetOptions{})
	forbidden(t, "read its ClusterRole", err, "clusterroles")

	// Its own state: it never deletes it.
	err = a.dyn.Resource(states).Delete(ctx, "rbac-1", metav1.DeleteOptions{})
	forbidden(t, "delete its own state", err, "cannot delete resource \"rdmahoststates\"")
}

// TestCRDRefusesUnsafeNetdevName: whoever may write an RDMAHostConfig
// gives its nodes' netdev names, which the agent writes into a udev rule
// (devices[].names.netdev). The API server itself refuses a name that
// would close the rule's quoted value or be substituted by udev (the
// CRD's pattern, from the spec's JSON Schema), and takes a plain one and
// a rail template; the agent checks again when it parses the spec.
func TestCRDRefusesUnsafeNetdevName(t *testing.T) {
	l := applied(t)
	ctx := context.Background()
	config := func(netdev string) []byte {
		return []byte(`apiVersion: rdmaform.io/v1alpha1
kind: RDMAHostConfig
metadata: {name: names}
spec:
  nodeSelector: {matchLabels: {rdma.example.com/rail: "0"}}
  hostSpec:
    version: 1
    devices:
      - pci: "0000:3b:00.0"
        names: {netdev: ` + strconv.Quote(netdev) + `}
`)
	}
	for _, name := range []string{`a",RUN+="/bin/x`, `$kernel`, `eth%k`, `eth\`, "-eth0"} {
		_, err := l.KubectlWith(ctx, l.Kubeconfig, config(name), "apply", "--server-side", "--dry-run=server", "-f", "-")
		if err == nil || !strings.Contains(err.Error(), "spec.hostSpec.devices[0].names.netdev") {
			t.Errorf("names.netdev %q: %v, want the API server to refuse it naming the field", name, err)
		}
	}
	for _, name := range []string{"rail0eth", "rail{rail}", "e!#&'()*+,;<=>"} {
		if _, err := l.KubectlWith(ctx, l.Kubeconfig, config(name), "apply", "--server-side", "--dry-run=server", "-f", "-"); err != nil {
			t.Errorf("names.netdev %q refused: %v", name, err)
		}
	}
}
