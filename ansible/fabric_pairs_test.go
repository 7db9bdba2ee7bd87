package ansible_test

import (
	"encoding/json"
	"fmt"
	"net"
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
	// task on a loaded machine (at a load average of 35 once more than
	// 30): round 0 starts 60 s after it.
	begin := time.Now()
	res, _, out := run("three rounds", now()+60, 6, []map[string]any{
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
	// slot's end (78 s after begin, where the sleep ends after 192 s).
	if d := time.Since(begin); d > 150*time.Second {
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

// freePort is a TCP port on 127.0.0.1 that nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestFabricPairsBarrier runs rdmaform.rdma.fabric_pairs with a barrier
// under ansible-core (a stand-in for rdmaform that prints a passed
// probe): round 0 starts when the last host of the pass is ready,
// however late, so a leader started 5 s after the others wait for it
// (a listener that hangs up on them till then) loses no pair, and every
// host has the one start; a host that never comes is
// named absent and its pairs are errors, the others' pairs are measured;
// a host of another pass (token) is refused; a host with no leader
// reports each of its pairs as an error after the timeout; the leader
// that cannot listen fails; the timeout's and port's limits. The cases
// run at once, each on its own port.
func TestFabricPairsBarrier(t *testing.T) {
	l := newLab(t)
	l.installCollection(t)
	doc := `{"format_version": 1, "probes": [
  {"name": "fabric-bw", "kind": "bandwidth", "outcome": "passed", "passed": true, "perf": {"bandwidth_gbps": 193.2}},
  {"name": "fabric-lat", "kind": "latency", "outcome": "passed", "passed": true, "perf": {"latency_us": 1.0}}]}`
	standIn := []string{"python3", "-c", fmt.Sprintf("import sys; sys.stdout.write(%q)", doc)}
	type part struct {
		round int
		peer  string
		serve bool
	}
	args := func(host, addr string, port int, leader bool, hosts []string, token string, timeout int, parts ...part) map[string]any {
		rounds := []map[string]any{}
		for _, p := range parts {
			rounds = append(rounds, map[string]any{"round": p.round, "peer": p.peer, "peer_address": "10.0.0.1", "serve": p.serve})
		}
		return map[string]any{"command": standIn, "host": host, "address": "10.0.0.9", "rounds": rounds,
			"bandwidth": map[string]any{"netdev": "ib0"}, "latency": map[string]any{"netdev": "ib0"}, "slot": 6, "lead": 1,
			"barrier": map[string]any{"address": addr, "port": port, "leader": leader, "hosts": hosts, "token": token, "timeout": timeout}}
	}
	start := func(host string, port int, leader bool, hosts []string, token string, timeout int, parts ...part) *task {
		t.Helper()
		return l.start(t, nil, "rdmaform.rdma.fabric_pairs", args(host, "127.0.0.1", port, leader, hosts, token, timeout, parts...))
	}
	measured := func(res map[string]any) string { return fmt.Sprint(res["measured"]) }

	// node009 never comes to node001's pass; node004 is of another pass.
	absentPort := freePort(t)
	ld2 := start("node001", absentPort, true, []string{"node001", "node002", "node009"}, "pass 2", 10, part{1, "node002", true})
	a2 := start("node002", absentPort, false, nil, "pass 2", 60, part{0, "node009", false}, part{1, "node001", false})
	d2 := start("node004", absentPort, false, nil, "pass 1", 60, part{0, "node001", false})
	// No leader: each pair an error after the timeout.
	noPort := freePort(t)
	no := start("node002", noPort, false, nil, "pass 3", 2, part{0, "node001", false}, part{1, "node003", true})
	// A leader that cannot listen (an address not on this host).
	deaf := l.start(t, nil, "rdmaform.rdma.fabric_pairs", args("node001", "192.0.2.1", noPort, true, []string{"node001"}, "x", 60))
	// The limits: a timeout of 1 and 3600 s and port 65535 are taken (a
	// leader alone answers at once), 0, 3601 and 65536 refused.
	limits := []struct {
		timeout, port int
		want          string
	}{{1, freePort(t), ""}, {3600, freePort(t), ""}, {60, 65535, ""}, {0, noPort, "barrier timeout must be 1 to 3600 seconds, not 0"},
		{3601, noPort, "barrier timeout must be 1 to 3600 seconds, not 3601"}, {60, 65536, "barrier port must be 1 to 65535, not 65536"}}
	var lims []*task
	for _, lim := range limits {
		lims = append(lims, start("node001", lim.port, true, []string{"node001"}, "x", lim.timeout))
	}

	// The leader starts well after the two others are waiting: nothing
	// is lost. Until then a listener of the test's own takes their
	// hellos and hangs up without a start (they connect again), so that
	// the leader is late however slowly Ansible starts the others.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	a := start("node002", port, false, nil, "pass 1", 120, part{0, "node001", false})
	c := start("node003", port, false, nil, "pass 1", 120, part{1, "node001", false})
	hello := map[string]bool{}
	for len(hello) < 2 {
		conn, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		var h struct{ Host, Token string }
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if err := json.NewDecoder(conn).Decode(&h); err != nil || h.Token != "pass 1" {
			t.Fatalf("a hello %+v (%v); want a host and the token", h, err)
		}
		hello[h.Host] = true
		conn.Close()
	}
	ln.Close()
	time.Sleep(5 * time.Second)
	leaderAt := float64(time.Now().UnixNano()) / 1e9
	ld := start("node001", port, true, []string{"node001", "node002", "node003"}, "pass 1", 120, part{0, "node002", true}, part{1, "node003", true})
	resL, statusL, outL := ld.wait(t)
	resA, _, outA := a.wait(t)
	resC, _, outC := c.wait(t)
	if statusL == "FAILED!" || resL["served"] != float64(2) || fmt.Sprint(resL["absent"]) != "[]" {
		t.Errorf("late leader: %s, served %v, absent %v; want 2 served, none absent\n%s", statusL, resL["served"], resL["absent"], outL)
	}
	for _, x := range []struct {
		res  map[string]any
		pair string
		out  string
	}{{resA, "[node001 node002]", outA}, {resC, "[node001 node003]", outC}} {
		if m := measured(x.res); m != fmt.Sprintf("[map[bandwidth_gbps:193.2 hosts:%s latency_us:1]]", x.pair) {
			t.Errorf("late leader: measured %s; want %s measured\n%s", m, x.pair, x.out)
		}
		if x.res["start"] != resL["start"] {
			t.Errorf("late leader: start %v, the leader's %v; want one start\n%s", x.res["start"], resL["start"], x.out)
		}
	}
	if s, _ := resL["start"].(float64); s < leaderAt {
		t.Errorf("late leader: round 0 at %f, before the leader started (%f)", s, leaderAt)
	}
	if w, _ := resA["waited"].(float64); w < 5 {
		t.Errorf("late leader: node002 waited %v s at the barrier; want the 5 s and more until the leader\n%s", resA["waited"], outA)
	}

	resD, _, outD := d2.wait(t)
	resL, _, outL = ld2.wait(t)
	resA, _, outA = a2.wait(t)
	if fmt.Sprint(resL["absent"]) != "[node009]" || resL["served"] != float64(1) {
		t.Errorf("absent: the leader's absent %v, served %v; want [node009], 1\n%s", resL["absent"], resL["served"], outL)
	}
	if m := measured(resA); !strings.Contains(m, "hosts:[node009 node002]]") || !strings.Contains(m, "node009 was not ready at the barrier within 10s (its part had not started)") ||
		!strings.Contains(m, "map[bandwidth_gbps:193.2 hosts:[node001 node002] latency_us:1]") {
		t.Errorf("absent: node002 measured %s; want the pair with node009 an error, the one with node001 measured\n%s", m, outA)
	}
	if m := measured(resD); !strings.Contains(m, "refused node004: not a host of this pass (token pass 2)") {
		t.Errorf("another pass: node004 measured %s; want its pair an error: refused\n%s", m, outD)
	}

	res, _, out := no.wait(t)
	if m := measured(res); !strings.Contains(m, fmt.Sprintf("no start from the barrier at 127.0.0.1 port %d within 2s", noPort)) || strings.Contains(m, "node003") {
		t.Errorf("no leader: measured %s; want the client's pair an error, no start\n%s", m, out)
	}
	res, status, out := deaf.wait(t)
	if status != "FAILED!" || !strings.Contains(fmt.Sprint(res["msg"]), fmt.Sprintf("the barrier cannot listen on 192.0.2.1 port %d", noPort)) {
		t.Errorf("cannot listen: %s %v; want failed, saying so\n%s", status, res["msg"], out)
	}
	for i, lim := range limits {
		res, status, out := lims[i].wait(t)
		if (lim.want == "") != (status != "FAILED!") || !strings.Contains(fmt.Sprint(res["msg"]), lim.want) {
			t.Errorf("timeout %d, port %d: %s %v; want %q\n%s", lim.timeout, lim.port, status, res["msg"], lim.want, out)
		}
	}
}
