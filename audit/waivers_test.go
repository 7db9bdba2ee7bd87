package audit

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/schema"
)

func TestLoadWaiversFindings(t *testing.T) {
	tests := []struct {
		name string
		file string
		want []string
	}{
		{"empty file", "", nil},
		{"good", "- {resource: \"rdma_cm[mlx5_0/1]\", check: drift, reason: vendor case, expires: 2027-01-31}\n", nil},
		{"not a list", "resource: x\n", []string{"w.yaml:1:1: error: $: a waiver file is a list of {resource, check, reason, expires}"}},
		{"every problem at once", `- {resource: "port[mlx5_0/1]", check: stat, reason: x, expires: 2027-01-31}
- {resource: "port[mlx5_0/1]", check: state, expires: 31.01.2027}
- {resource: "port[mlx5_0/1]", check: state, reason: x, expires: 2027-01-31, owner: me}
`, []string{
			"w.yaml:1:3: error: $[0].check: unknown check \"stat\" (known: *, hostname, drift, pending_reboot, finding, link_layer, phys_state, state, rate, subnet_manager, roce_v2_gid, roce_mode, pkey, lossless, probe, gpu_relation, gpu_acs, gpu_ats, gpu_relaxed_ordering, gpu_peer_memory, gpu_driver_params, gpu_numa)",
			"w.yaml:2:3: error: $[1]: reason: is required",
			"w.yaml:2:3: error: $[1].expires: \"31.01.2027\" is not a date (YYYY-MM-DD)",
			"w.yaml:3:78: error: $[2].owner: unknown key \"owner\"; a waiver has resource, check, reason, expires",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, rep := LoadWaivers("w.yaml", []byte(tt.file))
			var got []string
			for _, f := range rep {
				got = append(got, f.String())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestApplyWaivers: a waiver holds through its expiry day and lapses the
// day after; a lapsed waiver leaves the check failing with the waiver
// attached; "*" covers every check of the resource; passing checks are
// never waived; a waiver that matched nothing is a warning.
func TestApplyWaivers(t *testing.T) {
	ws := []Waiver{
		{Resource: "rdma_cm[mlx5_0/1]", Check: "drift", Reason: "case 1", Expires: "2026-03-01"},
		{Resource: "port[mlx5_1/1]", Check: "*", Reason: "rma", Expires: "2026-06-30"},
		{Resource: "port[mlx5_2/1]", Check: "state", Reason: "old", Expires: "2026-01-01"},
		{Resource: "port[mlx5_2/1]", Check: "state", Reason: "renewed", Expires: "2026-12-31"},
		{Resource: "host", Check: "hostname", Reason: "passes now", Expires: "2027-01-01", Pos: schema.Pos{File: "w.yaml", Line: 5, Col: 3}},
	}
	results := func() []Result {
		return []Result{
			{Resource: "rdma_cm[mlx5_0/1]", Check: "drift", Status: Fail},
			{Resource: "port[mlx5_1/1]", Check: "state", Status: Fail},
			{Resource: "port[mlx5_1/1]", Check: "rate", Status: Fail},
			{Resource: "port[mlx5_2/1]", Check: "state", Status: Pending},
			{Resource: "host", Check: "hostname", Status: Pass},
		}
	}
	type got struct {
		Resource, Check string
		Status          Status
		Waiver          *AppliedWaiver
	}
	tests := []struct {
		name     string
		today    time.Time
		want     []got
		warnings []string
	}{
		{"on the expiry day", time.Date(2026, 3, 1, 23, 59, 0, 0, time.UTC), []got{
			{"rdma_cm[mlx5_0/1]", "drift", Waived, &AppliedWaiver{"case 1", "2026-03-01", false}},
			{"port[mlx5_1/1]", "state", Waived, &AppliedWaiver{"rma", "2026-06-30", false}},
			{"port[mlx5_1/1]", "rate", Waived, &AppliedWaiver{"rma", "2026-06-30", false}},
			{"port[mlx5_2/1]", "state", Waived, &AppliedWaiver{"renewed", "2026-12-31", false}},
			{"host", "hostname", Pass, nil},
		}, []string{"w.yaml:5:3: waiver for host hostname matches no failing check; it can be removed"}},
		{"the day after", time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), []got{
			{"rdma_cm[mlx5_0/1]", "drift", Fail, &AppliedWaiver{"case 1", "2026-03-01", true}},
			{"port[mlx5_1/1]", "state", Waived, &AppliedWaiver{"rma", "2026-06-30", false}},
			{"port[mlx5_1/1]", "rate", Waived, &AppliedWaiver{"rma", "2026-06-30", false}},
			{"port[mlx5_2/1]", "state", Waived, &AppliedWaiver{"renewed", "2026-12-31", false}},
			{"host", "hostname", Pass, nil},
		}, []string{"w.yaml:5:3: waiver for host hostname matches no failing check; it can be removed"}},
		{"everything lapsed", time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC), []got{
			{"rdma_cm[mlx5_0/1]", "drift", Fail, &AppliedWaiver{"case 1", "2026-03-01", true}},
			{"port[mlx5_1/1]", "state", Fail, &AppliedWaiver{"rma", "2026-06-30", true}},
			{"port[mlx5_1/1]", "rate", Fail, &AppliedWaiver{"rma", "2026-06-30", true}},
			{"port[mlx5_2/1]", "state", Pending, &AppliedWaiver{"renewed", "2026-12-31", true}},
			{"host", "hostname", Pass, nil},
		}, []string{"w.yaml:5:3: waiver for host hostname matches no failing check; it can be removed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := results()
			warnings := applyWaivers(rs, ws, tt.today)
			var g []got
			for _, r := range rs {
				g = append(g, got{r.Resource, r.Check, r.Status, r.Waiver})
			}
			if diff := cmp.Diff(tt.want, g); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.warnings, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEscapeLabel(t *testing.T) {
	for in, want := range map[string]string{
		`ipoib[a"b]`: `ipoib[a\"b]`,
		`a\b`:        `a\\b`,
		"a\nb":       `a\nb`,
		"plain[x/1]": "plain[x/1]",
	} {
		if got := escapeLabel(in); got != want {
			t.Errorf("escapeLabel(%q) = %q, want %q", in, got, want)
		}
	}
}
