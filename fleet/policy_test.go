package fleet_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/fleet"
)

func TestReadPolicy(t *testing.T) {
	const full = `# every key
version: 1
max_unavailable: 10%
max_per_domain: 2
canary: 3
bake: 10m
ramp:
  steps: [5, 20%]
stop:
  failed_hosts: 4
  failed_percent: 10
compartments:
  order: sequential
  groups: [gpu, storage-nodes]
`
	r, err := fleet.ReadPolicy("p.yaml", []byte(full))
	if err != nil {
		t.Fatal(err)
	}
	want := fleet.Rollout{
		Policy: fleet.Policy{MaxUnavailable: fleet.Limit{Percent: 10}, MaxPerDomain: 2},
		Canary: 3, Bake: 10 * time.Minute, Ramp: fleet.Ramp{Steps: []fleet.Limit{{N: 5}, {Percent: 20}}},
		Stop:         fleet.Stop{FailedHosts: 4, FailedPercent: 10},
		Compartments: fleet.Compartments{Order: "sequential", Groups: []string{"gpu", "storage-nodes"}},
	}
	if d := cmp.Diff(want, r); d != "" {
		t.Errorf("full policy (-want +got):\n%s", d)
	}
	// Empty: the defaults. A ramp without canary: a canary of 1.
	for _, doc := range []string{"", "version: 1\n"} {
		if r, err := fleet.ReadPolicy("p.yaml", []byte(doc)); err != nil || !cmp.Equal(r, fleet.DefaultRollout()) {
			t.Errorf("%q: %+v, %v; want the default policy", doc, r, err)
		}
	}
	if r, err := fleet.ReadPolicy("p.yaml", []byte("ramp: {factor: 2}\n")); err != nil || r.Canary != 1 || r.Ramp.Factor != 2 {
		t.Errorf("a ramp without canary: %+v, %v; want canary 1, factor 2", r, err)
	}
}

