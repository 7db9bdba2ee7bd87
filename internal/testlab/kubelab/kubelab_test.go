package kubelab_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmaform/rdmaform/internal/testlab/kubelab"
	"github.com/rdmaform/rdmaform/internal/testlab/kubelab/labbin"
	"github.com/rdmaform/rdmaform/internal/testlab/need"
)

var shared kubelab.Shared

func TestMain(m *testing.M) { os.Exit(shared.Run(m)) }

// TestSmoke: the lab's API server is ready and is the version built, a
// Node made through the client is what kubectl lists, and a
// ServiceAccount token bound to that Node authenticates as the
// ServiceAccount with the node's name in its user extra.
func TestSmoke(t *testing.T) {
	l := shared.Get(t)
	ctx := context.Background()
	body, err := l.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil || string(body) != "ok" {
		t.Fatalf("/readyz: %q, %v", body, err)
	}
	v, err := l.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != labbin.Kubernetes {
		t.Errorf("/version says %s, want %s", v.GitVersion, labbin.Kubernetes)
	}

	l.CreateNode(t, "smoke-node-1", map[string]string{"rdmaform.io/pool": "a"})
	out := l.MustKubectl(t, "get", "nodes", "-l", "rdmaform.io/pool=a", "-o", "name")
	if strings.TrimSpace(out) != "node/smoke-node-1" {
		t.Errorf("kubectl get nodes -l rdmaform.io/pool=a: %q, want node/smoke-node-1", out)
	}

	l.ServiceAccount(t, "smoke", "agent")
	tok := l.Token(t, "smoke", "agent", "smoke-node-1")
	user, extra := whoami(t, l, tok)
	if user != "system:serviceaccount:smoke:agent" {
		t.Errorf("the bound token is user %q, want system:serviceaccount:smoke:agent", user)
	}
	if got := extra[kubelab.NodeNameExtra]; len(got) != 1 || got[0] != "smoke-node-1" {
		t.Errorf("the bound token's extra %s = %q, want [smoke-node-1] (extra: %v)", kubelab.NodeNameExtra, got, extra)
	}
	// A pod's token (as the kubelet projects it) carries its node's name.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-pod", Namespace: "smoke"},
		Spec: corev1.PodSpec{NodeName: "smoke-node-1", ServiceAccountName: "agent",
			Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}},
	}
	if _, err := l.Client.CoreV1().Pods("smoke").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, extra = whoami(t, l, l.PodToken(t, "smoke", "agent", "agent-pod"))
	if got := extra[kubelab.NodeNameExtra]; len(got) != 1 || got[0] != "smoke-node-1" {
		t.Errorf("the pod's token's extra %s = %q, want [smoke-node-1] (extra: %v)", kubelab.NodeNameExtra, got, extra)
	}
	if got := extra["authentication.kubernetes.io/pod-name"]; len(got) != 1 || got[0] != "agent-pod" {
		t.Errorf("the pod's token's pod-name = %q, want [agent-pod]", got)
	}
	// An unbound token carries no node name.
	if _, extra = whoami(t, l, l.Token(t, "smoke", "agent", "")); extra[kubelab.NodeNameExtra] != nil {
		t.Errorf("an unbound token has a node name: %v", extra)
	}
	_, kc := l.AsUser(t, "agent", tok)
	// Without a role the ServiceAccount may not list nodes (RBAC is on).
	if _, err := l.KubectlWith(ctx, kc, nil, "get", "nodes"); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("kubectl get nodes as a ServiceAccount with no role: %v, want forbidden", err)
	}
	if _, err := l.Client.CoreV1().Nodes().Get(ctx, "smoke-node-1", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
}

