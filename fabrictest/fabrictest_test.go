package fabrictest_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/fabrictest"
	"github.com/rdmaform/rdmaform/fleet"
)

func hostNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("node%04d", i+1)
	}
	return out
}

// checkRounds checks a schedule of hosts: every pair exactly once, no
// host twice in a round, n-1 rounds of n/2 pairs for even n and n of
// (n-1)/2 for odd n.
func checkRounds(t *testing.T, hosts []string, rounds []fabrictest.Round) {
	t.Helper()
	n := len(hosts)
	wantRounds, wantPairs := n-1, n/2
	if n%2 == 1 {
		wantRounds, wantPairs = n, (n-1)/2
	}
	if n < 2 {
		wantRounds = 0
	}
	if len(rounds) != wantRounds {
		t.Fatalf("n=%d: %d rounds, want %d", n, len(rounds), wantRounds)
	}
	in := map[string]bool{}
	for _, h := range hosts {
		in[h] = true
	}
	seen := map[[2]string]int{}
	for r, round := range rounds {
		if len(round.Pairs) != wantPairs {
			t.Errorf("n=%d: round %d has %d pairs, want %d", n, r+1, len(round.Pairs), wantPairs)
		}
		busy := map[string]bool{}
		for _, p := range round.Pairs {
			for _, h := range p {
				if !in[h] {
					t.Fatalf("n=%d: round %d: %s is no host of the group", n, r+1, h)
				}
				if busy[h] {
					t.Errorf("n=%d: round %d: %s is in two pairs", n, r+1, h)
				}
				busy[h] = true
			}
			a, b := p[0], p[1]
			if a == b {
				t.Errorf("n=%d: round %d pairs %s with itself", n, r+1, a)
			}
			if b < a {
				a, b = b, a
			}
			seen[[2]string{a, b}]++
		}
	}
	if len(seen) != n*(n-1)/2 {
		t.Errorf("n=%d: %d distinct pairs, want %d", n, len(seen), n*(n-1)/2)
	}
	for p, c := range seen {
		if c != 1 {
			t.Errorf("n=%d: pair %v measured %d times", n, p, c)
		}
	}
}

// TestRoundsProperties: the circle method's schedule for n = 1, 2, 3, 4,
// 5, 64 and 1000 hosts.
func TestRoundsProperties(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 64, 1000} {
		hosts := hostNames(n)
		checkRounds(t, hosts, fabrictest.Rounds(hosts))
	}
	if r := fabrictest.Rounds(nil); len(r) != 0 {
		t.Errorf("no hosts: %d rounds", len(r))
	}
}

// TestScheduleKeepsGroupsApart: hosts of different fabrics or link
// layers are never paired; each group has its own complete schedule,
// the groups side by side in the same rounds; a host alone in its group
// is in no round.
func TestScheduleKeepsGroupsApart(t *testing.T) {
	var b strings.Builder
	b.WriteString("hosts:\n")
	for i := 1; i <= 6; i++ {
		fmt.Fprintf(&b, "  - {name: ib%d, fabric: a, link_layer: InfiniBand}\n", i)
	}
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(&b, "  - {name: eth%d, fabric: a, link_layer: Ethernet}\n", i)
	}
	for i := 1; i <= 3; i++ {
		fmt.Fprintf(&b, "  - {name: other%d, fabric: b, link_layer: InfiniBand}\n", i)
	}
	b.WriteString("  - {name: lonely, fabric: c}\n")
	inv, err := fleet.ReadInventory("inv.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	groups := fabrictest.Groups(inv)
	var names []string
	groupOf := map[string]int{}
	for i, g := range groups {
		names = append(names, g.Fabric+"/"+g.LinkLayer)
		for _, h := range g.Hosts {
			groupOf[h] = i
		}
	}
	if diff := cmp.Diff([]string{"a/Ethernet", "a/InfiniBand", "b/InfiniBand", "c/"}, names); diff != "" {
		t.Fatalf("groups (-want +got):\n%s", diff)
	}
	rounds := fabrictest.Schedule(groups)
	if len(rounds) != 5 { // the 6 InfiniBand hosts: 5; the 5 Ethernet hosts: 5
		t.Errorf("%d rounds, want 5", len(rounds))
	}
	for gi, g := range groups {
		var own []fabrictest.Round
		for _, r := range rounds {
			var ps []fabrictest.Pair
			for _, p := range r.Pairs {
				if groupOf[p[0]] != groupOf[p[1]] {
					t.Errorf("%v pairs hosts of two groups", p)
				}
				if groupOf[p[0]] == gi {
					ps = append(ps, p)
				}
			}
			if len(ps) > 0 {
				own = append(own, fabrictest.Round{Pairs: ps})
			}
		}
		checkRounds(t, g.Hosts, own)
	}
	if diff := cmp.Diff([]string{"lonely"}, fabrictest.Alone(groups)); diff != "" {
		t.Errorf("alone (-want +got):\n%s", diff)
	}
}

