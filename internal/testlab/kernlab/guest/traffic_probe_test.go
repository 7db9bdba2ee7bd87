//go:build kernlab

package guest

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// probeDoc is rdmaform probe -o json.
type probeDoc struct {
	FormatVersion int `json:"format_version"`
	Probes        []struct {
		Name   string  `json:"name"`
		Kind   string  `json:"kind"`
		Target string  `json:"target"`
		Passed bool    `json:"passed"`
		RTTms  float64 `json:"rtt_ms"`
		Reason string  `json:"reason"`
	} `json:"probes"`
}

// (This file sorts after scenario_test.go on purpose: TestModules needs a
// guest where no RDMA module is loaded yet, and Go runs the tests of a
// package in file order.)
//
// TestProbes: the probes of a spec pass between two Soft-RoCE links on a
// veth pair (rdmaform probe on one end, rdmaform probe serve answering
// on the other), and each fails within its timeout, naming the peer, once
// the peer's link is down.
//
// Both links live in the guest's first namespace (6.1's rdma_rxe listens
// there only; see traffic_test.go). So that verbs traffic crosses the
// pair instead of the loopback, policy routing sends 192.0.2.2 -> .1 out
// of pvb and .1 -> .2 out of pva, and accept_local lets each end take
// packets from an address of its own host.
func TestProbes(t *testing.T) {
	veth(t, "pva", "pvb")
	t.Cleanup(func() {
		_, _ = tryRun("/sbin/rdma", "link", "delete", "rxepa")
		_, _ = tryRun("/sbin/rdma", "link", "delete", "rxepb")
	})
	converge(t, writeSpec(t, `version: 1
modules: [rdma_rxe, rdma_ucm]
rxe:
  - {name: rxepa, netdev: pva}
  - {name: rxepb, netdev: pvb}
interfaces:
  - {name: pva, state: up, mtu: 1500, addresses: [192.0.2.1/24]}
  - {name: pvb, state: up, mtu: 1500, addresses: [192.0.2.2/24]}
`))
	acrossThePair(t)

	spec := writeSpec(t, `version: 1
probes:
  - name: icmp-to-a
    ping: {to: 192.0.2.1, interface: pvb, count: 3, timeout: 5s}
  - name: cm-to-a
    rdma_cm: {to: 192.0.2.1, port: 7174, device: rxepb, count: 3, timeout: 5s}
  - name: verbs-to-a
    verbs: {to: 192.0.2.1, device: rxepb, port: 1, count: 3, timeout: 5s}
`)
	// The responders for the probes that target 192.0.2.1 (rxepa).
	serve := exec.Command(rdmaformBin, "probe", "serve", "-f", spec, "--for", "90s")
	var serveOut strings.Builder
	serve.Stdout, serve.Stderr = &serveOut, &serveOut
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if serve.ProcessState == nil {
			_ = serve.Process.Signal(os.Interrupt)
			_ = serve.Wait()
		}
		t.Logf("probe serve:\n%s", serveOut.String())
	})
	respondersListen(t)

	doc := probes(t, spec, 0)
	for _, p := range doc.Probes {
		if !p.Passed || p.RTTms <= 0 {
			t.Errorf("probe %s (%s): passed=%v rtt %.3f ms: %s", p.Name, p.Kind, p.Passed, p.RTTms, p.Reason)
		}
	}
	if len(doc.Probes) != 3 {
		t.Fatalf("%d probe results, want 3", len(doc.Probes))
	}
	capture(t, "up")

	// The peer's link goes down: every probe fails by its own timeout
	// (5 s, ping a second more to report) and names the peer. The bound
	// only catches a probe that ignores its timeout (the runner's default
	// is 60 s); how long the probes take on a loaded machine is not
	// asserted (it ran past 9 s under QEMU on a busy host).
	run(t, "/sbin/ip", "link", "set", "pva", "down")
	capture(t, "down")
	start := time.Now()
	doc = probes(t, spec, 2)
	if took := time.Since(start); took > 45*time.Second {
		t.Errorf("probes with the peer down took %s; each has a 5s timeout", took)
	}
	for _, p := range doc.Probes {
		if p.Passed || !strings.Contains(p.Reason, "192.0.2.1") {
			t.Errorf("probe %s with the peer down: passed=%v, reason %q (want a failure naming 192.0.2.1)", p.Name, p.Passed, p.Reason)
		}
	}

	// An ib probe on an Ethernet port is refused before anything runs.
	ib := writeSpec(t, "version: 1\nprobes:\n  - name: mad\n    ib: {device: rxepb, to_lid: 1}\n")
	code, out, errs := rdmaform(t, "probe", "-f", ib)
	if code != 1 || !strings.Contains(out+errs, "InfiniBand port") {
		t.Errorf("ib probe on an Ethernet port: exit %d (want 1 naming the port's link layer):\n%s%s", code, out, errs)
	}
}

