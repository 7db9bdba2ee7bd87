package ansible_test

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/internal/testlab/kubelab"
)

// TestRolloutKubernetes runs the rollout with the kubernetes drain preset
// (the module rdmaform.rdma.drain, kubectl drain and uncordon) against
// the lab's real kube-apiserver (internal/testlab/kubelab), three
// simulated hosts activated by firmware reset, one wave each, each host a
// Node object of the same name with a pod bound to it (no kubelet: the
// drain deletes it at once with grace_period 0, force for a pod no
// controller manages). The second host's card answers only a power cycle
// (a sim fault), so its new firmware does not take: node001 was drained
// (its pod gone) and uncordoned, node002 stays cordoned and staged,
// node003 was never touched (the same Node object, its pod still there)
// and stays staged. With the fault cleared, and node003 cordoned by an
// administrator (kubectl cordon, no rdmaform mark) in between, the play
// runs again: node002 (cordoned already) is drained, activated and
// uncordoned; node003 is drained (its pod gone) and activated but stays
// cordoned, with a warning (the role uncordons only what it cordoned);
// every host plans empty.
//
// A host whose firmware did not take after a warm reboot
// (rdmaform_sim_reboot_flags [--keep-firmware]) is not used here: its
// fault is cleared by a power cycle or a firmware reset by hand, after
// which it has nothing to activate, so a second run skips it and leaves
// its node cordoned.
func TestRolloutKubernetes(t *testing.T) {
	f := newFleet(t, 3, 0, nil)
	k := kubelab.Start(t)
	k.ServiceAccount(t, "work", "default") // pods need it; no controller makes it
	var pods strings.Builder
	for _, n := range f.names {
		k.CreateNode(t, n, nil)
		pods.WriteString(pod("job-"+n, n, "", "app: job", false))
	}
	apply(t, k, pods.String())
	// Whether node n is cordoned, its resourceVersion (any cordon or
	// uncordon changes it) and the pods still bound to it.
	node := func(n string) (cordoned bool, version, pods string) {
		t.Helper()
		out := k.MustKubectl(t, "get", "node", n, "-o", `jsonpath={.metadata.resourceVersion} {.spec.unschedulable}`)
		version, unschedulable, _ := strings.Cut(strings.TrimSpace(out), " ")
		pods = strings.TrimSpace(k.MustKubectl(t, "-n", "work", "get", "pods", "--field-selector", "spec.nodeName="+n,
			"-o", `jsonpath={range .items[*]}{.metadata.name}{" "}{end}`))
		return unschedulable == "true", version, pods
	}
	_, untouched, _ := node(f.names[2])

	report := filepath.Join(f.l.dir, "report.json")
	extra := map[string]any{"rdma_drain": "kubernetes", "rdma_max_unavailable": "1", "rdma_report": report,
		"rdmaform_rollout_kubeconfig":    k.Kubeconfig,
		"rdmaform_rollout_drain_timeout": 30, // kubectl's own wait, were a pod to linger
		"rdmaform_rollout_drain_options": map[string]any{"kubectl": k.KubectlPath, "grace_period": 0, "force": true},
	}
	bad := f.names[1]
	rdmaform(t, 0, "sim", "fault", f.dirs[bad], "--reset", "power-cycle", "--match", "0000:3b:00.0")

	out, code := f.play(t, 3, extra)
	if code != 2 {
		t.Fatalf("first run: exit %d, want 2\n%s", code, out)
	}
	r := f.report(t, report)
	if len(r.Failed) != 1 || r.Failed[0].Host != bad || r.Failed[0].Gate != "activate" {
		t.Errorf("first run: failed %+v, want %s at activate (only a power cycle)\n%s", r.Failed, bad, out)
	} else if !strings.Contains(r.Failed[0].Reason, "only a power cycle activates") {
		t.Errorf("first run: the reason is %q, want activate's refusal (only a power cycle activates)", r.Failed[0].Reason)
	}
	if strings.Join(r.Done, " ") != f.names[0] || strings.Join(r.Untouched, " ") != f.names[2] || r.StoppedAt != 2 {
		t.Errorf("first run: done %v, untouched %v, stopped at %d; want %s, %s, 2", r.Done, r.Untouched, r.StoppedAt, f.names[0], f.names[2])
	}
	for _, c := range []struct {
		node     string
		cordoned bool
		version  string // "" for any
		pods     string
	}{
		{f.names[0], false, "", ""},                         // drained, uncordoned
		{bad, true, "", ""},                                 // drained, left cordoned
		{f.names[2], false, untouched, "job-" + f.names[2]}, // never cordoned: the same object
	} {
		cordoned, version, pods := node(c.node)
		if cordoned != c.cordoned || (c.version != "" && version != c.version) || pods != c.pods {
			t.Errorf("first run: %s cordoned %v, resourceVersion %s, pods %q; want %v, %q, %q", c.node, cordoned, version, pods, c.cordoned, c.version, c.pods)
		}
	}
	for _, h := range f.names[1:] {
		rdmaform(t, 3, "--sim", f.dirs[h], "plan", "-f", f.rendered(t, h)) // not reset: still staged
	}

	rdmaform(t, 0, "sim", "fault", f.dirs[bad], "--clear")
	k.MustKubectl(t, "cordon", f.names[2])
	out, code = f.play(t, 3, extra)
	if code != 0 {
		t.Fatalf("second run: exit %d\n%s", code, out)
	}
	r = f.report(t, report)
	sort.Strings(r.Done)
	if strings.Join(r.Done, " ") != bad+" "+f.names[2] || len(r.Failed) != 0 || len(r.Untouched) != 0 {
		t.Errorf("second run: done %v, failed %+v, untouched %v; want %s %s done", r.Done, r.Failed, r.Untouched, bad, f.names[2])
	}
	// ansible wraps a warning's lines at the terminal's width.
	if w := "[WARNING]: node " + f.names[2] + " stays cordoned: it has no"; !strings.Contains(out, w) {
		t.Errorf("second run: no warning %q\n%s", w, out)
	}
	for _, n := range f.names {
		want := n == f.names[2] // the administrator's cordon stays
		if cordoned, _, pods := node(n); cordoned != want || pods != "" {
			t.Errorf("second run: %s cordoned %v, pods %q; want cordoned %v, its pod gone", n, cordoned, pods, want)
		}
		rdmaform(t, 0, "--sim", f.dirs[n], "plan", "-f", f.rendered(t, n))
	}
}