// fabric simulates a fabric's per-pair results: every pair moves about
// 392 Gb/s at about 1.9 µs (a deterministic spread of ±1 %), except
// with a slow host, which moves 60 % and takes 2.5× as long.
type fabric struct {
	slow map[string]bool
}

func (f fabric) measure(p fabrictest.Pair, i int) fabrictest.Result {
	spread := float64((i*37)%21-10) / 1000 // -1 % to +1 %
	bw, lat := 392*(1+spread), 1.9*(1-spread)
	if f.slow[p[0]] || f.slow[p[1]] {
		bw, lat = bw*0.6, lat*2.5
	}
	return fabrictest.Result{Hosts: p, BandwidthGbps: bw, LatencyUs: lat, File: "results.json", Line: i + 1, Col: 1}
}

func (f fabric) run(rounds []fabrictest.Round, start int) []fabrictest.Result {
	var out []fabrictest.Result
	for _, r := range rounds {
		for _, p := range r.Pairs {
			out = append(out, f.measure(p, start+len(out)))
		}
	}
	return out
}

func group(n int) []fabrictest.Group {
	return []fabrictest.Group{{Fabric: "ib0", LinkLayer: fleet.LinkIB, Hosts: hostNames(n)}}
}

// prove runs the test as an engine does: the first rounds of the
// schedule, then retest rounds until the retest asks for none, and
// returns the final report and the number of retest rounds.
func prove(t *testing.T, f fabric, groups []fabrictest.Group, firstRounds int) (*fabrictest.Report, int) {
	t.Helper()
	sched := fabrictest.Schedule(groups)
	if firstRounds < len(sched) {
		sched = sched[:firstRounds]
	}
	results := f.run(sched, 0)
	for retests := 0; ; retests++ {
		rep, err := fabrictest.Analyze(groups, results, fabrictest.DefaultThresholds)
		if err != nil {
			t.Fatal(err)
		}
		round, _ := fabrictest.Retest(rep)
		if len(round.Pairs) == 0 {
			return rep, retests
		}
		if retests > 10 {
			t.Fatalf("still retesting after %d rounds: %v", retests, round.Pairs)
		}
		results = append(results, f.run([]fabrictest.Round{round}, len(results))...)
	}
}

func badHosts(rep *fabrictest.Report) []string {
	var out []string
	for _, b := range rep.BadHosts {
		out = append(out, b.Host)
	}
	return out
}

