package probe

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/need"
	"github.com/rdmaform/rdmaform/internal/testlab/netns"
	"github.com/rdmaform/rdmaform/schema"
)

// pingLab is two network namespaces of the test's own joined by a veth
// pair: this side's rfa0 (192.0.2.1/24) and the peer's prpeer0
// (192.0.2.2/24), with a host whose commands run on this side: the real
// iputils ping then reaches only the peer's namespace. Nothing is left
// behind and the machine's own network is never touched.
func pingLab(t *testing.T) *host.Host {
	t.Helper()
	h, _ := pingLabWithPeer(t)
	return h
}

// pingLabWithPeer is pingLab, with the peer's namespace.
func pingLabWithPeer(t *testing.T) (*host.Host, *netns.Lab) {
	t.Helper()
	needTool(t, "ping", "iputils-ping")
	l, peer := netns.New(t), netns.New(t)
	l.IP(t, "link", "set", netns.Veth1, "name", "prpeer0")
	l.IP(t, "link", "set", "prpeer0", "netns", peer.Name)
	l.IP(t, "link", "set", "lo", "up")
	l.IP(t, "addr", "add", "192.0.2.1/24", "dev", netns.Veth0)
	l.IP(t, "link", "set", netns.Veth0, "up")
	peer.IP(t, "addr", "add", "192.0.2.2/24", "dev", "prpeer0")
	peer.IP(t, "link", "set", "prpeer0", "up")
	h := *l.Host
	h.Runner, h.Kernel = l.Runner(), scriptedKernel{}
	return &h, peer
}

// needTool skips (or fails under RDMAFORM_REQUIRE_LAB=1) a test that runs a
// real program.
func needTool(t *testing.T, program, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(program); err != nil {
		skipOrFail(t, "%s is not installed (apt-get install %s)", program, pkg)
	}
}

func parseSpec(t *testing.T, text string) *schema.Spec {
	t.Helper()
	spec, rep := schema.Parse("probes.yaml", []byte(text))
	if len(rep) > 0 {
		t.Fatalf("spec: %v", rep)
	}
	return spec
}

// TestPingOutcomesInNamespace runs the real ping through Run against the
// namespace's addresses: every reply passes; a peer that does not answer
// fails naming the hop; an interface that does not exist is a probe that
// could not run. Fewer replies than count: TestPingPartlyAnswered.
func TestPingOutcomesInNamespace(t *testing.T) {
	h := pingLab(t)
	spec := parseSpec(t, `version: 1
probes:
  - name: ok
    ping: {to: 192.0.2.2, interface: rfa0, count: 2, timeout: 3s}
  - name: silent-peer
    ping: {to: 192.0.2.9, interface: rfa0, count: 1, timeout: 1s}
  - name: no-route
    ping: {to: 198.51.100.7, count: 1, timeout: 1s}
  - name: no-such-interface
    ping: {to: 192.0.2.2, interface: nosuch0, count: 1, timeout: 2s}
`)
	res, err := Run(context.Background(), h, spec)
	by := map[string]Result{}
	for _, r := range res {
		by[r.Name] = r
	}
	want := map[string]struct {
		outcome Outcome
		reason  string
	}{
		"ok":                {OutcomePassed, "2/2 answered by 192.0.2.2"},
		"silent-peer":       {OutcomeFailed, "0/1 answered by 192.0.2.9"},
		"no-route":          {OutcomeFailed, "198.51.100.7: ping: connect: Network is unreachable"},
		"no-such-interface": {OutcomeError, "SO_BINDTODEVICE nosuch0: No such device"},
	}
	for name, w := range want {
		r := by[name]
		if r.Outcome != w.outcome || r.Passed != (w.outcome == OutcomePassed) || !strings.Contains(r.Reason, w.reason) {
			t.Errorf("%s: outcome %q passed %v reason %q, want %q with %q", name, r.Outcome, r.Passed, r.Reason, w.outcome, w.reason)
		}
	}
	if r := by["ok"]; r.RTTms <= 0 || r.Command != "ping -n -c 2 -w 3 -I rfa0 -- 192.0.2.2" {
		t.Errorf("ok: rtt %v command %q", r.RTTms, r.Command)
	}
	var te *ToolError
	if !errors.As(err, &te) || te.Probe != "no-such-interface" || strings.Contains(err.Error(), "silent-peer") {
		t.Errorf("Run's error names the probes that could not run only: %v", err)
	}
}

// TestPingPartlyAnswered: fewer replies than count fail with the count of
// those that came, which are counted (with their round-trip time), not
// taken for silence. The peer answers exactly one echo: its kernel
// rate-limits echo replies (icmp_ratemask with bit 0, ECHOREPLY) to one
// per 40 s per requester, and a new requester starts with 60 s of tokens
// (inet_getpeer: rate_last = jiffies - 60*HZ), so the first reply goes and
// the next ones wait 20 s more than the run lasts. The outcome depends on
// no timing but the 5 s deadline the one reply has to arrive in (a -w 1
// run cut after one or two echoes gave 0/3 on a loaded machine).
func TestPingPartlyAnswered(t *testing.T) {
	h, peer := pingLabWithPeer(t)
	needTool(t, "sysctl", "procps")
	if _, err := peer.Runner().Run(context.Background(), host.Cmd{Args: []string{"sysctl", "-w", "net.ipv4.icmp_ratemask=6169", "net.ipv4.icmp_ratelimit=40000"}}); err != nil {
		t.Fatal(err) // 6169 = 0x1819: the kernel's default mask and ECHOREPLY
	}
	spec := parseSpec(t, `version: 1
probes:
  - name: partly
    ping: {to: 192.0.2.2, interface: rfa0, count: 3, timeout: 5s}
`)
	res, err := Run(context.Background(), h, spec)
	if err != nil {
		t.Fatalf("a probe that ran is not an error: %v", err)
	}
	if len(res) != 1 {
		t.Fatalf("results: %+v", res)
	}
	r := res[0]
	if r.Outcome != OutcomeFailed || r.Passed || !strings.HasPrefix(r.Reason, "1/3 answered by 192.0.2.2") || r.RTTms <= 0 {
		t.Errorf("partly: outcome %q passed %v reason %q rtt %v, want failed with %q and the reply's rtt", r.Outcome, r.Passed, r.Reason, r.RTTms, "1/3 answered by 192.0.2.2")
	}
}

func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	need.Skip(t, format, args...)
}
