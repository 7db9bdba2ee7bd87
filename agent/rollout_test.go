package agent_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/rdmaform/rdmaform/agent"
	"github.com/rdmaform/rdmaform/api/v1alpha1"
	"github.com/rdmaform/rdmaform/fleet"
)

func i32(n int32) *int32 { return &n }

// TestRolloutOf: a config's policy.rollout is the policy file's document:
// the same fields give the same fleet.Rollout as the file, and the
// file's limits hold (each at its limit and one past), with the file's
// messages.
func TestRolloutOf(t *testing.T) {
	file := `version: 1
max_unavailable: 25%
max_per_domain: 2
canary: 3
bake: 90s
ramp: {steps: [5, 20%]}
stop: {failed_hosts: 4, failed_percent: 10}
compartments: {order: sequential, groups: [gpu, storage]}
`
	want, err := fleet.ReadPolicy("p.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	mu := intstr.FromString("25%")
	got, err := agent.RolloutOf(v1alpha1.Policy{MaxUnavailable: &mu, Rollout: &v1alpha1.Rollout{
		MaxPerDomain: i32(2), Canary: i32(3), Bake: &metav1.Duration{Duration: 90 * time.Second},
		Ramp:         &v1alpha1.RolloutRamp{Steps: []intstr.IntOrString{intstr.FromInt32(5), intstr.FromString("20%")}},
		Stop:         &v1alpha1.RolloutStop{FailedHosts: i32(4), FailedPercent: i32(10)},
		Compartments: &v1alpha1.RolloutCompartments{Order: "sequential", Groups: []string{"gpu", "storage"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, *got); d != "" {
		t.Errorf("the CR's policy differs from the file's (-file +CR):\n%s", d)
	}
	// No rollout: nil (the agent's slots as before). An empty one: the
	// file's defaults, with the agent's maxUnavailable default of 1.
	if r, err := agent.RolloutOf(v1alpha1.Policy{}); r != nil || err != nil {
		t.Errorf("no rollout: %+v, %v; want nil", r, err)
	}
	r, err := agent.RolloutOf(v1alpha1.Policy{Rollout: &v1alpha1.Rollout{}})
	d := fleet.DefaultRollout()
	d.MaxUnavailable = fleet.Limit{N: 1}
	if err != nil || !cmp.Equal(*r, d) {
		t.Errorf("empty rollout: %+v, %v; want %+v", r, err, d)
	}

	for _, tc := range []struct {
		name    string
		ro      v1alpha1.Rollout
		wantErr string
	}{
		{"canary at the limit", v1alpha1.Rollout{Canary: i32(100000), Ramp: &v1alpha1.RolloutRamp{Factor: "2"}}, ""},
		{"canary past it", v1alpha1.Rollout{Canary: i32(100001), Ramp: &v1alpha1.RolloutRamp{Factor: "2"}}, `canary: want a whole number from 1 to 100000, not "100001"`},
		{"canary without ramp", v1alpha1.Rollout{Canary: i32(2)}, "canary: a canary wave needs a ramp"},
		{"factor at the limit", v1alpha1.Rollout{Ramp: &v1alpha1.RolloutRamp{Factor: "10"}}, ""},
		{"factor past it", v1alpha1.Rollout{Ramp: &v1alpha1.RolloutRamp{Factor: "10.5"}}, `ramp.factor: want a number more than 1 and at most 10`},
		{"bake at the limit", v1alpha1.Rollout{Bake: &metav1.Duration{Duration: 24 * time.Hour}}, ""},
		{"bake past it", v1alpha1.Rollout{Bake: &metav1.Duration{Duration: 24*time.Hour + time.Second}}, `bake: want a duration in whole seconds from 0s to 24h`},
		{"failed_percent at the limit", v1alpha1.Rollout{Stop: &v1alpha1.RolloutStop{FailedPercent: i32(99)}}, ""},
		{"failed_percent past it", v1alpha1.Rollout{Stop: &v1alpha1.RolloutStop{FailedPercent: i32(100)}}, `stop.failed_percent: want a whole number from 0 to 99, not "100"`},
		{"failed_hosts past the low limit", v1alpha1.Rollout{Stop: &v1alpha1.RolloutStop{FailedHosts: i32(0)}}, `stop.failed_hosts: want a whole number from 1 to 100000, not "0"`},
		{"parallel", v1alpha1.Rollout{Compartments: &v1alpha1.RolloutCompartments{Order: "parallel", Groups: []string{"a"}}}, ""},
		{"another order", v1alpha1.Rollout{Compartments: &v1alpha1.RolloutCompartments{Order: "random", Groups: []string{"a"}}}, `compartments.order: want sequential (each compartment's waves before the next's) or parallel`},
	} {
		_, err := agent.RolloutOf(v1alpha1.Policy{Rollout: &tc.ro})
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "spec.policy.rollout:")):
			t.Errorf("%s: error %v, want spec.policy.rollout:...: %s", tc.name, err, tc.wantErr)
		}
	}
}