// TestPlantedSlowHost: among 200 hosts one slow host is named, and
// no other: after the whole schedule at once, and after only the first
// round, where its one bad pair has two suspects that one retest
// round halves to the slow host.
func TestPlantedSlowHost(t *testing.T) {
	groups := group(200)
	f := fabric{slow: map[string]bool{"node0137": true}}

	rep, retests := prove(t, f, groups, 1<<30)
	if diff := cmp.Diff([]string{"node0137"}, badHosts(rep)); diff != "" || rep.Status != fabrictest.Critical || retests != 0 {
		t.Errorf("whole schedule: bad hosts (-want +got):\n%s status %v, %d retest rounds", diff, rep.Status, retests)
	}
	if len(rep.BadPairs) != 199 {
		t.Errorf("whole schedule: %d bad pairs, want the slow host's 199", len(rep.BadPairs))
	}

	// Only the first round: one bad pair, two suspects.
	first, err := fabrictest.Analyze(groups, f.run(fabrictest.Schedule(groups)[:1], 0), fabrictest.DefaultThresholds)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Suspects) != 2 || first.Status != fabrictest.Warning || len(first.BadHosts) != 0 {
		t.Fatalf("first round: suspects %v, bad hosts %v, status %v; want two suspects, WARNING", first.Suspects, first.BadHosts, first.Status)
	}
	round, waiting := fabrictest.Retest(first)
	if len(round.Pairs) != 2 || len(waiting) != 0 {
		t.Fatalf("retest: %v, waiting %v; want each suspect with a good host", round.Pairs, waiting)
	}
	for _, p := range round.Pairs {
		if !first.Cleared[p[1]] || first.Cleared[p[0]] {
			t.Errorf("retest pair %v: want a suspect and a cleared host", p)
		}
	}
	rep, retests = prove(t, f, groups, 1)
	if diff := cmp.Diff([]string{"node0137"}, badHosts(rep)); diff != "" || rep.Status != fabrictest.Critical || retests != 1 || len(rep.Suspects) != 0 {
		t.Errorf("first round and retests: bad hosts (-want +got):\n%s status %v, %d retest rounds, suspects %v", diff, rep.Status, retests, rep.Suspects)
	}

	// No slow host: OK, nothing to retest.
	rep, retests = prove(t, fabric{}, groups, 1<<30)
	if rep.Status != fabrictest.OK || len(rep.BadPairs) != 0 || retests != 0 {
		t.Errorf("healthy fabric: status %v, bad pairs %d, %d retests", rep.Status, len(rep.BadPairs), retests)
	}
}

// TestUnmeasuredHosts: among 200 hosts, one slow and five whose runs
// all failed (late to start: every pair of theirs is an error), the
// slow host alone is named bad and the five are reported apart, not
// measured; without the slow host the report is WARNING, naming none.
// After only the first round, a failed pair of two hosts not yet
// cleared leaves both suspects: the retest pairs each with a cleared
// host, which clears the one that runs and leaves the other unmeasured.
func TestUnmeasuredHosts(t *testing.T) {
	groups := group(200)
	late := map[string]bool{"node0003": true, "node0050": true, "node0051": true, "node0120": true, "node0199": true}
	fail := func(rs []fabrictest.Result) []fabrictest.Result {
		for i, r := range rs {
			if late[r.Hosts[0]] || late[r.Hosts[1]] {
				rs[i] = fabrictest.Result{Hosts: r.Hosts, Err: "no result: the host was not ready within 600 s", File: r.File, Line: r.Line, Col: r.Col}
			}
		}
		return rs
	}
	lateHosts := []string{"node0003", "node0050", "node0051", "node0120", "node0199"}
	hosts := func(b []fabrictest.BadHost) []string {
		var out []string
		for _, h := range b {
			out = append(out, h.Host)
		}
		return out
	}
	for _, slow := range []string{"node0137", ""} {
		f := fabric{slow: map[string]bool{slow: slow != ""}}
		rep, err := fabrictest.Analyze(groups, fail(f.run(fabrictest.Schedule(groups), 0)), fabrictest.DefaultThresholds)
		if err != nil {
			t.Fatal(err)
		}
		want, status := []string{slow}, fabrictest.Critical
		if slow == "" {
			want, status = nil, fabrictest.Warning
		}
		if diff := cmp.Diff(want, badHosts(rep)); diff != "" || rep.Status != status {
			t.Errorf("slow %q: bad hosts (-want +got):\n%s status %v, want %v", slow, diff, rep.Status, status)
		}
		if diff := cmp.Diff(lateHosts, hosts(rep.Unmeasured)); diff != "" {
			t.Errorf("slow %q: unmeasured (-want +got):\n%s", slow, diff)
		}
		if len(rep.Suspects) != 0 || len(rep.Untested) != 0 {
			t.Errorf("slow %q: suspects %v, untested %v; want none", slow, rep.Suspects, rep.Untested)
		}
		for _, u := range rep.Unmeasured {
			if !strings.Contains(u.Reason, "not measured with") || !strings.Contains(u.Reason, "not ready within 600 s") {
				t.Errorf("slow %q: %s: reason %q", slow, u.Host, u.Reason)
			}
		}
		if round, _ := fabrictest.Retest(rep); len(round.Pairs) != 0 {
			t.Errorf("slow %q: retest %v; want none (an unmeasured host is not retested)", slow, round.Pairs)
		}
	}

	// The first round only: node0003's pair failed; both are suspects,
	// and the retest splits them.
	f := fabric{}
	first := fail(f.run(fabrictest.Schedule(groups)[:1], 0))
	rep, err := fabrictest.Analyze(groups, first, fabrictest.DefaultThresholds)
	if err != nil {
		t.Fatal(err)
	}
	var pair fabrictest.Pair
	for _, r := range first {
		if r.Err != "" && (r.Hosts[0] == "node0003" || r.Hosts[1] == "node0003") {
			pair = r.Hosts
		}
	}
	peer := pair[0]
	if peer == "node0003" {
		peer = pair[1]
	}
	if late[peer] {
		t.Fatalf("round 0 pairs node0003 with %s, another late host: pick another", peer)
	}
	if !slices.Contains(rep.Suspects, "node0003") || !slices.Contains(rep.Suspects, peer) || len(rep.Unmeasured) != 0 {
		t.Fatalf("first round: suspects %v, unmeasured %v; want node0003 and %s suspects", rep.Suspects, rep.Unmeasured, peer)
	}
	round, _ := fabrictest.Retest(rep)
	results := append(first, fail(f.run([]fabrictest.Round{round}, len(first)))...)
	rep, err = fabrictest.Analyze(groups, results, fabrictest.DefaultThresholds)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Cleared[peer] || !slices.Contains(hosts(rep.Unmeasured), "node0003") || slices.Contains(rep.Suspects, "node0003") || len(rep.BadHosts) != 0 {
		t.Errorf("after the retest: %s cleared %v, unmeasured %v, suspects %v, bad hosts %v; want node0003 unmeasured and %s cleared",
			peer, rep.Cleared[peer], rep.Unmeasured, rep.Suspects, rep.BadHosts, peer)
	}
}

