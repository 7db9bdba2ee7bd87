package ansible_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

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
	f := newFleet(t, 3, 0, nil)
	report := filepath.Join(f.l.dir, "report.json")
	extra := f.hooks()
	extra["rdma_max_unavailable"], extra["rdma_report"] = "1", report
	extra["rdma_bandwidth"] = map[string]any{"netdev": "ib1", "duration": "1s", "floor": "90%"}
	f.l.env = append(f.l.env, "ANSIBLE_ASYNC_DIR="+filepath.Join(f.l.dir, "async"))
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
