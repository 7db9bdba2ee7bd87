package ansible_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/internal/testlab/kubelab"
)

// k8sDrain runs rdmaform.rdma.drain (backend kubernetes) under ansible-core
// with the lab's kubectl and the admin's kubeconfig.
func k8sDrain(t *testing.T, l *lab, k *kubelab.Lab, args map[string]any, flags ...string) (map[string]any, string, string) {
	t.Helper()
	args["backend"] = "kubernetes"
	args["kubectl"] = k.KubectlPath
	args["kubeconfig"] = k.Kubeconfig
	return l.start(t, nil, "rdmaform.rdma.drain", args, flags...).wait(t)
}

// apply is `kubectl apply -f -` of a manifest.
func apply(t *testing.T, k *kubelab.Lab, manifest string) {
	t.Helper()
	if out, err := k.KubectlWith(context.Background(), k.Kubeconfig, []byte(manifest), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, manifest)
	}
}

// pod is a pod bound to node (spec.nodeName: no scheduler needed) whose
// controller is owner (KIND/NAME/UID, "" for none), with an emptyDir
// volume when scratch.
func pod(name, node, owner string, labels string, scratch bool) string {
	m := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: work\n  labels: {%s}\n", name, labels)
	if owner != "" {
		f := strings.SplitN(owner, "/", 3)
		m += fmt.Sprintf("  ownerReferences: [{apiVersion: apps/v1, kind: %s, name: %s, uid: %s, controller: true}]\n", f[0], f[1], f[2])
	}
	m += fmt.Sprintf("spec:\n  nodeName: %s\n  containers: [{name: c, image: registry.invalid/rdmaform/idle:1}]\n", node)
	if scratch {
		m += "  volumes: [{name: scratch, emptyDir: {}}]\n"
	}
	return m + "---\n"
}