// TestReadPolicyLimits: every number at its limit and one past, and
// every error with file:line:col.
func TestReadPolicyLimits(t *testing.T) {
	list := func(n int, item string) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprintf(item, i)
		}
		return "[" + strings.Join(s, ", ") + "]"
	}
	ramp := "ramp: {steps: [2]}\n"
	for _, tc := range []struct {
		doc     string
		wantErr string // "" for none
	}{
		{"max_unavailable: 100000\n", ""},
		{"max_unavailable: 100001\n", `p.yaml:1:18: max_unavailable: want a number of hosts (1 to 100000) or a percentage (1% to 100%), not "100001"`},
		{"max_unavailable: 100%\n", ""},
		{"max_unavailable: 101%\n", `p.yaml:1:18: max_unavailable: want`},
		{"max_unavailable: 0\n", `p.yaml:1:18: max_unavailable: want`},
		{"max_per_domain: 100000\n", ""},
		{"max_per_domain: 100001\n", `p.yaml:1:17: max_per_domain: want a whole number from 1 to 100000, not "100001"`},
		{"max_per_domain: 0\n", `p.yaml:1:17: max_per_domain: want a whole number from 1 to 100000, not "0"`},
		{ramp + "canary: 100000\n", ""},
		{ramp + "canary: 100001\n", `p.yaml:2:9: canary: want a whole number from 1 to 100000, not "100001"`},
		{ramp + "canary: 0\n", `p.yaml:2:9: canary: want a whole number from 1 to 100000, not "0"`},
		{ramp + "canary: -1\n", `p.yaml:2:9: canary: want a whole number`},
		{ramp + "canary: 1.5\n", `p.yaml:2:9: canary: want a whole number`},
		{"canary: 2\n", `p.yaml:1:9: canary: a canary wave needs a ramp (ramp.steps or ramp.factor) for the waves after it`},
		{"ramp:\n  steps: " + list(100, "%d%%") + "\n", `p.yaml:2:11: ramp.steps[0]: want`}, // 0%: the entries are checked
		{"ramp:\n  steps: " + list(100, "1%d") + "\n", ""},
		{"ramp:\n  steps: " + list(101, "1%d") + "\n", `p.yaml:2:10: ramp.steps: want a list of 1 to 100 sizes (N hosts or P%)`},
		{"ramp:\n  steps: []\n", `p.yaml:2:10: ramp.steps: want a list of 1 to 100 sizes`},
		{"ramp:\n  steps: [5, 100001]\n", `p.yaml:2:14: ramp.steps[1]: want a number of hosts (1 to 100000) or a percentage (1% to 100%), not "100001"`},
		{"ramp:\n  steps: [5, 101%]\n", `p.yaml:2:14: ramp.steps[1]: want`},
		{"ramp: {factor: 10}\n", ""},
		{"ramp: {factor: 10.01}\n", `p.yaml:1:16: ramp.factor: want a number more than 1 and at most 10 (2, 1.5), not "10.01"`},
		{"ramp: {factor: 1.01}\n", ""},
		{"ramp: {factor: 1}\n", `p.yaml:1:16: ramp.factor: want a number more than 1`},
		{"ramp: {factor: 1e1}\n", `p.yaml:1:16: ramp.factor: want a number more than 1`},
		{"ramp: {factor: .nan}\n", `p.yaml:1:16: ramp.factor: want`},
		{"ramp: {factor: 2, steps: [1]}\n", `p.yaml:1:7: ramp: steps or factor, not both`},
		{"ramp: {}\n", `p.yaml:1:7: ramp: want steps or factor`},
		{"ramp: {grow: 2}\n", `p.yaml:1:8: ramp: unknown key "grow" (steps, factor)`},
		{"ramp: 2\n", `p.yaml:1:7: ramp: want a mapping with steps or factor`},
		{"bake: 24h\n", ""},
		{"bake: 86401s\n", `p.yaml:1:7: bake: want a duration in whole seconds from 0s to 24h (90s, 10m, 1h30m), not "86401s"`},
		{"bake: 0s\n", ""},
		{"bake: -1s\n", `p.yaml:1:7: bake: want a duration in whole seconds`},
		{"bake: 1500ms\n", `p.yaml:1:7: bake: want a duration in whole seconds`},
		{"bake: 600\n", `p.yaml:1:7: bake: want a duration in whole seconds`}, // a unit is needed
		{"stop: {failed_hosts: 100000}\n", ""},
		{"stop: {failed_hosts: 100001}\n", `p.yaml:1:22: stop.failed_hosts: want a whole number from 1 to 100000, not "100001"`},
		{"stop: {failed_hosts: 0}\n", `p.yaml:1:22: stop.failed_hosts: want a whole number from 1 to 100000, not "0"`},
		{"stop: {failed_percent: 99}\n", ""},
		{"stop: {failed_percent: 100}\n", `p.yaml:1:24: stop.failed_percent: want a whole number from 0 to 99, not "100"`},
		{"stop: {failed_percent: 0}\n", ""},
		{"stop: {failed_percent: -1}\n", `p.yaml:1:24: stop.failed_percent: want a whole number from 0 to 99, not "-1"`},
		{"stop: {failed: 1}\n", `p.yaml:1:8: stop: unknown key "failed" (failed_hosts, failed_percent)`},
		{"compartments:\n  groups: " + list(64, "g%d") + "\n", ""},
		{"compartments:\n  groups: " + list(65, "g%d") + "\n", `p.yaml:2:11: compartments.groups: want a list of 1 to 64 inventory groups`},
		{"compartments:\n  groups: [" + strings.Repeat("g", 255) + "]\n", ""},
		{"compartments:\n  groups: [" + strings.Repeat("g", 256) + "]\n", `p.yaml:2:12: compartments.groups[0]: "` + strings.Repeat("g", 256) + `" is not an inventory group name (letters, digits, _ and -, at most 255)`},
		{"compartments:\n  groups: [gpu, gpu]\n", `p.yaml:2:17: compartments.groups[1]: gpu is named twice`},
		{"compartments:\n  groups: [../x]\n", `p.yaml:2:12: compartments.groups[0]: "../x" is not an inventory group name`},
		{"compartments:\n  order: parallel\n  groups: [a]\n", ""},
		{"compartments:\n  order: random\n  groups: [a]\n", `p.yaml:2:10: compartments.order: want sequential (each compartment's waves before the next's) or parallel (side by side), not "random"`},
		{"compartments: {order: sequential}\n", `p.yaml:1:15: compartments: want groups`},
		{"version: 2\n", `p.yaml:1:10: version: want 1, not "2"`},
		{"max_unavailable: 5\nmax_unavailable: 6\n", `p.yaml:2:1: max_unavailable is given twice`},
		{"waves: 3\n", `p.yaml:1:1: unknown key "waves" (version, max_unavailable, max_per_domain, canary, bake, ramp, stop, compartments)`},
		{"- 1\n", `p.yaml:1:1: want a mapping`},
		{"a: [\n", `p.yaml: yaml: line 1`},
	} {
		_, err := fleet.ReadPolicy("p.yaml", []byte(tc.doc))
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%q: %v, want no error", tc.doc, err)
		case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
			t.Errorf("%q: error %v, want it to start with %q", tc.doc, err, tc.wantErr)
		case err != nil && !errors.Is(err, fleet.ErrInventory):
			// The policy's errors are the inventory's kind (file:line:col).
			t.Errorf("%q: %v is not a fleet.Error", tc.doc, err)
		}
	}
}

