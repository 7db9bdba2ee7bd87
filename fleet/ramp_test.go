package fleet_test

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/fleet"
)

// hostsN is n pending hosts node001..., over d domains (none when 0).
func hostsN(n, d int) *fleet.Inventory {
	i := &fleet.Inventory{}
	for k := 1; k <= n; k++ {
		h := fleet.Host{Name: fmt.Sprintf("node%03d", k)}
		if d > 0 {
			h.Domain = fmt.Sprintf("leaf%d", (k-1)%d+1)
		}
		i.Hosts = append(i.Hosts, h)
	}
	return i
}

func sizes(w *fleet.Waves) []int {
	var s []int
	for _, wv := range w.Waves {
		s = append(s, len(wv.Hosts))
	}
	return s
}

func ramped(mu fleet.Limit, perDomain, canary int, ramp fleet.Ramp) fleet.Rollout {
	r := fleet.DefaultRollout()
	r.MaxUnavailable, r.MaxPerDomain, r.Canary, r.Ramp = mu, perDomain, canary, ramp
	return r
}

// checkRolled is an independent check of a plan under a policy: every
// pending host in one wave, every wave within max_unavailable and
// max_per_domain, never two subnet manager hosts of a fabric, and the
// compartments' waves one after the other in the policy's order.
func checkRolled(t *testing.T, inv *fleet.Inventory, r fleet.Rollout, got *fleet.Rolled) {
	t.Helper()
	perWave := r.MaxUnavailable.Of(len(inv.Hosts))
	byName := map[string]fleet.Host{}
	for _, h := range inv.Hosts {
		byName[h.Name] = h
	}
	compOf := func(h fleet.Host) int {
		for i, g := range r.Compartments.Groups {
			for _, hg := range h.Groups {
				if hg == g {
					return i
				}
			}
		}
		return len(r.Compartments.Groups)
	}
	if len(got.Steps) != len(got.Waves.Waves) {
		t.Fatalf("%d steps for %d waves", len(got.Steps), len(got.Waves.Waves))
	}
	seen := map[string]int{}
	lastComp := 0
	for n, wv := range got.Waves.Waves {
		if len(wv.Hosts) == 0 || len(wv.Hosts) > perWave {
			t.Errorf("wave %d has %d hosts, want 1 to %d", n+1, len(wv.Hosts), perWave)
		}
		if st := got.Steps[n]; r.Ramp.On() && len(wv.Hosts) > st.Size {
			t.Errorf("wave %d has %d hosts, more than its step's %d (%s)", n+1, len(wv.Hosts), st.Size, st.Rule)
		}
		domains, sms := map[string]int{}, map[string]int{}
		comp := -1
		for _, name := range wv.Hosts {
			h := byName[name]
			seen[name]++
			if h.Pending == fleet.PendingNo {
				t.Errorf("wave %d holds %s, which has nothing pending", n+1, name)
			}
			if wv.Reasons[name] == "" {
				t.Errorf("wave %d: %s has no reason", n+1, name)
			}
			if h.Domain != "" {
				if domains[h.Domain]++; domains[h.Domain] > r.MaxPerDomain {
					t.Errorf("wave %d: %d hosts of %s, at most %d", n+1, domains[h.Domain], h.Domain, r.MaxPerDomain)
				}
			}
			if h.SM() {
				if sms[h.Fabric]++; sms[h.Fabric] > 1 {
					t.Errorf("wave %d: two subnet manager hosts of fabric %q", n+1, h.Fabric)
				}
			}
			c := compOf(h)
			if comp >= 0 && c != comp && r.Compartments.Order != fleet.OrderParallel {
				t.Errorf("wave %d mixes compartments", n+1)
			}
			comp = c
		}
		if comp < lastComp && r.Compartments.Order != fleet.OrderParallel {
			t.Errorf("wave %d: compartment %d after compartment %d", n+1, comp, lastComp)
		}
		lastComp = comp
	}
	for _, h := range inv.Hosts {
		if want := map[bool]int{true: 0, false: 1}[h.Pending == fleet.PendingNo]; seen[h.Name] != want {
			t.Errorf("%s is in %d waves, want %d", h.Name, seen[h.Name], want)
		}
	}
}

