package fleet_test

import (
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/fleet"
)

func TestParseLimit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want fleet.Limit
		ok   bool
	}{
		{"0", fleet.Limit{}, false},
		{"1", fleet.Limit{N: 1}, true},
		{"250", fleet.Limit{N: 250}, true},
		{"100000", fleet.Limit{N: 100000}, true}, // the limit, as the rollout role's
		{"100001", fleet.Limit{}, false},
		// At most 7 digits, as the rollout role reads them: leading
		// zeros count.
		{"0000250", fleet.Limit{N: 250}, true},
		{"00000250", fleet.Limit{}, false},
		{"0000100%", fleet.Limit{Percent: 100}, true},
		{"00000100%", fleet.Limit{}, false},
		{"99999999999999999999", fleet.Limit{}, false},
		{"+5", fleet.Limit{}, false},
		{" 5", fleet.Limit{}, false},
		{"5%%", fleet.Limit{}, false},
		{"+5%", fleet.Limit{}, false},
		{"-1", fleet.Limit{}, false},
		{"0%", fleet.Limit{}, false},
		{"1%", fleet.Limit{Percent: 1}, true},
		{"100%", fleet.Limit{Percent: 100}, true},
		{"101%", fleet.Limit{}, false},
		{"1.5%", fleet.Limit{}, false},
		{"%", fleet.Limit{}, false},
		{"", fleet.Limit{}, false},
		{"ten", fleet.Limit{}, false},
	} {
		got, err := fleet.ParseLimit(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseLimit(%q): error %v, want ok=%v", tc.in, err, tc.ok)
			continue
		}
		if err != nil && !errors.Is(err, fleet.ErrLimit) {
			t.Errorf("ParseLimit(%q): %v is not ErrLimit", tc.in, err)
		}
		if got != tc.want {
			t.Errorf("ParseLimit(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestLimitOf(t *testing.T) {
	for _, tc := range []struct {
		l     fleet.Limit
		total int
		want  int
	}{
		{fleet.Limit{N: 3}, 10, 3},
		{fleet.Limit{N: 30}, 10, 30},
		{fleet.Limit{Percent: 100}, 10, 10},
		{fleet.Limit{Percent: 50}, 5, 2}, // rounded down
		{fleet.Limit{Percent: 10}, 5, 1}, // at least 1
		{fleet.Limit{Percent: 1}, 10000, 100},
	} {
		if got := tc.l.Of(tc.total); got != tc.want {
			t.Errorf("%s of %d = %d, want %d", tc.l, tc.total, got, tc.want)
		}
	}
}

func inv(hosts ...fleet.Host) *fleet.Inventory { return &fleet.Inventory{Hosts: hosts} }

func TestPlanPolicyLimits(t *testing.T) {
	i := inv(fleet.Host{Name: "a", Domain: "d"}, fleet.Host{Name: "b", Domain: "d"})
	for _, tc := range []struct {
		p     fleet.Policy
		waves int
		ok    bool
	}{
		{fleet.Policy{MaxUnavailable: fleet.Limit{N: 2}, MaxPerDomain: 0}, 0, false},
		{fleet.Policy{MaxUnavailable: fleet.Limit{N: 2}, MaxPerDomain: 1}, 2, true},
		{fleet.Policy{MaxUnavailable: fleet.Limit{N: 2}, MaxPerDomain: 2}, 1, true},
		{fleet.Policy{MaxUnavailable: fleet.Limit{N: 0}, MaxPerDomain: 2}, 0, false},
		{fleet.Policy{MaxUnavailable: fleet.Limit{N: 1}, MaxPerDomain: 2}, 2, true},
		{fleet.Policy{MaxUnavailable: fleet.Limit{Percent: 101}, MaxPerDomain: 2}, 0, false},
		{fleet.Policy{MaxUnavailable: fleet.Limit{Percent: 100}, MaxPerDomain: 2}, 1, true},
		{fleet.Policy{MaxUnavailable: fleet.Limit{N: fleet.MaxHosts}, MaxPerDomain: fleet.MaxHosts}, 1, true},
		{fleet.Policy{MaxUnavailable: fleet.Limit{N: fleet.MaxHosts + 1}, MaxPerDomain: 2}, 0, false},
		{fleet.Policy{MaxUnavailable: fleet.Limit{N: 2}, MaxPerDomain: fleet.MaxHosts + 1}, 0, false},
	} {
		w, err := fleet.Plan(i, tc.p)
		if (err == nil) != tc.ok {
			t.Errorf("%+v: error %v, want ok=%v", tc.p, err, tc.ok)
			continue
		}
		if err != nil {
			if !errors.Is(err, fleet.ErrLimit) {
				t.Errorf("%+v: %v is not ErrLimit", tc.p, err)
			}
			continue
		}
		if len(w.Waves) != tc.waves {
			t.Errorf("%+v: %d waves, want %d", tc.p, len(w.Waves), tc.waves)
		}
	}
}

// check verifies every rule of a rollout's waves against the inventory,
// independently of how Plan made them, and returns the lower bound on
// the number of waves.
func check(t *testing.T, i *fleet.Inventory, p fleet.Policy, w *fleet.Waves) int {
	t.Helper()
	perWave := p.MaxUnavailable.Of(len(i.Hosts))
	byName := map[string]fleet.Host{}
	for _, h := range i.Hosts {
		byName[h.Name] = h
	}
	seen := map[string]int{}
	for n, wv := range w.Waves {
		if len(wv.Hosts) == 0 {
			t.Errorf("wave %d is empty", n+1)
		}
		if len(wv.Hosts) > perWave {
			t.Errorf("wave %d has %d hosts, at most %d allowed", n+1, len(wv.Hosts), perWave)
		}
		domains, sms := map[string]int{}, map[string]int{}
		for _, name := range wv.Hosts {
			h, ok := byName[name]
			if !ok {
				t.Fatalf("wave %d: unknown host %s", n+1, name)
			}
			seen[name]++
			if h.Pending == fleet.PendingNo {
				t.Errorf("wave %d holds %s, which has nothing pending", n+1, name)
			}
			if wv.Reasons[name] == "" {
				t.Errorf("wave %d: %s without a reason", n+1, name)
			}
			if h.Domain != "" {
				domains[h.Domain]++
				if domains[h.Domain] > p.MaxPerDomain {
					t.Errorf("wave %d: %d hosts of domain %s, at most %d", n+1, domains[h.Domain], h.Domain, p.MaxPerDomain)
				}
			}
			if h.SM() {
				sms[h.Fabric]++
				if sms[h.Fabric] > 1 {
					t.Errorf("wave %d: two subnet manager hosts of fabric %q: %v", n+1, h.Fabric, wv.Hosts)
				}
			}
		}
		if len(wv.Reasons) != len(wv.Hosts) {
			t.Errorf("wave %d: %d reasons for %d hosts", n+1, len(wv.Reasons), len(wv.Hosts))
		}
	}
	left := map[string]bool{}
	for _, l := range w.LeftOut {
		left[l.Host] = true
		if l.Reason == "" {
			t.Errorf("%s left out without a reason", l.Host)
		}
	}
	pending, domains, sms := 0, map[string]int{}, map[string]int{}
	for _, h := range i.Hosts {
		if h.Pending == fleet.PendingNo {
			if !left[h.Name] || seen[h.Name] != 0 {
				t.Errorf("%s has nothing pending: left out %v, in %d waves", h.Name, left[h.Name], seen[h.Name])
			}
			continue
		}
		pending++
		if seen[h.Name] != 1 {
			t.Errorf("%s is in %d waves, want 1", h.Name, seen[h.Name])
		}
		if h.Domain != "" {
			domains[h.Domain]++
		}
		if h.SM() {
			sms[h.Fabric]++
		}
	}
	if pending != w.Pending {
		t.Errorf("Pending = %d, want %d", w.Pending, pending)
	}
	bound := (pending + perWave - 1) / perWave
	for _, n := range domains {
		bound = max(bound, (n+p.MaxPerDomain-1)/p.MaxPerDomain)
	}
	for _, n := range sms {
		bound = max(bound, n)
	}
	if len(w.Waves) < bound {
		t.Errorf("%d waves, fewer than the limits allow (%d): the checker or Plan is wrong", len(w.Waves), bound)
	}
	return bound
}

// randomInventory: n hosts over d domains (none when d is 0), a few
// subnet manager hosts on f fabrics (1 host in 3: enough for two of one
// fabric to meet in a wave and be parted by a swap), some with nothing
// pending.
func randomInventory(r *rand.Rand, n, d, f int) *fleet.Inventory {
	i := &fleet.Inventory{}
	for k := 0; k < n; k++ {
		h := fleet.Host{Name: fmt.Sprintf("node%03d", k)}
		if d > 0 {
			// Skewed sizes: low domains get more hosts.
			h.Domain = fmt.Sprintf("leaf%d", min(r.Intn(d), r.Intn(d)))
		}
		if f > 0 && r.Intn(3) == 0 {
			h.Roles = []string{"sm"}
			h.Fabric = fmt.Sprintf("ib%d", r.Intn(f))
		}
		switch r.Intn(6) {
		case 0:
			h.Pending = fleet.PendingNo
			h.Why = "test: nothing"
		case 1:
			h.Pending = fleet.PendingYes
		}
		i.Hosts = append(i.Hosts, h)
	}
	return i
}

// TestPlanRules: on random inventories, every rule holds, the number of
// waves is the lower bound whenever no subnet manager host had to move
// past it, and the waves do not depend on the inventory's order.
func TestPlanRules(t *testing.T) {
	r := rand.New(rand.NewSource(31))
	above := 0
	for round := 0; round < 400; round++ {
		n, d, f := 1+r.Intn(60), r.Intn(9), r.Intn(3)
		i := randomInventory(r, n, d, f)
		p := fleet.Policy{MaxPerDomain: 1 + r.Intn(3)}
		if r.Intn(2) == 0 {
			p.MaxUnavailable = fleet.Limit{N: 1 + r.Intn(12)}
		} else {
			p.MaxUnavailable = fleet.Limit{Percent: 1 + r.Intn(100)}
		}
		w, err := fleet.Plan(i, p)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		bound := check(t, i, p, w)
		if len(w.Waves) > bound {
			above++
			if !strings.Contains(w.Bound, "no swap") {
				t.Errorf("round %d: %d waves above the bound %d, and Bound says %q", round, len(w.Waves), bound, w.Bound)
			}
		}
		if w.CountOnly != (d == 0) {
			t.Errorf("round %d: CountOnly %v with %d domains", round, w.CountOnly, d)
		}
		shuffled := &fleet.Inventory{Hosts: append([]fleet.Host(nil), i.Hosts...)}
		r.Shuffle(len(shuffled.Hosts), func(a, b int) { shuffled.Hosts[a], shuffled.Hosts[b] = shuffled.Hosts[b], shuffled.Hosts[a] })
		w2, err := fleet.Plan(shuffled, p)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(w, w2); diff != "" {
			t.Fatalf("round %d: the waves depend on the inventory's order (-sorted +shuffled):\n%s", round, diff)
		}
		if t.Failed() {
			t.Fatalf("round %d: inventory %+v, policy %+v", round, i.Hosts, p)
		}
	}
	t.Logf("%d of 400 rounds took more waves than the lower bound", above)
}

func TestPlanExamples(t *testing.T) {
	sm := []string{"sm"}
	for _, tc := range []struct {
		name  string
		hosts []fleet.Host
		p     fleet.Policy
		want  [][]string
		bound string
	}{{
		name: "one domain, one host at a time",
		hosts: []fleet.Host{
			{Name: "n10", Domain: "leaf1"}, {Name: "n2", Domain: "leaf1"}, {Name: "n1", Domain: "leaf1"},
		},
		p:     fleet.Policy{MaxUnavailable: fleet.Limit{N: 5}, MaxPerDomain: 1},
		want:  [][]string{{"n1"}, {"n2"}, {"n10"}},
		bound: "domain leaf1 has 3 pending hosts, at most 1 of a domain per wave",
	}, {
		name: "two domains side by side",
		hosts: []fleet.Host{
			{Name: "a1", Domain: "leaf1"}, {Name: "a2", Domain: "leaf1"},
			{Name: "b1", Domain: "leaf2"}, {Name: "b2", Domain: "leaf2"},
		},
		p:    fleet.Policy{MaxUnavailable: fleet.Limit{N: 2}, MaxPerDomain: 1},
		want: [][]string{{"a1", "b1"}, {"a2", "b2"}},
		// A tie: each domain needs as many waves as the count; the
		// count, checked first, stays the bound.
		bound: "4 pending hosts, at most 2 per wave",
	}, {
		name: "the count binds",
		hosts: []fleet.Host{
			{Name: "a1", Domain: "leaf1"}, {Name: "b1", Domain: "leaf2"}, {Name: "c1", Domain: "leaf3"},
		},
		p:     fleet.Policy{MaxUnavailable: fleet.Limit{N: 1}, MaxPerDomain: 1},
		want:  [][]string{{"a1"}, {"b1"}, {"c1"}},
		bound: "3 pending hosts, at most 1 per wave",
	}, {
		name: "subnet managers of one fabric are parted",
		hosts: []fleet.Host{
			{Name: "a1", Domain: "leaf1", Roles: sm}, {Name: "a2", Domain: "leaf1"},
			{Name: "b1", Domain: "leaf2", Roles: sm}, {Name: "b2", Domain: "leaf2"},
		},
		p:    fleet.Policy{MaxUnavailable: fleet.Limit{N: 2}, MaxPerDomain: 1},
		want: [][]string{{"a1", "b2"}, {"a2", "b1"}},
		// The fabric's two subnet managers tie with the count too.
		bound: "4 pending hosts, at most 2 per wave",
	}, {
		name: "subnet managers of two fabrics may share a wave",
		hosts: []fleet.Host{
			{Name: "a1", Domain: "leaf1", Roles: sm, Fabric: "ib0"}, {Name: "a2", Domain: "leaf1"},
			{Name: "b1", Domain: "leaf2", Roles: sm, Fabric: "ib1"}, {Name: "b2", Domain: "leaf2"},
		},
		p:    fleet.Policy{MaxUnavailable: fleet.Limit{N: 2}, MaxPerDomain: 1},
		want: [][]string{{"a1", "b1"}, {"a2", "b2"}},
	}, {
		// Two subnet managers alone in one domain of two, K=2: the
		// limits allow one wave, the fabric needs two.
		name: "the subnet managers bind",
		hosts: []fleet.Host{
			{Name: "a1", Domain: "leaf1", Roles: sm}, {Name: "a2", Domain: "leaf1", Roles: sm},
		},
		p:     fleet.Policy{MaxUnavailable: fleet.Limit{N: 2}, MaxPerDomain: 2},
		want:  [][]string{{"a1"}, {"a2"}},
		bound: "the fabric has 2 subnet manager hosts, never two in one wave",
	}, {
		// The earlier subnet manager host moves when the later cannot.
		name: "the earlier one moves",
		hosts: []fleet.Host{
			{Name: "a1", Domain: "leaf1", Roles: sm}, {Name: "a2", Domain: "leaf1"},
			{Name: "b1", Domain: "leaf2", Roles: sm},
		},
		p:    fleet.Policy{MaxUnavailable: fleet.Limit{N: 3}, MaxPerDomain: 2},
		want: [][]string{{"a2", "b1"}, {"a1"}},
	}, {
		// Three domains of one host, two of them subnet managers dealt
		// into one wave of two; no domain has a host to swap with, so
		// it takes a third wave (two would do: Plan is not optimal here).
		name: "no swap parts them: one wave more",
		hosts: []fleet.Host{
			{Name: "a1", Domain: "leaf1", Roles: sm}, {Name: "b1", Domain: "leaf2"},
			{Name: "c1", Domain: "leaf3", Roles: sm},
		},
		p:     fleet.Policy{MaxUnavailable: fleet.Limit{N: 3}, MaxPerDomain: 1},
		want:  [][]string{{"a1"}, {"b1"}, {"c1"}},
		bound: "subnet manager hosts that no swap within their domains could part",
	}, {
		name: "count only",
		hosts: []fleet.Host{
			{Name: "n1"}, {Name: "n2"}, {Name: "n3", Roles: sm}, {Name: "n4"}, {Name: "n5", Roles: sm},
		},
		p:    fleet.Policy{MaxUnavailable: fleet.Limit{N: 3}, MaxPerDomain: 1},
		want: [][]string{{"n1", "n3", "n4"}, {"n2", "n5"}},
	}, {
		name:  "nothing pending",
		hosts: []fleet.Host{{Name: "n1", Pending: fleet.PendingNo}},
		p:     fleet.Policy{MaxUnavailable: fleet.Limit{N: 3}, MaxPerDomain: 1},
		want:  nil,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			i := inv(tc.hosts...)
			w, err := fleet.Plan(i, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			check(t, i, tc.p, w)
			var got [][]string
			for _, wv := range w.Waves {
				got = append(got, wv.Hosts)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("waves (-want +got):\n%s", diff)
			}
			if tc.bound != "" && w.Bound != tc.bound {
				t.Errorf("Bound = %q, want %q", w.Bound, tc.bound)
			}
		})
	}
}

func TestPlanDomainsAllOrNone(t *testing.T) {
	_, err := fleet.Plan(inv(fleet.Host{Name: "a", Domain: "leaf1"}, fleet.Host{Name: "b"}), fleet.Policy{MaxUnavailable: fleet.Limit{N: 1}, MaxPerDomain: 1})
	if !errors.Is(err, fleet.ErrInventory) || !strings.Contains(err.Error(), "1 host has no domain (b) while 1 has one") {
		t.Errorf("a host without a domain among hosts with one: %v", err)
	}
	w, err := fleet.Plan(inv(fleet.Host{Name: "a"}, fleet.Host{Name: "b"}), fleet.Policy{MaxUnavailable: fleet.Limit{N: 1}, MaxPerDomain: 1})
	if err != nil || !w.CountOnly {
		t.Errorf("no domains: %+v, %v; want waves by count only", w, err)
	}
}

// TestPlanReasonOrdinals: a host's reason counts it in its domain in
// English ordinals, the teens included (11th, 12th, 13th, 111th).
func TestPlanReasonOrdinals(t *testing.T) {
	inv := &fleet.Inventory{}
	for k := 1; k <= 123; k++ {
		inv.Hosts = append(inv.Hosts, fleet.Host{Name: fmt.Sprintf("h%03d", k), Domain: "leaf1"})
	}
	w, err := fleet.Plan(inv, fleet.Policy{MaxUnavailable: fleet.Limit{N: 1}, MaxPerDomain: 1})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, wv := range w.Waves {
		for h, r := range wv.Reasons {
			reasons[h] = r
		}
	}
	for k, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 10: "10th", 11: "11th", 12: "12th", 13: "13th", 14: "14th",
		21: "21st", 22: "22nd", 23: "23rd", 101: "101st", 102: "102nd", 103: "103rd", 111: "111th", 112: "112th", 113: "113th", 121: "121st", 123: "123rd"} {
		h := fmt.Sprintf("h%03d", k)
		if r := reasons[h]; !strings.HasPrefix(r, "domain leaf1: "+want+" of its 123 pending hosts,") {
			t.Errorf("%s: reason %q, want the %s of 123", h, r, want)
		}
	}
}
