// Package promcheck compares a Prometheus text exposition with the table
// of metric families it is written from (audit.MetricFamilies,
// agent.MetricFamilies), for tests: the table is what
// docs/reference/metrics.md says, the exposition what a scraper gets.
package promcheck

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/rdmaform/rdmaform/audit"
)

var (
	headerRE    = regexp.MustCompile(`^# (HELP|TYPE) (\S+) (.+)$`)
	seriesRE    = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$`)
	labelNameRE = regexp.MustCompile(`(?:^|,)([a-zA-Z_][a-zA-Z0-9_]*)="`)
)

// Families lists where text and want differ: a family not in the table,
// a HELP or TYPE other than the table's, series whose label names are
// not the table's, families in another order, or a family of the table
// with no series. An exposition that shows every family gives none.
func Families(text string, want []audit.Metric) []string {
	var problems []string
	byName := map[string]audit.Metric{}
	var wantNames, gotNames []string
	for _, m := range want {
		byName[m.Name] = m
		wantNames = append(wantNames, m.Name)
	}
	series := map[string]int{}
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if h := headerRE.FindStringSubmatch(line); h != nil {
			m, ok := byName[h[2]]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s is not in the table", h[2]))
			case h[1] == "HELP" && h[3] != m.Help:
				problems = append(problems, fmt.Sprintf("%s: HELP %q, the table says %q", h[2], h[3], m.Help))
			case h[1] == "TYPE" && h[3] != m.Type:
				problems = append(problems, fmt.Sprintf("%s: TYPE %q, the table says %q", h[2], h[3], m.Type))
			}
			if h[1] == "HELP" {
				gotNames = append(gotNames, h[2])
			}
			continue
		}
		s := seriesRE.FindStringSubmatch(line)
		if s == nil {
			problems = append(problems, fmt.Sprintf("not a series: %q", line))
			continue
		}
		series[s[1]]++
		var labels []string
		for _, l := range labelNameRE.FindAllStringSubmatch(s[2], -1) {
			labels = append(labels, l[1])
		}
		if m := byName[s[1]]; !slices.Equal(labels, m.Labels) {
			problems = append(problems, fmt.Sprintf("%s: labels %v, the table says %v", line, labels, m.Labels))
		}
	}
	if !slices.Equal(gotNames, wantNames) {
		problems = append(problems, fmt.Sprintf("families %v, the table says %v", gotNames, wantNames))
	}
	for _, n := range wantNames {
		if series[n] == 0 {
			problems = append(problems, fmt.Sprintf("%s has no series", n))
		}
	}
	return problems
}