// TestPlanRolloutRamp: the waves' sizes follow the canary and the ramp,
// cut at max_unavailable; the canary at max_unavailable and one past.
func TestPlanRolloutRamp(t *testing.T) {
	for _, tc := range []struct {
		name string
		inv  *fleet.Inventory
		r    fleet.Rollout
		want []int
	}{
		{"steps, the last repeated, cut at 20", hostsN(100, 0), ramped(fleet.Limit{N: 20}, 1, 1, fleet.Ramp{Steps: []fleet.Limit{{Percent: 5}, {Percent: 30}}}),
			[]int{1, 5, 20, 20, 20, 20, 14}},
		{"factor 2 to max_unavailable", hostsN(40, 0), ramped(fleet.Limit{N: 10}, 1, 1, fleet.Ramp{Factor: 2}),
			[]int{1, 2, 4, 8, 10, 10, 5}},
		{"factor 1.5, rounded up", hostsN(20, 0), ramped(fleet.Limit{N: 100}, 1, 2, fleet.Ramp{Factor: 1.5}),
			[]int{2, 3, 5, 8, 2}},
		{"canary at max_unavailable", hostsN(10, 0), ramped(fleet.Limit{N: 3}, 1, 3, fleet.Ramp{Steps: []fleet.Limit{{N: 1}}}),
			[]int{3, 1, 1, 1, 1, 1, 1, 1}},
		{"percent max_unavailable (20% of 50 = 10)", hostsN(50, 0), ramped(fleet.Limit{Percent: 20}, 1, 10, fleet.Ramp{Steps: []fleet.Limit{{N: 11}}}),
			[]int{10, 10, 10, 10, 10}},
		// Five domains, 2 of a domain per wave: a wave holds at most 10.
		{"max_per_domain cuts a step", hostsN(30, 5), ramped(fleet.Limit{N: 100}, 2, 1, fleet.Ramp{Steps: []fleet.Limit{{N: 4}, {N: 100}}}),
			[]int{1, 4, 10, 10, 5}},
	} {
		got, err := fleet.PlanRollout(tc.inv, tc.r)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if d := cmp.Diff(tc.want, sizes(got.Waves)); d != "" {
			t.Errorf("%s: sizes (-want +got):\n%s", tc.name, d)
		}
		checkRolled(t, tc.inv, tc.r, got)
	}

	_, err := fleet.PlanRollout(hostsN(10, 0), ramped(fleet.Limit{N: 3}, 1, 4, fleet.Ramp{Steps: []fleet.Limit{{N: 1}}}))
	if err == nil || !errors.Is(err, fleet.ErrLimit) || err.Error() != "bad limit: canary 4: more than max_unavailable (3 hosts per wave)" {
		t.Errorf("canary one past max_unavailable: %v", err)
	}
	// The step's rule and, when the domains allowed fewer, why.
	got, err := fleet.PlanRollout(hostsN(30, 5), ramped(fleet.Limit{N: 100}, 2, 1, fleet.Ramp{Steps: []fleet.Limit{{N: 4}, {N: 101}}}))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []fleet.Step{
		{Index: 0, Rule: "canary: 1 host", Size: 1},
		{Index: 1, Rule: "ramp step 1: 4 hosts", Size: 4},
		{Index: 2, Rule: "ramp step 2: 101 hosts, cut to max_unavailable 100", Size: 100, Short: "10 of 25: max_per_domain 2 left no more"},
	} {
		if d := cmp.Diff(want, got.Steps[i]); d != "" {
			t.Errorf("step %d (-want +got):\n%s", i, d)
		}
	}
}

// TestPlanRolloutSubnetManagers: a ramp never puts two subnet manager
// hosts of a fabric in one wave, even where the step would allow it.
func TestPlanRolloutSubnetManagers(t *testing.T) {
	inv := hostsN(6, 0)
	for _, k := range []int{0, 1, 2} {
		inv.Hosts[k].Roles, inv.Hosts[k].Fabric = []string{"sm"}, "ib0"
	}
	r := ramped(fleet.Limit{N: 6}, 1, 1, fleet.Ramp{Steps: []fleet.Limit{{N: 6}}})
	got, err := fleet.PlanRollout(inv, r)
	if err != nil {
		t.Fatal(err)
	}
	checkRolled(t, inv, r, got)
	if d := cmp.Diff([]int{1, 4, 1}, sizes(got.Waves)); d != "" {
		t.Errorf("sizes (-want +got):\n%s", d)
	}
	if s := got.Steps[1].Short; s != "4 of 5: one subnet manager host of a fabric per wave left no more" {
		t.Errorf("wave 2 short: %q", s)
	}
}