// probes runs rdmaform probe -o json and checks its exit code.
func probes(t *testing.T, spec string, want int) probeDoc {
	t.Helper()
	code, out, errs := rdmaform(t, "probe", "-f", spec, "-o", "json")
	var doc probeDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("probe -o json: %v\n%s%s", err, out, errs)
	}
	if code != want {
		t.Errorf("probe: exit %d, want %d:\n%s%s", code, want, out, errs)
	}
	t.Logf("probe (exit %d):\n%s", code, out)
	return doc
}

// acrossThePair routes each end's traffic to the other out of its own
// veth: the local table moves behind two source rules for locally sent
// packets (iif lo), so that arriving packets are still delivered.
func acrossThePair(t *testing.T) {
	for _, k := range []string{"all", "default", "pva", "pvb"} {
		for f, v := range map[string]string{"accept_local": "1", "rp_filter": "0"} {
			if err := os.WriteFile("/proc/sys/net/ipv4/conf/"+k+"/"+f, []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	run(t, "/sbin/ip", "rule", "add", "pref", "100", "lookup", "local")
	run(t, "/sbin/ip", "rule", "del", "pref", "0")
	run(t, "/sbin/ip", "rule", "add", "pref", "10", "from", "192.0.2.2", "to", "192.0.2.1", "iif", "lo", "lookup", "101")
	run(t, "/sbin/ip", "route", "add", "192.0.2.1", "dev", "pvb", "src", "192.0.2.2", "table", "101")
	run(t, "/sbin/ip", "rule", "add", "pref", "11", "from", "192.0.2.1", "to", "192.0.2.2", "iif", "lo", "lookup", "102")
	run(t, "/sbin/ip", "route", "add", "192.0.2.2", "dev", "pva", "src", "192.0.2.1", "table", "102")
	t.Cleanup(func() {
		_, _ = tryRun("/sbin/ip", "rule", "del", "pref", "10")
		_, _ = tryRun("/sbin/ip", "rule", "del", "pref", "11")
		_, _ = tryRun("/sbin/ip", "rule", "add", "pref", "0", "lookup", "local")
		_, _ = tryRun("/sbin/ip", "rule", "del", "pref", "100")
	})
}

// capture prints the probe tools' own output, as rdmaform runs them, for
// probe/testdata/real (the parsers' corpus; see its PROVENANCE.md).
func capture(t *testing.T, state string) {
	for _, c := range [][]string{
		{"ping", "-n", "-c", "3", "-w", "5", "-I", "pvb", "--", "192.0.2.1"},
		{"rping", "-c", "-a", "192.0.2.1", "-p", "7174", "-C", "3", "-v"},
		{"ibv_rc_pingpong", "-d", "rxepb", "-i", "1", "-n", "3", "-p", "18515", "-g", "1", "192.0.2.1"},
	} {
		cmd := exec.Command(c[0], c[1:]...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		var err error
		select {
		case err = <-done:
		case <-time.After(6 * time.Second):
			_ = cmd.Process.Kill()
			err = <-done
		}
		code := 0
		if x, ok := err.(*exec.ExitError); ok {
			code = x.ExitCode()
		}
		t.Logf("KERNLAB-CAPTURE %s %s exit=%d\n--stdout--\n%s--stderr--\n%s--end--", state, strings.Join(c, " "), code, stdout.String(), stderr.String())
		time.Sleep(500 * time.Millisecond) // the pingpong responder restarts
	}
}

// respondersListen waits until probe serve's responders listen: the
// ibv_rc_pingpong server on TCP 18515 (/proc/net/tcp or tcp6, state 0A) and rping
// -s as an RDMA CM id in LISTEN (rdma resource show cm_id). A loaded
// machine starts them late; a fixed sleep was not enough. After 60 s the
// probes run anyway and their failures say what did not listen.
var pingpongListens = regexp.MustCompile(`:4853 0+:0000 0A`)

func respondersListen(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		tcp4, _ := os.ReadFile("/proc/net/tcp")
		tcp6, _ := os.ReadFile("/proc/net/tcp6")
		cm, _ := tryRun("/sbin/rdma", "resource", "show", "cm_id")
		if (pingpongListens.Match(tcp4) || pingpongListens.Match(tcp6)) && strings.Contains(cm, "LISTEN") {
			return
		}
	}
	t.Log("the responders do not listen after 60s")
}
