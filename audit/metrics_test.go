package audit_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/audit"
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
		Probes:             []probe.Result{{Name: "peer", Kind: "ping", Target: "192.0.2.2", Passed: true, Outcome: probe.OutcomePassed, RTTms: 0.1}},
	}
	text := audit.Prometheus(r)
	checkFamilies(t, text, audit.MetricFamilies)
}

var (
	familyHeaderRE = regexp.MustCompile(`^# (HELP|TYPE) (\S+) (.+)$`)
	seriesRE       = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$`)
	labelNameRE    = regexp.MustCompile(`(?:^|,)([a-zA-Z_][a-zA-Z0-9_]*)="`)
)

// checkFamilies compares an exposition with the table it is written from.
func checkFamilies(t *testing.T, text string, want []audit.Metric) {
	t.Helper()
	byName := map[string]audit.Metric{}
	var wantNames, gotNames []string
	for _, m := range want {
		byName[m.Name] = m
		wantNames = append(wantNames, m.Name)
	}
	series := map[string]int{}
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if h := familyHeaderRE.FindStringSubmatch(line); h != nil {
			m, ok := byName[h[2]]
			switch {
			case !ok:
				t.Errorf("%s is not in the table", h[2])
			case h[1] == "HELP" && h[3] != m.Help:
				t.Errorf("%s: HELP %q, the table says %q", h[2], h[3], m.Help)
			case h[1] == "TYPE" && h[3] != m.Type:
				t.Errorf("%s: TYPE %q, the table says %q", h[2], h[3], m.Type)
			}
			if h[1] == "HELP" {
				gotNames = append(gotNames, h[2])
			}
			continue
		}
		s := seriesRE.FindStringSubmatch(line)
		if s == nil {
			t.Errorf("not a series: %q", line)
			continue
		}
		series[s[1]]++
		var labels []string
		for _, l := range labelNameRE.FindAllStringSubmatch(s[2], -1) {
			labels = append(labels, l[1])
		}
		if m := byName[s[1]]; !slices.Equal(labels, m.Labels) {
			t.Errorf("%s: labels %v, the table says %v", line, labels, m.Labels)
		}
	}
	if !slices.Equal(gotNames, wantNames) {
		t.Errorf("families %v, the table says %v", gotNames, wantNames)
	}
	for _, n := range wantNames {
		if series[n] == 0 {
			t.Errorf("%s has no series: the report does not show it", n)
		}
	}
}
