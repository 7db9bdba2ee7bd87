package probe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseRealOutputs parses every real output in testdata/real (see its
// PROVENANCE.md) and checks what the probe makes of it.
func TestParseRealOutputs(t *testing.T) {
	cases := []struct {
		file, kind string
		replies    int
		rttMs      float64
		problem    string // substring; "" means none
		cannot     string // the could-not-run reason; "" means it ran
	}{
		{"ping-ok", "ping", 3, 0.645, "", ""},
		{"ping-peer-down", "ping", 0, 0, "", ""},
		{"rping-ok", "rdma_cm", 3, 0, "", ""},
		{"rping-peer-down", "rdma_cm", 0, 0, "RDMA_CM_EVENT_UNREACHABLE (error -110)", ""},
		{"ibv_rc_pingpong-ok", "verbs", 3, 0.511, "", ""},
		{"ibv_rc_pingpong-peer-down", "verbs", 0, 0, "client read/write: No space left on device", ""},
		{"ibping-ok", "ib", 28, 0.075, "", ""},
		{"ping-partly", "ping", 1, 0.145, "", ""},
		{"ping-no-route", "ping", 0, 0, "ping: connect: Network is unreachable", ""},
		{"ping-no-interface", "ping", 0, 0, "", "ping: SO_BINDTODEVICE nosuch0: No such device"},
		{"ping-warning", "ping", 0, 0, "ping: Warning: source address might be selected on device other than: rfa1", ""},
		{"rping-no-device", "rdma_cm", 0, 0, "", "No RDMA devices were detected"},
		{"ibv_rc_pingpong-no-device", "verbs", 0, 0, "", "Failed to get IB devices list: Function not implemented"},
		{"ibping-no-device", "ib", 0, 0, "", "Failed to open 'mlx5_0' port '1'"},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		seen[c.file] = true
		t.Run(c.file, func(t *testing.T) {
			stdout, err := os.ReadFile(filepath.Join("testdata/real", c.file+".stdout"))
			if err != nil {
				t.Fatal(err)
			}
			stderr, err := os.ReadFile(filepath.Join("testdata/real", c.file+".stderr"))
			if err != nil {
				t.Fatal(err)
			}
			o := parse(c.kind, stdout, stderr)
			if o.replies != c.replies || o.rttMs != c.rttMs {
				t.Errorf("replies %d rtt %.3f ms, want %d and %.3f", o.replies, o.rttMs, c.replies, c.rttMs)
			}
			if (c.problem == "") != (o.problem == "") || !strings.Contains(o.problem, c.problem) {
				t.Errorf("problem %q, want %q", o.problem, c.problem)
			}
			if o.cannot != c.cannot {
				t.Errorf("could not run: %q, want %q", o.cannot, c.cannot)
			}
		})
	}
	files, _ := filepath.Glob("testdata/real/*.stdout")
	for _, f := range files {
		// perftest's outputs are TestParsePerftestReal's.
		if n := strings.TrimSuffix(filepath.Base(f), ".stdout"); !seen[n] && !strings.HasPrefix(n, "perftest-") {
			t.Errorf("testdata/real/%s has no case here", n)
		}
	}
}

// TestParseEdges: what the parsers make of output they were not written
// for; each line is taken from a real sample above and changed as noted.
func TestParseEdges(t *testing.T) {
	// ping's per-packet error line names the hop that answered.
	o := parsePing("PING 192.0.2.9 (192.0.2.9) 56(84) bytes of data.\nFrom 192.0.2.2 icmp_seq=1 Destination Host Unreachable\n\n--- 192.0.2.9 ping statistics ---\n3 packets transmitted, 0 received, +1 errors, 100% packet loss, time 2040ms\n", "")
	if o.replies != 0 || o.problem != "Destination Host Unreachable (reported by 192.0.2.2)" {
		t.Errorf("unreachable: %+v", o)
	}
	// Nothing on stdout: the reason is stderr's first line.
	o = parsePing("", "ping: connect: Network is unreachable\n")
	if o.problem != "ping: connect: Network is unreachable" {
		t.Errorf("no route: %+v", o)
	}
	// Partial loss counts what was answered.
	o = parsePing("3 packets transmitted, 2 received, 33.3333% packet loss, time 2003ms\nrtt min/avg/max/mdev = 0.1/0.2/0.3/0.1 ms\n", "")
	if o.replies != 2 || o.rttMs != 0.2 {
		t.Errorf("partial loss: %+v", o)
	}
	// An empty output is zero replies and no problem text.
	if o := parse("verbs", nil, nil); o.replies != 0 || o.problem != "" {
		t.Errorf("empty: %+v", o)
	}
}
