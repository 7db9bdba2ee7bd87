package audit_test

import (
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/audit"
	"github.com/rdmaform/rdmaform/internal/testlab/promcheck"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/probe"
)

// TestMetricFamilies: a report with one of everything gives exactly the
// families of audit.MetricFamilies (the table docs/reference/metrics.md
// is made from), in its order, each with its HELP and TYPE and every
// series with the table's labels.
func TestMetricFamilies(t *testing.T) {
	r := &audit.Report{
		Rdmaform: audit.Build{Version: "1.0.0", Commit: "abc"},
		Time:     time.Unix(1772366400, 0).UTC(),
		Checks: []audit.Result{
			{Resource: "rdma_cm[mlx5_0/1]", Check: audit.CheckDrift, Status: audit.Fail},
			{Resource: "firmware[0000:3b:00.0]", Check: audit.CheckPendingReboot, Status: audit.Fail},
			{Resource: "port[mlx5_0/1]", Check: audit.CheckRate, Status: audit.Fail},
			{Resource: "port[mlx5_0/1]", Check: audit.CheckState, Status: audit.Waived},
		},
		ActivationFailures: []plan.ActivationFailure{{Address: plan.Address{Kind: "firmware", Key: "0000:3b:00.0"}, Attribute: "LINK_TYPE_P1"}},
		Probes: []probe.Result{
			{Name: "peer", Kind: "ping", Target: "192.0.2.2", Passed: true, Outcome: probe.OutcomePassed, RTTms: 0.1},
			{Name: "bw", Kind: "bandwidth", Target: "192.0.2.2", Outcome: probe.OutcomeFailed, Perf: &probe.Perf{BandwidthGbps: 96.62, FloorGbps: 97}},
			{Name: "lat", Kind: "latency", Target: "192.0.2.2", Passed: true, Outcome: probe.OutcomePassed, Perf: &probe.Perf{LatencyUs: 1.6, CeilingUs: 5}},
		},
	}
	text := audit.Prometheus(r)
	for _, p := range promcheck.Families(text, audit.MetricFamilies) {
		t.Error(p)
	}
}
