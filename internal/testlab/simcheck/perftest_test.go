package simcheck_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/probe"
	"github.com/rdmaform/rdmaform/schema"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// perftestNumbers masks what is the run's own in perftest's output: the
// figures, queue pair numbers, keys and addresses, with the padding that
// follows them (its printf formats pad each figure to its width).
var perftestNumbers = regexp.MustCompile(`(0x[0-9a-f]+|[0-9]+(\.[0-9]+)?)[ \t]*`)

// TestPerftestEmulatorPrintsLikeReal: the emulated perftest prints what
// Debian's perftest 4.5+0.17 printed in the kernel lab (probe/testdata/
// real/perftest-*, PROVENANCE.md) for the same command line on the same
// kind of port (rxe on a veth, 192.0.2.2/24, the RoCE v2 GID at index 1),
// with the numbers masked, and exits the same; the server side waits
// for its client as the real one does (the emulator serves no client).
func TestPerftestEmulatorPrintsLikeReal(t *testing.T) {
	// The peer, 192.0.2.1, is on pvb's subnet: the simulated fabric
	// answers it.
	withPeer := veth("pvb", "192.0.2.2/24", "rxepb", "ACTIVE")
	cases := []struct {
		capture string
		exit    int
		argv    []string
	}{
		{"perftest-write_bw-client", 0, strings.Fields("ib_write_bw -d rxepb -i 1 -x 1 -s 65536 -q 1 -D 2 -p 18515 --report_gbits -F 192.0.2.1")},
		{"perftest-read_bw-client", 0, strings.Fields("ib_read_bw -d rxepb -i 1 -x 1 -s 65536 -q 1 -D 2 -p 18515 --report_gbits -F 192.0.2.1")},
		{"perftest-send_bw-client", 0, strings.Fields("ib_send_bw -d rxepb -i 1 -x 1 -s 65536 -q 1 -D 2 -p 18515 --report_gbits -F 192.0.2.1")},
		{"perftest-write_bw-tclass-client", 0, strings.Fields("ib_write_bw -d rxepb -i 1 -x 1 -s 65536 -q 1 -D 2 -p 18515 --report_gbits -F --tclass=106 192.0.2.1")},
		{"perftest-write_bw-bidir-client", 0, strings.Fields("ib_write_bw -d rxepb -i 1 -x 1 -s 65536 -q 1 -D 2 -p 18515 --report_gbits -F -b --report-both 192.0.2.1")},
		{"perftest-write_lat-client", 0, strings.Fields("ib_write_lat -d rxepb -i 1 -x 1 -s 2 -n 1000 -p 18515 -F 192.0.2.1")},
		{"perftest-write_bw-no-device", 1, strings.Fields("ib_write_bw -d rxe9 -i 1 -x 1 -s 65536 -q 1 -D 2 -p 18515 --report_gbits -F 192.0.2.1")},
	}
	for _, c := range cases {
		t.Run(c.capture, func(t *testing.T) {
			s, _ := simtest.New(t, "vm-soft", 0, withPeer)
			stdout, stderr, code := runSim(t, s, c.argv...)
			wantOut, wantErr := probeCapture(t, c.capture)
			mask := func(s string) string { return perftestNumbers.ReplaceAllString(s, "N ") }
			if mask(stdout) != mask(string(wantOut)) || stderr != string(wantErr) || code != c.exit {
				t.Errorf("%v: exit %d (real %d)\nstdout:\n%s\nreal:\n%s\nstderr:\n%s\nreal:\n%s", c.argv, code, c.exit, stdout, wantOut, stderr, wantErr)
			}
		})
	}
}

