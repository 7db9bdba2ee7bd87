package audit_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/audit"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// TestJudge: which checks make a health verdict CRITICAL, WARNING or
// UNKNOWN, the order of the problems (most severe first), and the
// summary line.
func TestJudge(t *testing.T) {
	pass := audit.Result{Resource: "port[mlx5_0/1]", Check: audit.CheckState}
	down := audit.Result{Resource: "port[mlx5_0/1]", Check: audit.CheckState, Status: audit.Fail, Message: "DOWN, expected ACTIVE"}
	drift := audit.Result{Resource: "interface[ib0]", Check: audit.CheckDrift, Status: audit.Fail, Message: "update (mtu: 2044 -> 4092)"}
	pending := audit.Result{Resource: "firmware[0000:3b:00.0]", Check: audit.CheckPendingReboot, Status: audit.Pending, Message: "SRIOV_EN staged for next boot"}
	waived := audit.Result{Resource: "port[mlx5_1/1]", Check: audit.CheckState, Status: audit.Waived, Message: "DOWN"}
	gpu := audit.Result{Resource: "gpu[0000:17:00.0]", Check: audit.CheckGPUPeerMemory, Status: audit.Fail, Message: "nvidia_peermem is not loaded"}
	wrongHost := audit.Result{Resource: "host", Check: audit.CheckHostname, Status: audit.Fail, Message: `this host is "n2"; the spec is for "n1"`}
	pos := schema.Pos{File: "s.yaml", Line: 5, Col: 9}
	af := plan.ActivationFailure{Address: plan.Address{Kind: "firmware", Key: "0000:3b:00.0"}, Attribute: "SRIOV_EN", Current: "False", Staged: "true", StagedAt: "2026-03-01T10:00:00Z", Source: &pos}
	afErr := schema.Finding{Pos: pos, Message: "SRIOV_EN did not take"}
	readErr := schema.Finding{Pos: schema.Pos{File: "s.yaml", Line: 9, Col: 3}, Message: "mlxconfig: exit 1"}

	report := func(checks []audit.Result, errs []schema.Finding, afs ...plan.ActivationFailure) *audit.Report {
		r := &audit.Report{Checks: checks, Errors: errs, ActivationFailures: afs}
		for _, c := range checks {
			r.Summary.Checks++
			switch c.Status {
			case audit.Pass:
				r.Summary.Passed++
			case audit.Waived:
				r.Summary.Waived++
			}
		}
		return r
	}
	type problem struct{ Status, Line string }
	tests := []struct {
		name     string
		r        *audit.Report
		o        audit.HealthOptions
		want     audit.NagiosStatus
		problems []problem
		summary  string
	}{
		{name: "all pass", r: report([]audit.Result{pass}, nil), want: audit.NagiosOK,
			summary: "RDMA OK: 1 checks passed | checks=1 critical=0 warning=0 unknown=0"},
		{name: "waived counts as passed", r: report([]audit.Result{pass, waived}, nil), want: audit.NagiosOK,
			summary: "RDMA OK: 1 checks passed (1 waived) | checks=2 critical=0 warning=0 unknown=0"},
		{name: "drift warns", r: report([]audit.Result{pass, drift}, nil), want: audit.NagiosWarning,
			problems: []problem{{"WARNING", "interface[ib0] drift: update (mtu: 2044 -> 4092)"}},
			summary:  "RDMA WARNING: interface[ib0] drift: update (mtu: 2044 -> 4092) | checks=2 critical=0 warning=1 unknown=0"},
		{name: "drift critical when asked", r: report([]audit.Result{drift}, nil), o: audit.HealthOptions{DriftCritical: true}, want: audit.NagiosCritical,
			problems: []problem{{"CRITICAL", "interface[ib0] drift: update (mtu: 2044 -> 4092)"}}},
		{name: "staged for next boot warns", r: report([]audit.Result{pending}, nil), want: audit.NagiosWarning,
			problems: []problem{{"WARNING", "firmware[0000:3b:00.0] pending_reboot: SRIOV_EN staged for next boot"}}},
		{name: "a port down is critical, first", r: report([]audit.Result{drift, down}, nil), want: audit.NagiosCritical,
			problems: []problem{{"CRITICAL", "port[mlx5_0/1] state: DOWN, expected ACTIVE"}, {"WARNING", "interface[ib0] drift: update (mtu: 2044 -> 4092)"}},
			summary:  "RDMA CRITICAL: port[mlx5_0/1] state: DOWN, expected ACTIVE (and 1 more) | checks=2 critical=1 warning=1 unknown=0"},
		{name: "GPUDirect is critical", r: report([]audit.Result{gpu}, nil), want: audit.NagiosCritical,
			problems: []problem{{"CRITICAL", "gpu[0000:17:00.0] gpu_peer_memory: nvidia_peermem is not loaded"}}},
		{name: "did not take is critical, once", r: report(nil, []schema.Finding{afErr}, af), want: audit.NagiosCritical,
			problems: []problem{{"CRITICAL", "firmware[0000:3b:00.0] activation: SRIOV_EN staged true at 2026-03-01T10:00:00Z did not take: still False after the reboot"}}},
		{name: "an unreadable part is unknown, above a warning", r: report([]audit.Result{drift}, []schema.Finding{readErr}), want: audit.NagiosUnknown,
			problems: []problem{{"UNKNOWN", "host error: mlxconfig: exit 1"}, {"WARNING", "interface[ib0] drift: update (mtu: 2044 -> 4092)"}}},
		{name: "critical outranks unknown", r: report([]audit.Result{down}, []schema.Finding{readErr}), want: audit.NagiosCritical,
			problems: []problem{{"CRITICAL", "port[mlx5_0/1] state: DOWN, expected ACTIVE"}, {"UNKNOWN", "host error: mlxconfig: exit 1"}}},
		{name: "a spec for another host is unknown whatever else fails", r: report([]audit.Result{down, wrongHost}, nil), want: audit.NagiosUnknown,
			problems: []problem{{"CRITICAL", "port[mlx5_0/1] state: DOWN, expected ACTIVE"}, {"UNKNOWN", `host hostname: this host is "n2"; the spec is for "n1"`}}},
		{name: "a pipe would start the perfdata", r: report([]audit.Result{{Resource: "x", Check: audit.CheckFinding, Status: audit.Fail, Message: "a | b\nc"}}, nil), want: audit.NagiosCritical,
			problems: []problem{{"CRITICAL", "x finding: a / b c"}},
			summary:  "RDMA CRITICAL: x finding: a / b c | checks=1 critical=1 warning=0 unknown=0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := audit.Judge(tt.r, tt.o)
			if h.Status != tt.want {
				t.Errorf("status %s, want %s", h.Status, tt.want)
			}
			var got []problem
			for _, p := range h.Problems {
				got = append(got, problem{p.Status.String(), p.Line()})
			}
			if diff := cmp.Diff(tt.problems, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			if tt.summary != "" && h.SummaryLine() != tt.summary {
				t.Errorf("summary\n got %s\nwant %s", h.SummaryLine(), tt.summary)
			}
		})
	}
}