// TestBadPath: a pair of two hosts that are good with others is a bad
// path, retested once; still bad, it is confirmed and the report stays
// WARNING, naming no host.
func TestBadPath(t *testing.T) {
	groups := group(4)
	f := fabric{}
	results := f.run(fabrictest.Schedule(groups), 0)
	for i := range results {
		if results[i].Hosts == (fabrictest.Pair{"node0001", "node0002"}) || results[i].Hosts == (fabrictest.Pair{"node0002", "node0001"}) {
			results[i].BandwidthGbps = 100
		}
	}
	rep, err := fabrictest.Analyze(groups, results, fabrictest.DefaultThresholds)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.BadPaths) != 1 || len(rep.BadHosts) != 0 || rep.Status != fabrictest.Warning {
		t.Fatalf("bad paths %d, bad hosts %v, status %v", len(rep.BadPaths), rep.BadHosts, rep.Status)
	}
	round, _ := fabrictest.Retest(rep)
	if diff := cmp.Diff([]fabrictest.Pair{{"node0001", "node0002"}}, round.Pairs); diff != "" {
		t.Fatalf("retest (-want +got):\n%s", diff)
	}
	again := results[0]
	for _, r := range results {
		if r.BandwidthGbps == 100 {
			again = r
		}
	}
	rep, err = fabrictest.Analyze(groups, append(results, again), fabrictest.DefaultThresholds)
	if err != nil {
		t.Fatal(err)
	}
	if round, _ := fabrictest.Retest(rep); len(round.Pairs) != 0 || rep.Status != fabrictest.Warning || rep.BadPaths[0].Times != 2 {
		t.Errorf("confirmed bad path: retest %v, status %v", round.Pairs, rep.Status)
	}
}

