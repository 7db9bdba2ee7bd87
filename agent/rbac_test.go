package agent_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/rdmaform/rdmaform/agent"
	"github.com/rdmaform/rdmaform/api/v1alpha1"
)

// grant is one verb on one resource (resource/subresource) of an API
// group, in a namespace ("" for a ClusterRole).
type grant struct{ namespace, group, resource, verb string }

// agentGrants reads the agent's ClusterRole and Role from
// deploy/kubernetes/10-rbac.yaml, one grant per group, resource and verb.
func agentGrants(t *testing.T) []grant {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "deploy", "kubernetes", "10-rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []grant
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		var head struct {
			Kind     string
			Metadata metav1.ObjectMeta
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatal(err)
		}
		if head.Metadata.Name != "rdmaform-agent" || (head.Kind != "ClusterRole" && head.Kind != "Role") {
			continue
		}
		var role rbacv1.ClusterRole // a Role has the same rules
		if err := yaml.UnmarshalStrict(doc, &role); err != nil {
			t.Fatal(err)
		}
		for _, r := range role.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						out = append(out, grant{head.Metadata.Namespace, g, res, v})
					}
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("10-rbac.yaml grants the agent nothing")
	}
	return out
}

// covers reports whether the grant allows the request.
func (g grant) covers(r apiRequest) bool {
	res := r.resource
	if r.subresource != "" {
		res += "/" + r.subresource
	}
	return g.group == r.group && g.resource == res && (g.verb == r.verb || g.verb == "*") &&
		(g.namespace == "" || g.namespace == r.namespace)
}

// TestAgentUsesEveryVerbItIsGranted: two agents, as the agent's
// ServiceAccount bound by deploy/kubernetes/10-rbac.yaml (RBAC enforced
// by the API server: a verb missing there fails this test, as it fails
// the agent), go through every path that calls the API: a config with a
// rollout (the second node's wave waits for the first's: it lists the
// states), firmware activated by fw-reset with eviction (a slot taken,
// marked and released, the node cordoned and uncordoned, its pods listed
// and one evicted). Every request they made is allowed by a rule, and
// every verb a rule grants was used by some request: a verb granted and
// never used fails, naming it. The NodeMaintenance rules, which only
// policy.maintenance: maintenance-operator uses, are
// TestMaintenanceGateFailureKeepsNodeOut's to check.
func TestAgentUsesEveryVerbItIsGranted(t *testing.T) {
	k := newCluster(t)
	nodes := k.nodes("verbs", 2, func(int) map[string]string {
		return map[string]string{"rail": "verbs", agent.LabelDomain: "d1"}
	})
	k.lab.ServiceAccount(t, "default", "default")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "verbs-work", Namespace: "default"},
		Spec:       corev1.PodSpec{NodeName: nodes[0].name, Containers: []corev1.Container{{Name: "c", Image: "example.invalid/none"}}},
	}
	if err := k.c.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.c.Delete(context.Background(), pod) })

	rec := &recorder{}
	k.startRecorded(rec, nil, quietInterval, nodes...)
	p := policy(v1alpha1.ModeApply, v1alpha1.ActivationFWReset, 1)
	p.Evict = true
	one := int32(1)
	p.Rollout = &v1alpha1.Rollout{Canary: &one, Ramp: &v1alpha1.RolloutRamp{Steps: []intstr.IntOrString{intstr.FromInt32(1)}}}
	cfg := k.config("verbs", "rail", "verbs", firmwareSpec, p)
	// Checked even when the agents do not converge (a verb missing: the
	// agent fails at that call and the wait below ends the test).
	defer checkGrants(t, rec, func(g grant) bool { return g.group != maintenanceGroup })
	k.activatedAll(nodes, cfg, firmwareSpec)
}

// maintenanceGroup is the maintenance operator's API group.
const maintenanceGroup = "maintenance.nvidia.com"

// checkGrants fails t for each recorded request no grant allows and, when
// the agents converged, for each grant of those mine selects that no
// request used.
func checkGrants(t *testing.T, rec *recorder, mine func(grant) bool) {
	reqs, _ := rec.since(0)
	grants := agentGrants(t)
	used := map[grant]bool{}
	var refused []string
	for _, r := range reqs {
		ok := false
		for _, g := range grants {
			if g.covers(r) {
				used[g], ok = true, true
			}
		}
		if !ok {
			refused = append(refused, r.verb+" "+r.resource+"."+r.group+" in "+r.namespace)
		}
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		t.Errorf("requests no rule of 10-rbac.yaml allows:\n%s", strings.Join(slices.Compact(refused), "\n"))
	}
	if t.Failed() {
		return
	}
	var unused []string
	for _, g := range grants {
		if !used[g] && mine(g) {
			where := "ClusterRole"
			if g.namespace != "" {
				where = "Role in " + g.namespace
			}
			unused = append(unused, fmt.Sprintf("%s %s (group %q, %s)", g.verb, g.resource, g.group, where))
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		t.Errorf("verbs 10-rbac.yaml grants the agent and it never used (drop them):\n%s", strings.Join(unused, "\n"))
	}
	t.Logf("%d requests, %d grants", len(reqs), len(grants))
}
