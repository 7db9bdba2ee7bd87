package agent_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rdmaform/rdmaform/agent"
	"github.com/rdmaform/rdmaform/api/v1alpha1"
)

// TestCRDsAccepted: every CRD in deploy/kubernetes/crds is established on
// the real API server (the lab installs them from that directory).
func TestCRDsAccepted(t *testing.T) {
	k := newCluster(t)
	files, err := filepath.Glob(filepath.Join("..", "deploy", "kubernetes", "crds", "*.yaml"))
	if err != nil || len(files) != 2 {
		t.Fatalf("CRD files %v (%v), want 2", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Metadata struct{ Name string }
		}
		if err := yaml.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("apiextensions.k8s.io/v1")
		u.SetKind("CustomResourceDefinition")
		if err := k.c.Get(context.Background(), client.ObjectKey{Name: doc.Metadata.Name}, u); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		established := false
		for _, c := range conds {
			m := c.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				established = true
			}
		}
		if !established {
			t.Errorf("%s: not established: %v", doc.Metadata.Name, conds)
		}
	}
}

// TestSlotsNeverShared: eight agents race for one slot, round after
// round: in each round exactly one takes it (the others get the API
// server's AlreadyExists or Conflict), and after its release exactly one
// other takes it.
func TestSlotsNeverShared(t *testing.T) {
	k := newCluster(t)
	const racers, rounds = 8, 4
	slots := make([]*agent.Slots, racers)
	for i := range slots {
		slots[i] = &agent.Slots{C: k.c, Namespace: ns, Holder: fmt.Sprintf("racer-%d", i), Now: time.Now}
	}
	cfg := "race"
	winners := map[string]bool{}
	for round := 0; round < rounds; round++ {
		var wg sync.WaitGroup
		got := make([]*coordinationv1.Lease, racers)
		errs := make([]error, racers)
		for i := range slots {
			if winners[slots[i].Holder] {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i], errs[i] = slots[i].Take(context.Background(), cfg, 1)
			}()
		}
		wg.Wait()
		var won []int
		for i := range got {
			if errs[i] != nil {
				t.Fatalf("round %d racer %d: %v", round, i, errs[i])
			}
			if got[i] != nil {
				won = append(won, i)
			}
		}
		if len(won) != 1 {
			t.Fatalf("round %d: %d racers hold the slot, want 1", round, len(won))
		}
		w := slots[won[0]]
		winners[w.Holder] = true
		held, err := w.Held(context.Background(), cfg)
		if err != nil || held == nil || *held.Spec.HolderIdentity != w.Holder {
			t.Fatalf("round %d: the Lease says %v (%v), want %s", round, held, err, w.Holder)
		}
		// A release at a stale version is refused: the winner's copy
		// from before an update does not delete the newer Lease.
		stale := held.DeepCopy()
		if err := w.Annotate(context.Background(), held, map[string]string{"test": "x"}); err != nil {
			t.Fatal(err)
		}
		if err := w.Release(context.Background(), stale); err == nil {
			t.Fatalf("round %d: a release at a stale resourceVersion succeeded", round)
		}
		if err := w.Release(context.Background(), held); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMaxUnavailable at its limits and one past them.
func TestMaxUnavailable(t *testing.T) {
	for _, c := range []struct {
		v    intstr.IntOrString
		n    int
		want int
		bad  bool
	}{
		{intstr.FromInt32(1), 5, 1, false},
		{intstr.FromInt32(0), 5, 0, true},
		{intstr.FromInt32(3), 5, 3, false},
		{intstr.FromString("100%"), 5, 5, false},
		{intstr.FromString("101%"), 5, 0, true},
		{intstr.FromString("1%"), 5, 1, false}, // rounded down to 0, at least 1
		{intstr.FromString("0%"), 5, 0, true},
		{intstr.FromString("40%"), 5, 2, false},
		{intstr.FromString("59%"), 5, 2, false},
		{intstr.FromString("60%"), 5, 3, false},
		{intstr.FromString("x%"), 5, 0, true},
		{intstr.FromString("20"), 5, 0, true},
	} {
		v := c.v
		got, err := agent.MaxUnavailable(v1alpha1.Policy{MaxUnavailable: &v}, c.n)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("%s of %d: %d, %v; want %d (error %v)", v.String(), c.n, got, err, c.want, c.bad)
		}
	}
	if got, err := agent.MaxUnavailable(v1alpha1.Policy{}, 5); got != 1 || err != nil {
		t.Errorf("default: %d, %v; want 1", got, err)
	}
}