// TestThresholdLimits: a pair exactly at the floor or the ceiling is
// good, one past is bad; the thresholds' own limits are accepted at
// the limit and refused one past.
func TestThresholdLimits(t *testing.T) {
	groups := group(3)
	at := func(bw, lat float64, th fabrictest.Thresholds) *fabrictest.Report {
		t.Helper()
		rs := []fabrictest.Result{
			{Hosts: fabrictest.Pair{"node0001", "node0002"}, BandwidthGbps: 400, LatencyUs: 2},
			{Hosts: fabrictest.Pair{"node0002", "node0003"}, BandwidthGbps: 400, LatencyUs: 2},
			{Hosts: fabrictest.Pair{"node0001", "node0003"}, BandwidthGbps: bw, LatencyUs: lat},
		}
		rep, err := fabrictest.Analyze(groups, rs, th)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	d := fabrictest.DefaultThresholds
	for _, tc := range []struct {
		bw, lat float64
		bad     bool
	}{
		{372, 2, false},     // 93 % of 400
		{371.99, 2, true},   // just below
		{400, 4.2, false},   // 2.1 × 2
		{400, 4.201, true},  // just above
		{100, 100, true},    // both
		{400, 1.999, false}, // better than the best: the new best
	} {
		rep := at(tc.bw, tc.lat, d)
		if got := len(rep.BadPairs) > 0; got != tc.bad {
			t.Errorf("%g Gb/s, %g µs: bad %v, want %v (%v)", tc.bw, tc.lat, got, tc.bad, rep.BadPairs)
		}
	}
	if r := at(100, 100, d); len(r.BadPairs[0].Reasons) != 2 {
		t.Errorf("both figures bad: reasons %q", r.BadPairs[0].Reasons)
	}
	for _, tc := range []struct {
		th fabrictest.Thresholds
		ok bool
	}{
		{fabrictest.Thresholds{MinBandwidthPercent: 1, MaxLatencyFactor: 2.1}, true},
		{fabrictest.Thresholds{MinBandwidthPercent: 0.99, MaxLatencyFactor: 2.1}, false},
		{fabrictest.Thresholds{MinBandwidthPercent: 100, MaxLatencyFactor: 2.1}, true},
		{fabrictest.Thresholds{MinBandwidthPercent: 100.01, MaxLatencyFactor: 2.1}, false},
		{fabrictest.Thresholds{MinBandwidthPercent: 93, MaxLatencyFactor: 1}, true},
		{fabrictest.Thresholds{MinBandwidthPercent: 93, MaxLatencyFactor: 0.99}, false},
		{fabrictest.Thresholds{MinBandwidthPercent: 93, MaxLatencyFactor: 10}, true},
		{fabrictest.Thresholds{MinBandwidthPercent: 93, MaxLatencyFactor: 10.01}, false},
	} {
		if err := tc.th.Check(); (err == nil) != tc.ok {
			t.Errorf("%+v: %v, want ok=%v", tc.th, err, tc.ok)
		}
		if _, err := fabrictest.Analyze(groups, nil, tc.th); (err == nil) != tc.ok {
			t.Errorf("Analyze %+v: %v, want ok=%v", tc.th, err, tc.ok)
		}
	}
	// At 100 % every pair below the best is bad.
	if r := at(399.99, 2, fabrictest.Thresholds{MinBandwidthPercent: 100, MaxLatencyFactor: 1}); len(r.BadPairs) != 1 {
		t.Errorf("100 %%: %d bad pairs, want 1", len(r.BadPairs))
	}
}

// TestAnalyzeRefuses: a result's hosts must be of the inventory and of
// one group; the error is at the result.
func TestAnalyzeRefuses(t *testing.T) {
	groups := []fabrictest.Group{{Fabric: "a", Hosts: []string{"x1", "x2"}}, {Fabric: "b", Hosts: []string{"y1"}}}
	for _, tc := range []struct {
		p    fabrictest.Pair
		want string
	}{
		{fabrictest.Pair{"x1", "z"}, "r.json:4:7: host z is not in the inventory"},
		{fabrictest.Pair{"x1", "y1"}, "r.json:4:7: x1 (fabric a, no link layer given) and y1 (fabric b, no link layer given) are not of one fabric and link layer"},
	} {
		_, err := fabrictest.Analyze(groups, []fabrictest.Result{{Hosts: tc.p, BandwidthGbps: 1, LatencyUs: 1, File: "r.json", Line: 4, Col: 7}}, fabrictest.DefaultThresholds)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.p, err, tc.want)
		}
	}
}

