package ansible_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// newBandwidthFleet is three simulated hosts and the play's variables
// for a rollout by firmware reset a host a wave (max_unavailable 1),
// with command hooks, the report at the returned path, and the bandwidth
// gate: a probe over ib1 with a floor of 90 % of the port's 200 Gb/s.
func newBandwidthFleet(t *testing.T) (f *fleet, report string, extra map[string]any) {
	t.Helper()
	f = newFleet(t, 3, 0, nil)
	report = filepath.Join(f.l.dir, "report.json")
	extra = f.hooks()
	extra["rdma_max_unavailable"], extra["rdma_report"] = "1", report
	extra["rdma_bandwidth"] = map[string]any{"netdev": "ib1", "duration": "1s", "floor": "90%"}
	// The peer's server runs as an async task: its job files here.
	f.l.env = append(f.l.env, "ANSIBLE_ASYNC_DIR="+filepath.Join(f.l.dir, "async"))
	return f, report, extra
}

// TestRolloutBandwidthGate runs the rollout by firmware reset on three
// simulated hosts, a wave each, with the bandwidth gate (a bandwidth
// probe over ib1 with a floor of 90 % of the port's 200 Gb/s, the peer
// answering with rdmaform probe serve). The second host is slow (the
// simulator's slow fault: its runs move half the bandwidth): its gate
// fails with perftest's figure against the floor, the line stops at its
// wave, the host stays drained and the third is untouched. With the
// fault cleared, the second run passes the gate on both and undrains
// them; every host then plans empty.
func TestRolloutBandwidthGate(t *testing.T) {
	f, report, extra := newBandwidthFleet(t)
	bad := f.names[1]
	f.run(t, "sim", "fault", f.dirs[bad], "--slow", "0.5")

	out, code := f.play(t, 3, extra)
	if code != 2 {
		t.Fatalf("first run: exit %d, want 2\n%s", code, out)
	}
	r := f.report(t, report)
	if len(r.Failed) != 1 || r.Failed[0].Host != bad || r.Failed[0].Gate != "bandwidth" || r.Failed[0].Wave != 2 {
		t.Fatalf("first run: failed %+v, want %s at wave 2's bandwidth gate\n%s", r.Failed, bad, out)
	}
	if w := "bandwidth-to-" + f.names[0] + ": "; !strings.Contains(r.Failed[0].Reason, w) || !strings.Contains(r.Failed[0].Reason, "floor") {
		t.Errorf("first run: the reason %q does not give the probe to %s and its floor", r.Failed[0].Reason, f.names[0])
	}
	if strings.Join(r.Done, " ") != f.names[0] || strings.Join(r.Untouched, " ") != f.names[2] || r.StoppedAt != 2 {
		t.Errorf("first run: done %v, untouched %v, stopped at %d; want %s, %s, 2", r.Done, r.Untouched, r.StoppedAt, f.names[0], f.names[2])
	}
	drained, left := f.checkHooks(t, 1, 1)
	if strings.Join(left, " ") != bad || drained[f.names[0]] != 1 || drained[bad] != 1 || drained[f.names[2]] != 0 {
		t.Errorf("first run: left drained %v, drains %v; want %s alone left drained, %s drained and undrained, %s never drained",
			left, drained, bad, f.names[0], f.names[2])
	}

	f.run(t, "sim", "fault", f.dirs[bad], "--clear")
	if err := os.Remove(f.hooksLog); err != nil {
		t.Fatal(err)
	}
	out, code = f.play(t, 3, extra)
	if code != 0 {
		t.Fatalf("second run: exit %d\n%s", code, out)
	}
	r = f.report(t, report)
	sort.Strings(r.Done)
	if want := bad + " " + f.names[2]; strings.Join(r.Done, " ") != want || len(r.Failed) != 0 || len(r.Untouched) != 0 {
		t.Errorf("second run: done %v, failed %+v, untouched %v; want %s done", r.Done, r.Failed, r.Untouched, want)
	}
	if _, left := f.checkHooks(t, 1, 1); len(left) != 0 {
		t.Errorf("second run: left drained %v", left)
	}
	for _, h := range f.names {
		rdmaform(t, 0, "--sim", f.dirs[h], "plan", "-f", f.rendered(t, h))
	}
}

