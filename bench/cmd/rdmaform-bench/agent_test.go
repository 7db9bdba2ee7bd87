package main

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// TestNodeWrightSizing: the published equations at 1,000 nodes (the
// anchor #48 names: memory max(256Mi, N × 0.45) is 450 Mi) and on both
// sides of where each max() turns.
func TestNodeWrightSizing(t *testing.T) {
	for _, c := range []struct {
		n, p                           int
		memReq, memLim, cpuReq, cpuLim float64
	}{
		{1000, 1, 450, 800, 800, 1600},
		{1000, 5, 450, 1600, 1600, 3200}, // P × 0.4 = 2
		{568, 1, 256, 512, 500, 1000},    // 568 × 0.45 = 255.6 < 256; 568 × 0.8 = 454.4 < 512
		{569, 1, 256.05, 512, 500, 1000},
		{640, 1, 288, 512, 512, 1024}, // 640 × 0.8 = 512: the limit's turn; 640 × 1.6 = 1024
		{625, 1, 281.25, 512, 500, 1000},
	} {
		mr, ml, cr, cl := nodeWright(c.n, c.p)
		near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
		if !near(mr, c.memReq) || !near(ml, c.memLim) || !near(cr, c.cpuReq) || !near(cl, c.cpuLim) {
			t.Errorf("N=%d P=%d: memory %v/%v Mi, CPU %v/%v m; want %v/%v, %v/%v", c.n, c.p, mr, ml, cr, cl, c.memReq, c.memLim, c.cpuReq, c.cpuLim)
		}
	}
}

// TestReconcilesIn reads the agent's own counter family (both results)
// and refuses a page without it.
func TestReconcilesIn(t *testing.T) {
	page := "# HELP rdmaform_agent_reconciles_total Reconciles of the node by result.\n# TYPE rdmaform_agent_reconciles_total counter\n" +
		"rdmaform_agent_reconciles_total{result=\"success\"} 7\nrdmaform_agent_reconciles_total{result=\"error\"} 2\nrdmaform_agent_activations_total{result=\"success\"} 9\n"
	if v, err := reconcilesIn(page); err != nil || v != 9 {
		t.Errorf("reconcilesIn = %v, %v; want 9", v, err)
	}
	if _, err := reconcilesIn("rdmaform_agent_activations_total{result=\"success\"} 9\n"); err == nil {
		t.Error("a page without the family: no error")
	}
}

func TestLabel(t *testing.T) {
	s := `apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="nodes",scope="resource",subresource="",verb="GET",version="v1"}`
	if got := label(s, "verb"); got != "GET" {
		t.Errorf("verb %q", got)
	}
	if got := label(s, "resource"); got != "nodes" {
		t.Errorf("resource %q", got)
	}
	if got := label(s, "missing"); got != "" {
		t.Errorf("missing %q", got)
	}
}

// TestCountingTransport tells reads, writes and watches apart.
func TestCountingTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	var c counter
	cfg := counted(&rest.Config{Host: srv.URL}, &c)
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ method, path string }{
		{"GET", "/api/v1/nodes/a"},
		{"GET", "/api/v1/nodes?fieldSelector=metadata.name%3Da&watch=true"},
		{"PUT", "/apis/rdmaform.io/v1alpha1/rdmahoststates/a"},
		{"POST", "/apis/rdmaform.io/v1alpha1/rdmahoststates"},
		{"DELETE", "/apis/coordination.k8s.io/v1/namespaces/x/leases/y"},
		{"GET", "/apis/rdmaform.io/v1alpha1/rdmahostconfigs"},
	} {
		req, _ := http.NewRequest(r.method, srv.URL+r.path, nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if c.all.Load() != 6 || c.writes.Load() != 3 || c.watches.Load() != 1 {
		t.Errorf("all %d, writes %d, watches %d; want 6, 3, 1", c.all.Load(), c.writes.Load(), c.watches.Load())
	}
}

// TestAgentFlags: each of the agent part's limits one past it is a usage
// error (exit 2) before anything runs.
func TestAgentFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-agent-nodes", "0"},
		{"-agent-inprocess", "-1"},
		{"-agent-interval", "999ms"},
		{"-agent-window", "999ms"},
		{"-agent-idle", "999ms"},
	} {
		var out, errb strings.Builder
		if code := run(append([]string{"-only", "agent"}, args...), nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "-agent-nodes") {
			t.Errorf("%v: exit %d, want 2 with the agent flags named:\n%s", args, code, errb.String())
		}
	}
}