// TestReadResults reads the format and refuses what is not it, at its
// position; the figures are tested at their limits.
func TestReadResults(t *testing.T) {
	rs, err := fabrictest.ReadResults("r.json", []byte(`{"format_version": 1, "results": [
  {"hosts": ["a", "b"], "bandwidth_gbps": 392.5, "latency_us": 1.9},
  {"hosts": ["c", "d"], "error": "ib_write_bw: Couldn't connect"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []fabrictest.Result{
		{Hosts: fabrictest.Pair{"a", "b"}, BandwidthGbps: 392.5, LatencyUs: 1.9, File: "r.json", Line: 2, Col: 13},
		{Hosts: fabrictest.Pair{"c", "d"}, Err: "ib_write_bw: Couldn't connect", File: "r.json", Line: 3, Col: 13},
	}
	if diff := cmp.Diff(want, rs); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	row := func(s string) string { return `{"format_version": 1, "results": [` + s + `]}` }
	for _, tc := range []struct{ in, want string }{
		{`{"results": []}`, "r.json:1:1: no format_version"},
		{`{"format_version": 2, "results": []}`, "r.json:1:20: format_version: want 1, not 2"},
		{`{"format_version": 1}`, "results: want a list"},
		{`{"format_version": 1, "results": [], "x": 1}`, `r.json:1:38: unknown key "x"`},
		{row(`{"hosts": ["a"], "bandwidth_gbps": 1, "latency_us": 1}`), "r.json:1:45: results[0].hosts: want two host names"},
		{row(`{"hosts": ["a", "a"], "bandwidth_gbps": 1, "latency_us": 1}`), "a with itself is no pair"},
		{row(`{"hosts": ["a", "b c"], "bandwidth_gbps": 1, "latency_us": 1}`), `results[0].hosts[1]: "b c" is not a host name`},
		{row(`{"hosts": ["a", "b"], "latency_us": 1}`), "results[0]: no bandwidth_gbps"},
		{row(`{"hosts": ["a", "b"], "bandwidth_gbps": "fast", "latency_us": 1}`), "results[0].bandwidth_gbps: want a number"},
		{row(`{"hosts": ["a", "b"], "bandwidth_gbps": 0, "latency_us": 1}`), "results[0].bandwidth_gbps: 0 is out of range"},
		{row(`{"hosts": ["a", "b"], "bandwidth_gbps": 100001, "latency_us": 1}`), "results[0].bandwidth_gbps: 100001 is out of range"},
		{row(`{"hosts": ["a", "b"], "bandwidth_gbps": 1, "latency_us": 10000001}`), "results[0].latency_us: 10000001 is out of range"},
		{row(`{"hosts": ["a", "b"], "bandwidth_gbps": 1, "latency_us": 1, "error": "x"}`), "an error and figures"},
		{row(`{"hosts": ["a", "b"], "error": ""}`), "results[0].error: want the message"},
		{row(`{"hosts": ["a", "b"], "speed": 1}`), `results[0]: unknown key "speed"`},
		{"[", `r.json:1:1: want {"format_version": 1, "results": [...]}`},
		{`{"format_version": 1, "results": [}`, "r.json:1:35: not JSON: invalid character '}'"},
		{`{"format_version": 1, "results": [`, "r.json: not JSON: the document ends too soon"},
		{`{"format_version": 1, "results": []} {}`, "r.json:1:38: more after the document"},
		{"{\"format_version\": 1,\n \"results\": [\n  {\"hosts\": [\"a\", \"b\", \"c\"], \"bandwidth_gbps\": 1, \"latency_us\": 1}]}", "r.json:3:13: results[0].hosts: want two host names"},
		{row(`{"hosts": ["a", 7], "bandwidth_gbps": 1, "latency_us": 1}`), "r.json:1:51: results[0].hosts[1]: want a host name"},
		{row(`{"bandwidth_gbps": 1, "latency_us": 1}`), "r.json:1:35: results[0]: no hosts"},
		{row(`7`), "r.json:1:35: results[0]: want a mapping"},
	} {
		_, err := fabrictest.ReadResults("r.json", []byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
	}
	// The figures' limits, at the limit.
	if _, err := fabrictest.ReadResults("r.json", []byte(row(`{"hosts": ["a", "b"], "bandwidth_gbps": 100000, "latency_us": 10000000}`))); err != nil {
		t.Errorf("at the limits: %v", err)
	}
}