// TestRolloutBandwidthPeerUnreachable: the bandwidth gate's peer cannot
// be reached when the host's gate starts its server (the test
// connection flaky_local takes it down at that task of wave 2). The
// host fails its bandwidth gate with a reason that names the peer, not
// as a host that left the play; it stays drained, the line stops at its
// wave and the play reaches the report. The second run loses the host
// itself before its probe: it fails the same gate, "unreachable" with
// the connection's message. With every host back, the third run passes
// the gate on both remaining hosts; every host plans empty.
func TestRolloutBandwidthPeerUnreachable(t *testing.T) {
	f, report, extra := newBandwidthFleet(t)
	down, downAt := f.flaky(t, nil)
	peer, host := f.names[0], f.names[1]

	downAt([][3]string{{"2", "Phase 3 | bandwidth server", peer}})
	out, code := f.play(t, 3, extra)
	if code != 2 || !strings.Contains(out, "Phase 4 | the report") {
		t.Fatalf("first run: exit %d, want 2 after the report play\n%s", code, out)
	}
	r := f.report(t, report)
	want := "unreachable: the bandwidth peer " + peer + ": flaky_local: " + peer + " is down"
	if len(r.Failed) != 1 || r.Failed[0].Host != host || r.Failed[0].Gate != "bandwidth" || !strings.HasPrefix(r.Failed[0].Reason, want) {
		t.Fatalf("first run: failed %+v, want %s at its bandwidth gate: %q\n%s", r.Failed, host, want, out)
	}
	if strings.Join(r.Done, " ") != peer || strings.Join(r.Untouched, " ") != f.names[2] || r.StoppedAt != 2 {
		t.Errorf("first run: done %v, untouched %v, stopped at %d; want %s, %s, 2", r.Done, r.Untouched, r.StoppedAt, peer, f.names[2])
	}
	if _, left := f.checkHooks(t, 1, 1); strings.Join(left, " ") != host {
		t.Errorf("first run: left drained %v, want %s", left, host)
	}

	// Second run, the peer back: the failed host goes first (wave 1) and
	// is lost itself before its probe.
	if err := os.Remove(filepath.Join(down, peer)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(f.hooksLog); err != nil {
		t.Fatal(err)
	}
	downAt([][3]string{{"1", "Phase 3 | bandwidth server start", host}})
	out, code = f.play(t, 3, extra)
	if code != 2 || !strings.Contains(out, "Phase 4 | the report") {
		t.Fatalf("second run: exit %d, want 2 after the report play\n%s", code, out)
	}
	r = f.report(t, report)
	want = "unreachable: flaky_local: " + host + " is down"
	if len(r.Failed) != 1 || r.Failed[0].Host != host || r.Failed[0].Gate != "bandwidth" || !strings.HasPrefix(r.Failed[0].Reason, want) {
		t.Fatalf("second run: failed %+v, want %s at its bandwidth gate: %q\n%s", r.Failed, host, want, out)
	}

	// Third run, every host up: both left finish.
	if err := os.Remove(filepath.Join(down, host)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(f.hooksLog); err != nil {
		t.Fatal(err)
	}
	downAt(nil)
	out, code = f.play(t, 3, extra)
	if code != 0 {
		t.Fatalf("third run: exit %d\n%s", code, out)
	}
	r = f.report(t, report)
	sort.Strings(r.Done)
	if w := host + " " + f.names[2]; strings.Join(r.Done, " ") != w || len(r.Failed) != 0 {
		t.Errorf("third run: done %v, failed %+v; want %s done", r.Done, r.Failed, w)
	}
	if _, left := f.checkHooks(t, 1, 1); len(left) != 0 {
		t.Errorf("third run: left drained %v", left)
	}
	for _, h := range f.names {
		rdmaform(t, 0, "--sim", f.dirs[h], "plan", "-f", f.rendered(t, h))
	}
}