// TestStopAfter: each stop rule at its limit and one past.
func TestStopAfter(t *testing.T) {
	for _, tc := range []struct {
		s                             fleet.Stop
		failed, waveFailed, waveHosts int
		stop                          bool
		why                           string
	}{
		{fleet.DefaultRollout().Stop, 0, 0, 10, false, ""},
		{fleet.DefaultRollout().Stop, 1, 1, 10, true, "1 failed host: the policy stops at 1 (stop.failed_hosts)"},
		{fleet.Stop{FailedHosts: 3, FailedPercent: -1}, 2, 2, 2, false, ""}, // 100% of a wave, no percent rule
		{fleet.Stop{FailedHosts: 3, FailedPercent: -1}, 3, 1, 10, true, "3 failed hosts: the policy stops at 3 (stop.failed_hosts)"},
		{fleet.Stop{FailedHosts: 100, FailedPercent: 10}, 1, 1, 10, false, ""}, // 10%: the limit
		{fleet.Stop{FailedHosts: 100, FailedPercent: 10}, 2, 2, 10, true, "2 of the wave's 10 hosts failed, more than 10% (stop.failed_percent)"},
		{fleet.Stop{FailedHosts: 100, FailedPercent: 10}, 1, 1, 9, true, "1 of the wave's 9 hosts failed, more than 10% (stop.failed_percent)"}, // 11.1%
		{fleet.Stop{FailedHosts: 100, FailedPercent: 0}, 0, 0, 10, false, ""},
		{fleet.Stop{FailedHosts: 100, FailedPercent: 0}, 1, 1, 10, true, "1 of the wave's 10 hosts failed, more than 0% (stop.failed_percent)"},
		{fleet.Stop{FailedHosts: 100, FailedPercent: 99}, 99, 99, 100, false, ""},
		{fleet.Stop{FailedHosts: 100, FailedPercent: 99}, 100, 100, 100, true, "100 failed hosts: the policy stops at 100 (stop.failed_hosts)"},
	} {
		stop, why := tc.s.StopAfter(tc.failed, tc.waveFailed, tc.waveHosts)
		if stop != tc.stop || why != tc.why {
			t.Errorf("%+v StopAfter(%d, %d, %d) = %v %q, want %v %q", tc.s, tc.failed, tc.waveFailed, tc.waveHosts, stop, why, tc.stop, tc.why)
		}
	}
}
