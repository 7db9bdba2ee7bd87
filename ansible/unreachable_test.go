package ansible_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// outOfService replays the hooks' log from the hosts drained before it
// (left drained by an earlier run): the most hosts drained at once, the
// line where that was first reached, and the hosts left drained. A drain
// of a host drained already changes nothing (the hooks are idempotent,
// as scontrol's and kubectl's are).
func (f *fleet) outOfService(t *testing.T, before []string) (peak int, at string, left []string) {
	t.Helper()
	b, err := os.ReadFile(f.hooksLog)
	if err != nil {
		t.Fatal(err)
	}
	drained := map[string]bool{}
	for _, h := range before {
		drained[h] = true
	}
	peak = len(drained)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		what, host, _ := strings.Cut(line, " ")
		switch what {
		case "drain":
			drained[host] = true
		case "undrain":
			delete(drained, host)
		default:
			t.Fatalf("hooks: %q", line)
		}
		if len(drained) > peak {
			peak, at = len(drained), line
		}
	}
	for h := range drained {
		left = append(left, h)
	}
	sort.Strings(left)
	return peak, at, left
}

// flaky turns the fleet's inventory (after edit, when not nil) to the
// test connection flaky_local, and returns the directory where a file
// named after a host takes it down, and a function that sets the rules
// of the test callback down_at (WAVE, TASK, HOST) for the next play.
func (f *fleet) flaky(t *testing.T, edit func(string) string) (down string, downAt func(rules [][3]string)) {
	t.Helper()
	path := filepath.Join(f.l.dir, "inventory.yml")
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(text), "ansible_connection: local", "ansible_connection: flaky_local")
	if edit != nil {
		s = edit(s)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	plugins := func(kind string) string {
		p, err := filepath.Abs(filepath.Join("testdata", kind))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	down = filepath.Join(f.l.dir, "down")
	if err := os.Mkdir(down, 0o755); err != nil {
		t.Fatal(err)
	}
	env := f.l.env
	return down, func(rules [][3]string) {
		var at []string
		for _, r := range rules {
			at = append(at, strings.Join(r[:], "\t"))
		}
		f.l.env = append(append([]string{}, env...), "ANSIBLE_CONNECTION_PLUGINS="+plugins("connection_plugins"),
			"ANSIBLE_CALLBACK_PLUGINS="+plugins("callback_plugins"), "ANSIBLE_CALLBACKS_ENABLED=down_at",
			"RDMAFORM_TEST_DOWN_DIR="+down, "RDMAFORM_TEST_DOWN_AT="+strings.Join(at, "\n"))
	}
}

// TestRolloutUnreachable rolls a spec out by reboot on seven simulated
// hosts under a policy of max_unavailable 3 and failed_hosts 4, with
// command hooks and probes, over the test connection flaky_local; the
// test callback down_at (testdata/callback_plugins) takes a host down
// when a given task of a given wave starts.
//
// First run: every host of wave 1 is unreachable, each at another gate:
// one at "did it take?" (down after its reboot), one at the drain (its
// hook host, hookdown, does not answer), one at the probes. Each fails
// its gate with "unreachable: " and the connection's message, is
// reported and stays drained, and the play reaches the report play.
// Three failed hosts still drained leave wave 2 none of max_unavailable
// 3 (one past the limit): the line stops there, saying why, its hosts
// untouched (still staged).
// Second run, the hosts back: the three failed hosts first (drained
// already), two of them lost again (at "did it take?" and the probes);
// the next wave, with two failed hosts still drained, takes one host (the
// limit: one left) and defers the others; the wave after it takes its
// one host. Third run, nothing lost: the failed and deferred hosts
// finish. Never more than 3 hosts are drained at once, over the three
// runs; every host plans empty and none is left drained.
func TestRolloutUnreachable(t *testing.T) {
	f := newFleet(t, 7, 0, nil)
	policy := filepath.Join(f.l.dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte("version: 1\nmax_unavailable: 3\nstop: {failed_hosts: 4}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var inv strings.Builder
	inv.WriteString(`{"hosts": [`)
	for i, h := range f.names {
		if i > 0 {
			inv.WriteString(", ")
		}
		fmt.Fprintf(&inv, `{"name": %q}`, h)
	}
	inv.WriteString("]}")
	waves := f.cutWaves(t, "waves.json", inv.String(), policy)
	if len(waves) != 3 || len(waves[0]) != 3 || len(waves[1]) < 2 {
		t.Fatalf("waves %v: want 3, the first of 3 hosts, the second of 2 or more", waves)
	}
	a, b, c := waves[0][0], waves[0][1], waves[0][2]

	// The inventory: flaky_local connections, b's hooks on hookdown.
	down, downAt := f.flaky(t, func(s string) string {
		s = strings.Replace(s, "    "+b+":\n", "    "+b+":\n      rdmaform_rollout_hook_host: hookdown\n", 1)
		return s + "hooks:\n  hosts:\n    hookdown:\n      ansible_connection: flaky_local\n"
	})
	run := func(rules [][3]string) (string, int) {
		t.Helper()
		downAt(rules)
		return f.play(t, 8, map[string]any{"rdma_activation": "reboot", "rdma_report": filepath.Join(f.l.dir, "report.json"),
			"rdma_policy": policy, "rdma_drain": "command", "rdma_drain_command": f.hooks()["rdma_drain_command"],
			"rdma_undrain_command": f.hooks()["rdma_undrain_command"]})
	}
	up := func() {
		t.Helper()
		ents, err := os.ReadDir(down)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if err := os.Remove(filepath.Join(down, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	gate := func(r policyReport) map[string]string {
		out := map[string]string{}
		for _, x := range r.Failed {
			out[x.Host] = fmt.Sprintf("wave %d, %s: %s", x.Wave, x.Gate, x.Reason)
		}
		return out
	}
	hosts := func(r policyReport) []string {
		var out []string
		for _, x := range r.Deferred {
			out = append(out, x.Host)
		}
		return out
	}

	// First run: wave 1 lost at three gates; wave 2 can take none.
	if err := os.WriteFile(filepath.Join(down, "hookdown"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := run([][3]string{{"1", "Phase 3 | did it take?", a}, {"1", "Phase 3 | probes", c}})
	if code != 2 || !strings.Contains(out, "Phase 4 | the report") {
		t.Fatalf("first run: exit %d, want 2 after the report play\n%s", code, out)
	}
	r := f.policyReport(t, filepath.Join(f.l.dir, "report.json"))
	g := gate(r)
	for h, want := range map[string]string{
		a: "wave 1, did it take?: unreachable: flaky_local: " + a + " is down",
		b: "wave 1, drain (command): unreachable: the hook host hookdown: flaky_local: hookdown is down",
		c: "wave 1, probes: unreachable: flaky_local: " + c + " is down",
	} {
		if !strings.HasPrefix(g[h], want) {
			t.Errorf("first run: %s failed %q, want %q...", h, g[h], want)
		}
	}
	wantWhy := fmt.Sprintf("3 failed hosts still drained (%s, %s, %s) of max_unavailable 3: wave 2 can take none of its %d hosts", a, b, c, len(waves[1]))
	if len(r.Failed) != 3 || r.StoppedAt != 2 || r.StopReason != wantWhy || len(r.Done) != 0 || !slices.Equal(hosts(r), waves[1]) {
		t.Errorf("first run: failed %v, stopped at %d (%q), done %v, deferred %v; want wave 1's 3, stopped at 2 (%q), none done, wave 2's deferred\n%s",
			g, r.StoppedAt, r.StopReason, r.Done, hosts(r), wantWhy, out)
	}
	peak, at, left := f.outOfService(t, nil)
	if peak > 3 || !slices.Equal(left, []string{a, c}) {
		t.Errorf("first run: %d hosts drained at once (%s), left drained %v; want at most 3, %s and %s left (%s's hook host was down)", peak, at, left, a, c, b)
	}
	for _, h := range append(append([]string{}, waves[1]...), waves[2]...) {
		rdmaform(t, 3, "--sim", f.dirs[h], "plan", "-f", f.rendered(t, h)) // still staged
	}

	// Second run: the failed hosts first, two lost again; then a wave
	// at the limit.
	up()
	out, code = run([][3]string{{"1", "Phase 3 | did it take?", a}, {"1", "Phase 3 | probes", b}})
	if code != 2 {
		t.Fatalf("second run: exit %d, want 2 (hosts failed)\n%s", code, out)
	}
	r = f.policyReport(t, filepath.Join(f.l.dir, "report.json"))
	wantWaves := [][]string{{a, b, c}, waves[1], waves[2]}
	g = gate(r)
	if !slices.EqualFunc(r.WaveHosts, wantWaves, slices.Equal[[]string]) || len(r.Failed) != 2 || !strings.HasPrefix(g[a], "wave 1, did it take?: unreachable") ||
		!strings.HasPrefix(g[b], "wave 1, probes: unreachable") || r.StoppedAt != 0 {
		t.Errorf("second run: waves %v, failed %v, stopped at %d; want waves %v, %s and %s failed at wave 1, no stop\n%s", r.WaveHosts, g, r.StoppedAt, wantWaves, a, b, out)
	}
	// Waves 2 and 3 each take their first host (one left beside the 2
	// failed) and defer the others.
	wantDeferred := append(append([]string{}, waves[1][1:]...), waves[2][1:]...)
	wantDone := []string{c, waves[1][0], waves[2][0]}
	sort.Strings(wantDone)
	sort.Strings(r.Done)
	if !slices.Equal(hosts(r), wantDeferred) || !slices.Equal(r.Done, wantDone) {
		t.Errorf("second run: deferred %v, done %v; want %v deferred (2 failed hosts still drained of max_unavailable 3), %v done", hosts(r), r.Done, wantDeferred, wantDone)
	}
	for _, x := range r.Deferred {
		wave := 2
		if slices.Contains(waves[2], x.Host) {
			wave = 3
		}
		if want := fmt.Sprintf("2 failed hosts still drained (%s, %s) of max_unavailable 3", a, b); x.Reason != want || x.Wave != wave {
			t.Errorf("second run: deferred %+v, want wave %d, %q", x, wave, want)
		}
	}
	peak, at, left = f.outOfService(t, nil)
	if peak > 3 || !slices.Equal(left, []string{a, b}) {
		t.Errorf("second run: %d hosts drained at once (%s), left drained %v; want at most 3, %s and %s left", peak, at, left, a, b)
	}

	// Third run: nothing lost; everything finishes.
	up()
	out, code = run(nil)
	if code != 0 {
		t.Fatalf("third run: exit %d\n%s", code, out)
	}
	r = f.policyReport(t, filepath.Join(f.l.dir, "report.json"))
	if len(r.Failed) != 0 || len(r.Deferred) != 0 || len(r.Untouched) != 0 {
		t.Errorf("third run: failed %v, deferred %v, untouched %v; want none", gate(r), hosts(r), r.Untouched)
	}
	if peak, at, left = f.outOfService(t, nil); peak > 3 || len(left) != 0 {
		t.Errorf("over the three runs: %d hosts drained at once (%s), left drained %v; want at most 3, none left", peak, at, left)
	}
	for _, h := range f.names {
		rdmaform(t, 0, "--sim", f.dirs[h], "plan", "-f", f.rendered(t, h))
	}
}