// TestDrainKubernetes drives the module's kubernetes backend under
// ansible-core against a real kube-apiserver and etcd
// (internal/testlab/kubelab), with the kubectl built from the same
// Kubernetes release. There is no kubelet, scheduler or controller
// manager: nodes and pods are API objects only, pods are bound by
// spec.nodeName, and nothing ever ends a pod or updates a budget's status
// (the test writes what the disruption controller would). What is shown
// for real: kubectl cordons the node (spec.unschedulable); its refusal of
// a pod with an emptyDir volume fails the task with kubectl's words and
// leaves the node cordoned; pods go through the Eviction API and, with
// grace_period 0, are gone at once; a PodDisruptionBudget that allows no
// disruption makes the drain retry until its timeout and fail, the pod
// still there; evict: false deletes it anyway; a DaemonSet's pod stays
// (ignore_daemonsets); a second drain changes nothing; uncordon makes the
// node schedulable again, once. With the pod's own grace period an
// evicted pod is only marked terminating, and since no kubelet confirms
// its end the drain fails at its timeout: a graceful termination that
// ends cannot be shown here.
func TestDrainKubernetes(t *testing.T) {
	l := newLab(t)
	l.installCollection(t)
	k := kubelab.Start(t)
	for _, n := range []string{"k1", "k2"} {
		k.CreateNode(t, n, nil)
	}
	k.ServiceAccount(t, "work", "default") // pods need it; no controller makes it
	// The controllers the pods name as theirs (no controller manager runs
	// them; kubectl drain looks them up).
	controller := func(kind, name, replicas string) string {
		return fmt.Sprintf(`apiVersion: apps/v1
kind: %s
metadata: {name: %s, namespace: work}
spec:%s
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec: {containers: [{name: c, image: registry.invalid/rdmaform/idle:1}]}
---
`, kind, name, replicas, name, name)
	}
	apply(t, k, controller("DaemonSet", "agent", "")+controller("ReplicaSet", "web", "\n  replicas: 0")+`apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: db, namespace: work}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: db}}
`)
	uid := func(kind, name string) string {
		return strings.TrimSpace(k.MustKubectl(t, "-n", "work", "get", kind, name, "-o", "jsonpath={.metadata.uid}"))
	}
	ds, rs := "DaemonSet/agent/"+uid("daemonset", "agent"), "ReplicaSet/web/"+uid("replicaset", "web")
	apply(t, k, pod("agent-k1", "k1", ds, "app: agent", false)+
		pod("web-k1", "k1", rs, "app: web", false)+
		pod("scratch-k1", "k1", rs, "app: web", true)+
		pod("db-k1", "k1", rs, "app: db", false)+
		pod("web-k2", "k2", rs, "app: web", false))
	// db-k1 runs and is ready, and the budget's status says so and allows
	// no disruption: what a kubelet and the disruption controller would
	// write. (A Pending pod is evicted whatever its budget says.)
	k.MustKubectl(t, "-n", "work", "patch", "pod", "db-k1", "--subresource=status", "--type=merge", "-p",
		`{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`)
	k.MustKubectl(t, "-n", "work", "patch", "pdb", "db", "--subresource=status", "--type=merge", "-p",
		`{"status":{"observedGeneration":1,"disruptionsAllowed":0,"currentHealthy":1,"desiredHealthy":1,"expectedPods":1}}`)

	cordoned := func(node string) bool {
		return strings.TrimSpace(k.MustKubectl(t, "get", "node", node, "-o", "jsonpath={.spec.unschedulable}")) == "true"
	}
	// mark is the node's annotation rdmaform.io/drain-reason, "" when none.
	mark := func(node string) string {
		return k.MustKubectl(t, "get", "node", node, "-o", `jsonpath={.metadata.annotations.rdmaform\.io/drain-reason}`)
	}
	pods := func(node string) string {
		return strings.TrimSpace(k.MustKubectl(t, "-n", "work", "get", "pods", "--field-selector", "spec.nodeName="+node,
			"-o", `jsonpath={range .items[*]}{.metadata.name}{.metadata.deletionTimestamp}{" "}{end}`))
	}
	fails := func(what string, res map[string]any, status, out string, words ...string) {
		t.Helper()
		msg, _ := res["msg"].(string)
		if status != "FAILED!" {
			t.Errorf("%s: %s, want FAILED!\n%s", what, status, out)
		}
		for _, w := range words {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: the message lacks %q:\n%s", what, w, msg)
			}
		}
	}

	// Check mode: a drain would change k1, and nothing changes.
	res, status, out := k8sDrain(t, l, k, map[string]any{"node": "k1"}, "--check")
	if status != "CHANGED" || cordoned("k1") {
		t.Errorf("drain in check mode: %s, k1 cordoned %v; want CHANGED and k1 schedulable\n%s", status, cordoned("k1"), out)
	}
	want(t, "check mode", res, map[string]any{"before": "schedulable", "pods": []any{"work/db-k1", "work/scratch-k1", "work/web-k1"}})

	// kubectl refuses the emptyDir pod before evicting anything.
	res, status, out = k8sDrain(t, l, k, map[string]any{"node": "k1", "timeout": 20, "grace_period": 0})
	fails("drain with an emptyDir pod", res, status, out, " drain k1 --timeout=20s --ignore-daemonsets --grace-period=0 failed (exit 1): ",
		"cannot delete Pods with local storage (use --delete-emptydir-data to override): work/scratch-k1")
	if !cordoned("k1") || pods("k1") != "agent-k1 db-k1 scratch-k1 web-k1" || mark("k1") != "rdmaform rollout" {
		t.Errorf("after the refused drain: k1 cordoned %v, pods %q, mark %q; want cordoned, every pod, the drain's reason",
			cordoned("k1"), pods("k1"), mark("k1"))
	}

	// The budget stops db-k1's eviction: kubectl retries until its timeout.
	res, status, out = k8sDrain(t, l, k, map[string]any{"node": "k1", "timeout": 6, "grace_period": 0, "delete_emptydir_data": true})
	fails("drain against a budget", res, status, out, "Cannot evict pod as it would violate the pod's disruption budget.",
		`error when evicting pods/"db-k1" -n "work": global timeout reached: 6s`)
	want(t, "drain against a budget", res, map[string]any{"before": "cordoned", "after": "cordoned"})
	if got := pods("k1"); got != "agent-k1 db-k1" {
		t.Errorf("after the budget's refusal k1 has %q, want the DaemonSet's pod and db-k1", got)
	}

	// evict: false deletes it, budget or not.
	res, status, out = k8sDrain(t, l, k, map[string]any{"node": "k1", "evict": false, "grace_period": 0, "timeout": 30})
	if status != "CHANGED" {
		t.Errorf("drain with evict: false: %s, want CHANGED\n%s", status, out)
	}
	want(t, "drain with evict: false", res, map[string]any{"before": "cordoned", "after": "cordoned", "pods": []any{"work/db-k1"}})
	if got := pods("k1"); got != "agent-k1" {
		t.Errorf("after the drain k1 has %q, want only the DaemonSet's pod", got)
	}
	res, status, out = k8sDrain(t, l, k, map[string]any{"node": "k1", "timeout": 30})
	if status != "SUCCESS" {
		t.Errorf("second drain: %s, want SUCCESS (changed=false)\n%s", status, out)
	}
	want(t, "second drain", res, map[string]any{"pods": []any{}, "cmd": []any{}})

	_, status, out = k8sDrain(t, l, k, map[string]any{"node": "k1", "state": "resumed"}, "--check")
	if status != "CHANGED" || !cordoned("k1") {
		t.Errorf("uncordon in check mode: %s, k1 cordoned %v; want CHANGED and still cordoned\n%s", status, cordoned("k1"), out)
	}
	res, status, out = k8sDrain(t, l, k, map[string]any{"node": "k1", "state": "resumed"})
	if status != "CHANGED" || cordoned("k1") {
		t.Errorf("uncordon: %s, k1 cordoned %v; want CHANGED and schedulable\n%s", status, cordoned("k1"), out)
	}
	want(t, "uncordon", res, map[string]any{"before": "cordoned", "after": "schedulable"})
	if m := mark("k1"); m != "" {
		t.Errorf("uncordon left the mark %q on k1", m)
	}
	if _, status, out = k8sDrain(t, l, k, map[string]any{"node": "k1", "state": "resumed"}); status != "SUCCESS" {
		t.Errorf("second uncordon: %s, want SUCCESS\n%s", status, out)
	}

	// The pod's own grace period: evicted, it is only terminating, and no
	// kubelet ends it.
	res, status, out = k8sDrain(t, l, k, map[string]any{"node": "k2", "timeout": 5})
	fails("drain with a graceful eviction", res, status, out, `error when waiting for pod "web-k2" in namespace "work" to terminate`)
	if got := pods("k2"); !strings.HasPrefix(got, "web-k2") || got == "web-k2" {
		t.Errorf("after the graceful eviction k2 has %q, want web-k2 with a deletion timestamp", got)
	}
	res, status, out = k8sDrain(t, l, k, map[string]any{"node": "k2", "grace_period": 0, "timeout": 30})
	if status != "CHANGED" || pods("k2") != "" {
		t.Errorf("drain of k2 with grace_period 0: %s, pods %q; want CHANGED and none\n%s", status, pods("k2"), out)
	}
	want(t, "drain of k2", res, map[string]any{"pods": []any{"work/web-k2"}})

	// Resume only what rdmaform cordoned: k2, cordoned by the drain with
	// its default reason, stays cordoned through a resume with another
	// reason, and is uncordoned by one with the drain's.
	res, status, out = k8sDrain(t, l, k, map[string]any{"node": "k2", "state": "resumed", "reason": "another rollout"})
	keptCordoned(t, "resume of k2 with another reason", res, status, out, `node k2 stays cordoned: its rdmaform.io/drain-reason annotation is "rdmaform rollout", not "another rollout"`)
	if !cordoned("k2") || mark("k2") != "rdmaform rollout" {
		t.Errorf("after the resume with another reason: k2 cordoned %v, mark %q; want cordoned, the drain's mark", cordoned("k2"), mark("k2"))
	}
	if _, status, out = k8sDrain(t, l, k, map[string]any{"node": "k2", "state": "resumed"}); status != "CHANGED" || cordoned("k2") || mark("k2") != "" {
		t.Errorf("resume of k2 with the drain's reason: %s, cordoned %v, mark %q; want CHANGED, schedulable, no mark\n%s", status, cordoned("k2"), mark("k2"), out)
	}
	// Someone else cordons k3: the drain finds nothing to remove and
	// leaves it unmarked, the resume leaves it cordoned, in check mode too.
	k.CreateNode(t, "k3", nil)
	k.MustKubectl(t, "cordon", "k3")
	if res, status, out = k8sDrain(t, l, k, map[string]any{"node": "k3"}); status != "SUCCESS" || mark("k3") != "" {
		t.Errorf("drain of k3 cordoned by someone else: %s, mark %q; want SUCCESS (changed=false), no mark\n%s", status, mark("k3"), out)
	}
	for _, flags := range [][]string{{"--check"}, nil} {
		res, status, out = k8sDrain(t, l, k, map[string]any{"node": "k3", "state": "resumed"}, flags...)
		keptCordoned(t, fmt.Sprintf("resume %v of k3 cordoned by someone else", flags), res, status, out,
			"node k3 stays cordoned: it has no rdmaform.io/drain-reason annotation, so rdmaform did not cordon it")
		if !cordoned("k3") {
			t.Errorf("resume %v of k3 cordoned by someone else uncordoned it", flags)
		}
	}

	res, status, out = k8sDrain(t, l, k, map[string]any{"node": "k9"})
	fails("unknown node", res, status, out, " get node k9 -o json failed (exit 1): ", `nodes "k9" not found`)
	res, status, out = k8sDrain(t, l, k, map[string]any{"node": "K_1"})
	fails("bad name", res, status, out, "is not a Kubernetes node name")
}

// keptCordoned checks a resume that must leave a node cordoned because
// rdmaform did not cordon it (no mark, or another reason's): changed
// false, no command run, a warning and msg saying why.
func keptCordoned(t *testing.T, what string, res map[string]any, status, out, wantMsg string) {
	t.Helper()
	if status != "SUCCESS" {
		t.Errorf("%s: %s, want SUCCESS (changed=false)\n%s", what, status, out)
	}
	want(t, what, res, map[string]any{"changed": false, "cmd": []any{}, "after": "cordoned"})
	if msg, _ := res["msg"].(string); !strings.Contains(msg, wantMsg) {
		t.Errorf("%s: msg %q, want it to say %q", what, msg, wantMsg)
	}
	// ansible wraps a warning's lines at the terminal's width.
	if w, _, _ := strings.Cut(wantMsg, ":"); !strings.Contains(out, "[WARNING]: "+w+":") {
		t.Errorf("%s: no warning %q\n%s", what, w, out)
	}
}
