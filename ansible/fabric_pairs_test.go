package ansible_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestFabricPairsSlots runs the module rdmaform.rdma.fabric_pairs under
// ansible-core with stand-ins for rdmaform (python3 printing what
// rdmaform probe -o json prints, or hanging): a client's figures are
// read from the bandwidth and latency probes' perf, in the results
// file's form, the pair named server first; a failed probe is its
// pair's error with the probe's reason; a run still going at its slot's
// end is stopped and is an error; a slot already over when the host
// reaches it is an error for the client and skipped by the server; and
// bad slots are refused.
func TestFabricPairsSlots(t *testing.T) {
	l := newLab(t)
	l.installCollection(t)
	probeDoc := func(bwOutcome string) string {
		return fmt.Sprintf(`{"format_version": 1, "probes": [
  {"name": "fabric-bw", "kind": "bandwidth", "outcome": %q, "passed": %v, "reason": "96.62 Gb/s; link_layer is Ethernet, not InfiniBand", "perf": {"bandwidth_gbps": 96.62}},
  {"name": "fabric-lat", "kind": "latency", "outcome": "passed", "passed": true, "reason": "1.00 us median", "perf": {"latency_us": 1.0}}]}`, bwOutcome, bwOutcome == "passed")
	}
	// A stand-in for rdmaform (python3 -c SCRIPT probe -f SPEC -o json)
	// that answers by the probes' to: 10.0.0.1 passes, 10.0.0.3 fails
	// its bandwidth probe, 10.0.0.4 hangs past any slot.
	script := fmt.Sprintf(`import json, sys, time
spec = json.load(open(sys.argv[sys.argv.index("-f") + 1]))
to = spec["probes"][0]["bandwidth"]["to"]
if to == "10.0.0.4":
    time.sleep(120)
sys.stdout.write(%q if to == "10.0.0.1" else %q)
`, probeDoc("passed"), probeDoc("failed"))
	standIn := []string{"python3", "-c", script}
	run := func(what string, start float64, slot int, rounds []map[string]any) (map[string]any, string, string) {
		t.Helper()
		args := map[string]any{"command": standIn, "host": "node002", "address": "10.0.0.2", "rounds": rounds,
			"bandwidth": map[string]any{"netdev": "ib0", "duration": "1s"}, "latency": map[string]any{"netdev": "ib0", "tcp_port": 18516},
			"start": start, "slot": slot, "lead": 0.5}
		res, status, out := l.start(t, nil, "rdmaform.rdma.fabric_pairs", args).wait(t)
		return res, status, what + ": " + status + "\n" + out
	}
	now := func() float64 { return float64(time.Now().UnixNano()) / 1e9 }
	client := func(round int, peer, addr string) map[string]any {
		return map[string]any{"round": round, "peer": peer, "peer_address": addr, "serve": false}
	}

	// Three rounds of 6 s; Ansible starts the module seconds after the
	// task on a loaded machine: round 0 starts 30 s after it.
	begin := time.Now()
	res, _, out := run("three rounds", now()+30, 6, []map[string]any{
		client(0, "node001", "10.0.0.1"), client(1, "node003", "10.0.0.3"), client(2, "node004", "10.0.0.4")})
	m, _ := res["measured"].([]any)
	if len(m) != 3 {
		t.Fatalf("three rounds: measured %v, want 3 pairs\n%s", res["measured"], out)
	}
	want := map[string]any{"hosts": []any{"node001", "node002"}, "bandwidth_gbps": 96.62, "latency_us": 1.0}
	if diff := cmp.Diff(want, m[0]); diff != "" {
		t.Errorf("round 0 (-want +got):\n%s\n%s", diff, out)
	}
	if !strings.Contains(fmt.Sprint(m[1]), "fabric-bw failed: 96.62 Gb/s; link_layer is Ethernet, not InfiniBand") {
		t.Errorf("round 1: %v, want the pair's error with the failed probe's reason\n%s", m[1], out)
	}
	if !strings.Contains(fmt.Sprint(m[2]), "did not finish within its slot") {
		t.Errorf("round 2: %v, want the pair's error: did not finish within its slot\n%s", m[2], out)
	}
	// The stand-in of round 2 sleeps 120 s: the module stopped it at the
	// slot's end.
	if d := time.Since(begin); d > 100*time.Second {
		t.Errorf("the module returned after %s, not at the last slot's end", d)
	}

	late := []map[string]any{client(0, "node001", "10.0.0.1"), {"round": 1, "peer": "node003", "peer_address": "10.0.0.3", "serve": true}}
	res, _, out = run("late", now()-60, 5, late)
	if m, _ := res["measured"].([]any); len(m) != 1 || !strings.Contains(fmt.Sprint(m[0]), "too late to measure") || res["served"] != float64(0) {
		t.Errorf("late: measured %v, served %v; want the client's pair an error (too late) and nothing served\n%s", res["measured"], res["served"], out)
	}

	// 2 seconds, the least slot, is taken; 1 is refused.
	res, status, out := run("slot 2", now()-60, 2, late[:1])
	if m, _ := res["measured"].([]any); status == "FAILED!" || len(m) != 1 {
		t.Errorf("slot 2: %s %v, want it taken and the pair reported\n%s", status, res, out)
	}
	res, status, out = run("slot 1", now()-60, 1, late[:1])
	if status != "FAILED!" || !strings.Contains(fmt.Sprint(res["msg"]), "slot must be 2 seconds or more, not 1") {
		t.Errorf("slot 1: %s %v, want refused\n%s", status, res, out)
	}
}