// whoami is who the API server takes token for (kubectl auth whoami).
func whoami(t *testing.T, l *kubelab.Lab, token string) (string, map[string][]string) {
	t.Helper()
	_, kc := l.AsUser(t, "whoami", token)
	out, err := l.KubectlWith(context.Background(), kc, nil, "auth", "whoami", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var review struct {
		Status struct {
			UserInfo struct {
				Username string              `json:"username"`
				Extra    map[string][]string `json:"extra"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &review); err != nil {
		t.Fatalf("kubectl auth whoami: %v: %s", err, out)
	}
	return review.Status.UserInfo.Username, review.Status.UserInfo.Extra
}

// TestMissingBinariesSkip: with no lab where RDMAFORM_K8S_LAB_DIR points,
// a lab test skips and says how to get one; under RDMAFORM_REQUIRE_LAB=1
// it fails and says the same.
func TestMissingBinariesSkip(t *testing.T) {
	if os.Getenv("KUBELAB_CHILD") == "1" {
		shared.Get(t)
		t.Fatal("the lab started without binaries")
	}
	empty := t.TempDir()
	for _, require := range []string{"", "1"} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestMissingBinariesSkip$", "-test.v")
		cmd.Env = append(os.Environ(), "KUBELAB_CHILD=1", labbin.DirEnv+"="+empty, need.RequireEnv+"="+require)
		out, err := cmd.CombinedOutput()
		s := string(out)
		if !strings.Contains(s, "no Kubernetes lab in "+empty+" (run make k8s-lab") {
			t.Errorf("%s=%q: the output does not say why:\n%s", need.RequireEnv, require, s)
		}
		switch {
		case require == "" && (err != nil || !strings.Contains(s, "--- SKIP")):
			t.Errorf("without %s the test did not skip (%v):\n%s", need.RequireEnv, err, s)
		case require == "1" && (err == nil || !strings.Contains(s, "--- FAIL")):
			t.Errorf("under %s=1 the test did not fail (%v):\n%s", need.RequireEnv, err, s)
		}
	}
}

// TestDrain: kubectl drain of a Node with a pod on it cordons the Node
// and evicts the pod through the Eviction API (--force: a bare pod); the pod is gone once the
// lab plays the kubelet's part (FinishTerminatingPods), and stays
// terminating, so the drain times out, without it.
func TestDrain(t *testing.T) {
	l := shared.Get(t)
	ctx := context.Background()
	l.CreateNode(t, "drain-1", nil)
	l.CreatePod(t, "drain", "stuck", "drain-1")
	_, err := l.Kubectl(ctx, "drain", "drain-1", "--force", "--timeout", "3s")
	if err == nil || !strings.Contains(err.Error(), `waiting for pod "stuck" in namespace "drain" to terminate`) {
		t.Errorf("kubectl drain with no kubelet to finish the pod: %v, want a timeout", err)
	}

	l.CreateNode(t, "drain-2", nil)
	l.CreatePod(t, "drain", "job", "drain-2")
	l.FinishTerminatingPods(t)
	out, err := l.Kubectl(ctx, "drain", "drain-2", "--force", "--timeout", "60s")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "pod/job evicted") || !strings.Contains(out, "node/drain-2 drained") {
		t.Errorf("kubectl drain said:\n%s", out)
	}
	n, err := l.Client.CoreV1().Nodes().Get(ctx, "drain-2", metav1.GetOptions{})
	if err != nil || !n.Spec.Unschedulable {
		t.Errorf("drain-2 after the drain: %v, unschedulable %v", err, n.Spec.Unschedulable)
	}
	if _, err := l.Client.CoreV1().Pods("drain").Get(ctx, "job", metav1.GetOptions{}); err == nil {
		t.Error("pod drain/job is still there after the drain")
	}
	l.MustKubectl(t, "uncordon", "drain-2")
	if n, err := l.Client.CoreV1().Nodes().Get(ctx, "drain-2", metav1.GetOptions{}); err != nil || n.Spec.Unschedulable {
		t.Errorf("drain-2 after uncordon: %v, unschedulable %v", err, n.Spec.Unschedulable)
	}
}

// TestApplyAndEnv: Apply waits for the CRDs it applies (a custom object
// can be made right after), and Env runs the lab's kubectl as the admin.
func TestApplyAndEnv(t *testing.T) {
	l := shared.Get(t)
	dir := t.TempDir()
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.kubelab.rdmaform.test
spec:
  group: kubelab.rdmaform.test
  scope: Cluster
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`
	obj := "apiVersion: kubelab.rdmaform.test/v1\nkind: Widget\nmetadata:\n  name: w1\n"
	if err := os.WriteFile(dir+"/crd.yaml", []byte(crd), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/w1.yaml", []byte(obj), 0o644); err != nil {
		t.Fatal(err)
	}
	l.Apply(t, dir+"/crd.yaml", dir+"/w1.yaml")
	// env(1) finds kubectl on Env's PATH, as a program run with it would.
	cmd := exec.Command("/usr/bin/env", "kubectl", "get", "widgets", "-o", "name")
	cmd.Env = l.Env()
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "widget.kubelab.rdmaform.test/w1" {
		t.Errorf("kubectl get widgets with Env: %v: %s", err, out)
	}
}

// BenchmarkStart: from starting etcd to an API server whose /readyz,
// certificate and "default" namespace are in place, then stopped.
// go test -run '^$' -bench Start -benchtime 3x ./internal/testlab/kubelab
func BenchmarkStart(b *testing.B) {
	for b.Loop() {
		l := kubelab.Start(b)
		b.ReportMetric(l.Started.Seconds(), "s-ready/op")
		l.Stop()
	}
}