// TestAuditModeAndMetrics: in audit mode the agent plans and reports
// (drift, plan summary) and changes nothing; /metrics carries the audit's
// series exactly as rdmaform audit -o prometheus writes them, the agent's
// build and its reconcile counters, in a valid exposition.
func TestAuditModeAndMetrics(t *testing.T) {
	k := newCluster(t)
	nodes := k.nodes("audit", 1, func(int) map[string]string { return map[string]string{"rail": "audit"} })
	before := readSim(t, nodes[0])
	cfg := k.config("audit", "rail", "audit", modulesSpec, policy(v1alpha1.ModeAudit, v1alpha1.ActivationNone, 1))
	m := agent.NewMetrics()
	// The agent's own listener (--metrics-address) on a loopback port,
	// scraped over HTTP as Prometheus would.
	k.metricsAddress = freeLoopback(t)
	k.startWith(m, nodes...)
	st := k.waitState(nodes[0].name, condIs(v1alpha1.ConditionInSync, metav1.ConditionFalse, "Drift", cfg.Generation))
	if st.Status.Plan.Add != 1 || strings.Join(st.Status.Drift, ",") != "module[rdma_ucm]" || st.Status.LastApply != nil {
		t.Errorf("plan %+v drift %v last apply %+v", st.Status.Plan, st.Status.Drift, st.Status.LastApply)
	}
	if !bytes.Equal(readSim(t, nodes[0]), before) {
		t.Error("audit mode changed the simulated host")
	}
	// The audit runs after the state is written: wait for its series.
	var body string
	for deadline := time.Now().Add(waitLimit); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if body = scrape(t, "http://"+k.metricsAddress+"/metrics"); strings.Contains(body, "rdmaform_drift{") {
			break
		}
	}
	fams, err := textParser().TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics is no valid exposition: %v\n%s", err, body)
	}
	_, direct := rdmaform(nodes[0].dir, modulesSpec, "audit", "-f", "-", "-o", "prometheus")
	want, err := textParser().TextToMetricFamilies(strings.NewReader(direct))
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range want {
		g, ok := fams[name]
		if !ok {
			t.Errorf("/metrics lacks %s", name)
			continue
		}
		if strings.HasSuffix(name, "_timestamp_seconds") {
			continue
		}
		if a, b := series(g), series(f); a != b {
			t.Errorf("%s: /metrics has\n%s\nrdmaform audit -o prometheus has\n%s", name, a, b)
		}
	}
	for _, name := range []string{"rdmaform_agent_build_info", "rdmaform_agent_reconciles_total", "rdmaform_drift"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("/metrics lacks %s:\n%s", name, body)
		}
	}
	if !regexp.MustCompile(`(?m)^rdmaform_agent_reconciles_total\{result="success"\} [1-9]`).MatchString(body) {
		t.Errorf("no successful reconcile counted:\n%s", body)
	}
	if !strings.Contains(body, `rdmaform_drift{resource="module[rdma_ucm]"} 1`) {
		t.Errorf("no drift of module[rdma_ucm]:\n%s", body)
	}
}

// series is a family's samples as sorted text lines.
func series(f *dto.MetricFamily) string {
	var out []string
	for _, m := range f.Metric {
		var l []string
		for _, p := range m.Label {
			l = append(l, p.GetName()+"="+p.GetValue())
		}
		v := 0.0
		switch {
		case m.Gauge != nil:
			v = m.Gauge.GetValue()
		case m.Counter != nil:
			v = m.Counter.GetValue()
		}
		out = append(out, fmt.Sprintf("{%s} %g", strings.Join(l, ","), v))
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func textParser() *expfmt.TextParser {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return &p
}

// freeLoopback is a loopback TCP address no one listens on now.
func freeLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// scrape GETs url and returns the body of a 200 answer ("" otherwise).
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // a test's loopback scrape
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return ""
	}
	return string(b)
}

// TestMetricsAddressTaken: an agent whose --metrics-address is already
// taken does not start; its error names the metrics listener.
func TestMetricsAddressTaken(t *testing.T) {
	k := newCluster(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	n := k.nodes("taken", 1, func(int) map[string]string { return map[string]string{"rail": "taken"} })[0]
	cfg, _ := k.lab.AsUser(t, "agent-"+n.name, k.lab.Token(t, ns, "rdmaform-agent", n.name))
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	o := agent.Options{NodeName: n.name, Namespace: ns, HostArgs: []string{"--sim", n.dir}, Interval: time.Minute, Metrics: agent.NewMetrics()}
	err = agent.Run(ctx, cfg, o, ln.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "metrics:") || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Errorf("agent.Run on a taken metrics address: %v, want a metrics error naming %s", err, ln.Addr())
	}
	if ctx.Err() != nil {
		t.Errorf("agent.Run ran until its context ended instead of refusing the address")
	}
}