// TestPlanRolloutCompartments: each compartment's waves, in the
// policy's order, the hosts in none last; a host in two compartments is
// an error; without a ramp each compartment's waves are Plan's.
func TestPlanRolloutCompartments(t *testing.T) {
	inv := hostsN(12, 2)
	for i := range inv.Hosts {
		switch {
		case i < 6:
			inv.Hosts[i].Groups = []string{"gpu", "rdma"}
		case i < 10:
			inv.Hosts[i].Groups = []string{"rdma", "storage"}
		default:
			inv.Hosts[i].Groups = []string{"rdma"}
		}
	}
	inv.Hosts[3].Pending = fleet.PendingNo
	r := ramped(fleet.Limit{N: 4}, 2, 1, fleet.Ramp{Factor: 2})
	r.Compartments = fleet.Compartments{Order: "sequential", Groups: []string{"storage", "gpu"}}
	got, err := fleet.PlanRollout(inv, r)
	if err != nil {
		t.Fatal(err)
	}
	checkRolled(t, inv, r, got)
	var comps []string
	for _, s := range got.Steps {
		comps = append(comps, s.Compartment)
	}
	// storage 4 hosts: 1, 2, 1; gpu 5 pending: 1, 2, 2; the rest 2: 1, 1.
	if d := cmp.Diff([]int{1, 2, 1, 1, 2, 2, 1, 1}, sizes(got.Waves)); d != "" {
		t.Errorf("sizes (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"storage", "storage", "storage", "gpu", "gpu", "gpu", fleet.OtherHosts, fleet.OtherHosts}, comps); d != "" {
		t.Errorf("compartments (-want +got):\n%s", d)
	}
	if !strings.Contains(got.Waves.Bound, "compartment storage: 4 pending hosts in 3 waves; compartment gpu: 5 pending hosts in 3 waves") {
		t.Errorf("bound: %q", got.Waves.Bound)
	}
	for i, w := range got.Waves.Waves {
		for h, why := range w.Reasons {
			if want := "compartment " + comps[i] + "; "; !strings.HasPrefix(why, want) {
				t.Errorf("wave %d: %s's reason %q does not start with %q", i+1, h, why, want)
			}
		}
	}

	// Without a ramp: each compartment as Plan cuts it alone.
	r.Ramp, r.Canary = fleet.Ramp{}, 0
	got, err = fleet.PlanRollout(inv, r)
	if err != nil {
		t.Fatal(err)
	}
	checkRolled(t, inv, r, got)
	alone, err := fleet.Plan(&fleet.Inventory{Hosts: inv.Hosts[6:10]}, fleet.Policy{MaxUnavailable: fleet.Limit{N: 4}, MaxPerDomain: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range alone.Waves {
		if d := cmp.Diff(w.Hosts, got.Waves.Waves[i].Hosts); d != "" {
			t.Errorf("storage without a ramp, wave %d against Plan of its hosts (-want +got):\n%s", i+1, d)
		}
		for h, why := range w.Reasons {
			if got := got.Waves.Waves[i].Reasons[h]; got != "compartment storage; "+why {
				t.Errorf("storage without a ramp, wave %d: %s's reason %q, want Plan's %q after the compartment", i+1, h, got, why)
			}
		}
	}

	inv.Hosts[0].Groups = []string{"gpu", "storage"}
	if _, err := fleet.PlanRollout(inv, r); err == nil || !errors.Is(err, fleet.ErrInventory) ||
		!strings.Contains(err.Error(), "host node001 is in the compartments storage and gpu: a host belongs to one") {
		t.Errorf("a host in two compartments: %v", err)
	}
}

// TestPlanRolloutParallel: compartments side by side. Wave k holds
// each compartment's k-th step (both canaries in the first wave), the
// limits shared: max_per_domain counts both compartments' hosts of a
// domain in the wave, max_unavailable is split between the
// compartments with hosts left (a step cut to its share says so). At the
// limit (as many compartments as max_unavailable) it cuts; one past, it
// is an error; so is a canary per compartment over its share.
func TestPlanRolloutParallel(t *testing.T) {
	inv := hostsN(16, 2)
	for i := range inv.Hosts {
		inv.Hosts[i].Groups = []string{map[bool]string{true: "gpu", false: "storage"}[i < 10]}
	}
	r := ramped(fleet.Limit{N: 6}, 2, 1, fleet.Ramp{Factor: 4})
	r.Compartments = fleet.Compartments{Order: fleet.OrderParallel, Groups: []string{"gpu", "storage"}}
	got, err := fleet.PlanRollout(inv, r)
	if err != nil {
		t.Fatal(err)
	}
	checkRolled(t, inv, r, got)
	compOf := func(h string) string {
		for _, x := range inv.Hosts {
			if x.Name == h {
				return x.Groups[0]
			}
		}
		return ""
	}
	var per [][2]int
	for _, w := range got.Waves.Waves {
		var n [2]int
		for _, h := range w.Hosts {
			n[map[string]int{"gpu": 0, "storage": 1}[compOf(h)]]++
		}
		per = append(per, n)
	}
	// gpu 10: 1, 3 (cut to 6/2 = 3), then 2 (the domains: 2 of each of 2
	// domains, less storage's); storage 6: 1, 1 (leaf1's and leaf2's 2 held
	// by gpu) ...: every wave within 6 hosts and 2 of a domain.
	if per[0] != [2]int{1, 1} {
		t.Errorf("the first wave: %v gpu and storage hosts, want both canaries", per[0])
	}
	if !strings.Contains(got.Steps[1].Rule, "cut to its share of max_unavailable, 6 / 2 compartments = 3") {
		t.Errorf("wave 2's rule %q: want gpu's step cut to its share", got.Steps[1].Rule)
	}
	for i, w := range got.Waves.Waves {
		for h, why := range w.Reasons {
			if want := "compartment " + compOf(h) + ", side by side with the others; "; !strings.HasPrefix(why, want) {
				t.Errorf("wave %d: %s's reason %q does not start with %q", i+1, h, why, want)
			}
		}
	}
	if ex := got.Explain(inv, 0, got.Waves.Waves[0].Hosts[0]); !slices.Contains(ex, "compartment: "+compOf(got.Waves.Waves[0].Hosts[0])+", side by side with the others (gpu, storage)") {
		t.Errorf("explain: %q", ex)
	}
	// max_unavailable 2: the limit for two compartments; 1: one past.
	r.MaxUnavailable = fleet.Limit{N: 2}
	if got, err := fleet.PlanRollout(inv, r); err != nil {
		t.Errorf("max_unavailable 2, two compartments: %v", err)
	} else {
		checkRolled(t, inv, r, got)
	}
	r.MaxUnavailable = fleet.Limit{N: 1}
	if _, err := fleet.PlanRollout(inv, r); err == nil || !errors.Is(err, fleet.ErrLimit) ||
		!strings.Contains(err.Error(), "compartments.order parallel: 2 compartments have hosts pending, more than max_unavailable (1 host per wave)") {
		t.Errorf("max_unavailable 1, two compartments: %v", err)
	}
	r.MaxUnavailable, r.Canary = fleet.Limit{N: 4}, 2 // 2 × 2: the limit
	if _, err := fleet.PlanRollout(inv, r); err != nil {
		t.Errorf("canary 2 × 2 compartments, max_unavailable 4: %v", err)
	}
	r.Canary = 3
	if _, err := fleet.PlanRollout(inv, r); err == nil || !strings.Contains(err.Error(), "canary 3 in each of 2 compartments is more than max_unavailable (4 hosts per wave)") {
		t.Errorf("canary 3 × 2 compartments, max_unavailable 4: %v", err)
	}
	// Without a ramp: each compartment its share a wave.
	r.Ramp, r.Canary, r.MaxUnavailable = fleet.Ramp{}, 0, fleet.Limit{N: 6}
	got, err = fleet.PlanRollout(inv, r)
	if err != nil {
		t.Fatal(err)
	}
	checkRolled(t, inv, r, got)
}

// TestPlanRolloutRules: on random inventories and random policies, every
// rule holds, and the waves do not depend on the inventory's order.
func TestPlanRolloutRules(t *testing.T) {
	rnd := rand.New(rand.NewSource(47))
	for it := 0; it < 300; it++ {
		n := 1 + rnd.Intn(200)
		d := rnd.Intn(6)
		inv := &fleet.Inventory{}
		for k := 0; k < n; k++ {
			h := fleet.Host{Name: fmt.Sprintf("h%d", k)}
			if d > 0 {
				h.Domain = fmt.Sprintf("d%d", min(rnd.Intn(d), rnd.Intn(d)))
			}
			if rnd.Intn(10) == 0 {
				h.Roles, h.Fabric = []string{"sm"}, fmt.Sprintf("f%d", rnd.Intn(2))
			}
			if rnd.Intn(6) == 0 {
				h.Pending = fleet.PendingNo
			}
			h.Groups = [][]string{nil, {"a"}, {"b", "x"}}[rnd.Intn(3)]
			inv.Hosts = append(inv.Hosts, h)
		}
		mu := fleet.Limit{N: 1 + rnd.Intn(30)}
		if rnd.Intn(2) == 0 {
			mu = fleet.Limit{Percent: 1 + rnd.Intn(100)}
		}
		ramp := fleet.Ramp{Factor: 1 + float64(1+rnd.Intn(90))/10}
		if rnd.Intn(2) == 0 {
			ramp = fleet.Ramp{Steps: []fleet.Limit{{N: 1 + rnd.Intn(5)}, {Percent: 1 + rnd.Intn(100)}}}
		}
		r := ramped(mu, 1+rnd.Intn(3), 1+rnd.Intn(mu.Of(n)), ramp)
		switch rnd.Intn(3) {
		case 0:
			r.Compartments = fleet.Compartments{Order: fleet.OrderSequential, Groups: []string{"b", "a"}}
		case 1:
			r.Compartments = fleet.Compartments{Order: fleet.OrderParallel, Groups: []string{"b", "a"}}
		}
		got, err := fleet.PlanRollout(inv, r)
		if err != nil {
			if strings.Contains(err.Error(), "give every host a domain") ||
				strings.Contains(err.Error(), "compartments.order parallel:") && r.Canary*3 > mu.Of(n) {
				continue // parallel: max_unavailable too small for the compartments' canaries
			}
			t.Fatalf("%d: %v", it, err)
		}
		checkRolled(t, inv, r, got)
		shuffled := &fleet.Inventory{Hosts: append([]fleet.Host(nil), inv.Hosts...)}
		rnd.Shuffle(len(shuffled.Hosts), func(i, j int) { shuffled.Hosts[i], shuffled.Hosts[j] = shuffled.Hosts[j], shuffled.Hosts[i] })
		again, err := fleet.PlanRollout(shuffled, r)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(got.Waves.Waves, again.Waves.Waves); d != "" {
			t.Fatalf("%d: the waves depend on the inventory's order (-first +shuffled):\n%s", it, d)
		}
		if t.Failed() {
			t.Fatalf("%d: inventory %+v policy %+v", it, inv.Hosts, r)
		}
	}
}

// TestInventoryGroups: rdmaform's inventory names a host's groups (a
// list, or names split at commas), sorted; anything else is an error at
// its line and column.
func TestInventoryGroups(t *testing.T) {
	inv, err := fleet.ReadInventory("i.yaml", []byte("hosts:\n  - {name: a, groups: [rdma, gpu]}\n  - {name: b, groups: \"gpu,login\"}\n  - {name: c}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, h := range inv.Hosts {
		got = append(got, h.Groups)
	}
	if d := cmp.Diff([][]string{{"gpu", "rdma"}, {"gpu", "login"}, nil}, got); d != "" {
		t.Errorf("groups (-want +got):\n%s", d)
	}
	_, err = fleet.ReadInventory("i.yaml", []byte("hosts:\n  - {name: a, groups: {gpu: 1}}\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "i.yaml:2:23: hosts[0].groups: want a list of names") {
		t.Errorf("groups as a mapping: %v", err)
	}
}