// TestPerftestEmulatorParsesLikeReal: rdmaform's bandwidth and latency
// probes make of the emulator's output what they make of the real
// capture of the same command line: the outcome, the transport perftest
// reports (link layer, GID index, GID and its type), and a figure (the
// figures themselves are the fabric's own: rxe under QEMU moves 0.02
// Gb/s, the simulated rxe what its 10 Gb/s rate allows).
func TestPerftestEmulatorParsesLikeReal(t *testing.T) {
	cases := []struct {
		capture, command string
		exit             int
		probe            string
	}{
		{"perftest-write_bw-client", "ib_write_bw -d rxepb -i 1 -x 1 -s 65536 -q 1 -D 2 -p 18515 --report_gbits -F 192.0.2.1", 0,
			"bandwidth: {to: 192.0.2.1, device: rxepb, duration: 2s}"},
		{"perftest-read_bw-client", "ib_read_bw -d rxepb -i 1 -x 1 -s 65536 -q 1 -D 2 -p 18515 --report_gbits -F 192.0.2.1", 0,
			"bandwidth: {to: 192.0.2.1, device: rxepb, test: read, duration: 2s}"},
		{"perftest-send_bw-client", "ib_send_bw -d rxepb -i 1 -x 1 -s 65536 -q 1 -D 2 -p 18515 --report_gbits -F 192.0.2.1", 0,
			"bandwidth: {to: 192.0.2.1, netdev: pvb, test: send, duration: 2s}"},
		{"perftest-write_lat-client", "ib_write_lat -d rxepb -i 1 -x 1 -s 2 -n 1000 -p 18515 -F 192.0.2.1", 0,
			"latency: {to: 192.0.2.1, device: rxepb}"},
		{"perftest-write_bw-no-server", "ib_write_bw -d rxepb -i 1 -x 1 -s 65536 -q 1 -D 2 -p 18515 --report_gbits -F 192.0.2.1", 1,
			"bandwidth: {to: 192.0.2.1, device: rxepb, duration: 2s}"},
	}
	for _, c := range cases {
		t.Run(c.capture, func(t *testing.T) {
			state := veth("pvb", "192.0.2.2/24", "rxepb", "ACTIVE")
			if strings.Contains(c.capture, "no-server") {
				// Nobody answers 192.0.2.1: no route to it.
				state = func(st *sim.State) {
					veth("pvb", "192.0.2.2/24", "rxepb", "ACTIVE")(st)
					st.Netdev("pvb").Addrs = []string{"192.0.2.2/32"}
				}
			}
			_, h := simtest.New(t, "vm-soft", 0, state)
			spec, rep := schema.Parse("probes.yaml", []byte("version: 1\nprobes:\n  - name: p\n    "+c.probe+"\n"))
			if len(rep) > 0 {
				t.Fatal(rep)
			}
			emu, _ := probe.Run(context.Background(), h, spec)
			realHost := *h
			realHost.Runner = replay{t, c.capture, c.command, c.exit}
			got, _ := probe.Run(context.Background(), &realHost, spec)
			if len(emu) != 1 || len(got) != 1 {
				t.Fatalf("results: emulated %v, real %v", emu, got)
			}
			e, r := emu[0], got[0]
			if e.Outcome != r.Outcome || e.Command != c.command {
				t.Errorf("emulated %s %q (%s)\n     real %s %q", e.Outcome, e.Reason, e.Command, r.Outcome, r.Reason)
			}
			if e.Perf == nil || r.Perf == nil {
				t.Fatalf("no perf: emulated %+v real %+v", e, r)
			}
			ep, rp := *e.Perf, *r.Perf
			if ep.LinkLayer != rp.LinkLayer || ep.GID != rp.GID || ep.GIDType != rp.GIDType || (ep.GIDIndex == nil) != (rp.GIDIndex == nil) ||
				ep.GIDIndex != nil && *ep.GIDIndex != *rp.GIDIndex || (ep.BandwidthGbps > 0) != (rp.BandwidthGbps > 0) || (ep.LatencyUs > 0) != (rp.LatencyUs > 0) {
				t.Errorf("emulated %+v\n     real %+v", ep, rp)
			}
		})
	}
}

// TestRealLoopedRunFailsTheTransportCheck: in the kernel lab RDMA CM
// looped a run to 192.0.2.1 back through rxepa, the device holding that
// address, though perftest was given -d rxepb and --source_ip 192.0.2.2
// (the capture's GIDs are both 192.0.2.1). Replayed, the probe fails it:
// the GID perftest used is not in rxepb's GID table. The figures alone
// would have passed.
func TestRealLoopedRunFailsTheTransportCheck(t *testing.T) {
	_, h := simtest.New(t, "vm-soft", 0, veth("pvb", "192.0.2.2/24", "rxepb", "ACTIVE"))
	spec, rep := schema.Parse("probes.yaml", []byte("version: 1\nprobes:\n  - name: p\n    bandwidth: {to: 192.0.2.1, device: rxepb, duration: 2s, rdma_cm: true, floor: 0.001Gb/s}\n"))
	if len(rep) > 0 {
		t.Fatal(rep)
	}
	realHost := *h
	realHost.Runner = replay{t, "perftest-write_bw-rdma_cm-client", "ib_write_bw -d rxepb -i 1 -s 65536 -q 1 -D 2 -p 18515 --report_gbits -F -R --source_ip=192.0.2.2 192.0.2.1", 0}
	got, _ := probe.Run(context.Background(), &realHost, spec)
	if len(got) != 1 {
		t.Fatalf("%v", got)
	}
	r := got[0]
	if r.Outcome != probe.OutcomeFailed || r.Reason != "0.016622 Gb/s, floor 0.001 Gb/s; gid_type is ::ffff:192.0.2.1 is not in the GID table of rxepb port 1, not RoCE v2" {
		t.Errorf("%s %q", r.Outcome, r.Reason)
	}
}
