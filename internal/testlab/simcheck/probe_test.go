package simcheck_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/probe"
	"github.com/rdmaform/rdmaform/schema"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// replay is a runner that answers the one command line of a real capture
// (probe/testdata/real, PROVENANCE.md there) with what the tool printed
// and its exit status.
type replay struct {
	t       *testing.T
	name    string
	command string
	exit    int
}

func (r replay) Run(_ context.Context, c host.Cmd) (host.Result, error) {
	r.t.Helper()
	if got := c.String(); got != r.command {
		r.t.Errorf("%s: the probe ran %q, the capture is of %q", r.name, got, r.command)
	}
	out, errb := probeCapture(r.t, r.name)
	res := host.Result{Stdout: out, Stderr: errb}
	if r.exit != 0 {
		return res, &host.ExitError{Cmd: c, Code: r.exit, Stdout: out, Stderr: errb}
	}
	return res, nil
}

// probeCapture reads a real capture of probe/testdata/real.
func probeCapture(t *testing.T, name string) (stdout, stderr []byte) {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "probe", "testdata", "real")
	out, err1 := os.ReadFile(filepath.Join(dir, name+".stdout"))
	errb, err2 := os.ReadFile(filepath.Join(dir, name+".stderr"))
	if err1 != nil || err2 != nil {
		t.Fatalf("%s: %v %v", name, err1, err2)
	}
	return out, errb
}

// veth adds a netdev with an address, and a Soft-RoCE device on it whose
// port is in state portState ("" for none), as the captures' hosts had.
func veth(name, addr, rxe, portState string) func(st *sim.State) {
	return func(st *sim.State) {
		st.DefaultRoute = ""
		st.Netdevs = append(st.Netdevs, &sim.Netdev{Name: name, Kind: "veth", MTU: 1500, Up: true, MAC: "02:00:00:00:02:02", Addrs: []string{addr}})
		if rxe != "" {
			st.Modules = append(st.Modules, "rdma_rxe")
			st.Devices = append(st.Devices, &sim.Device{Name: rxe, Driver: "rxe", NodeGUID: "0000:00ff:fe00:0202", Parent: name,
				Ports: []*sim.Port{{Num: 1, LinkLayer: "Ethernet", State: portState, PhysState: "LinkUp", Rate: "10 Gb/sec (1X FDR10)"}}})
		}
	}
}

// TestProbeEmulatorsParseLikeRealOutputs: rdmaform's probes make of the
// simulator's ping, rping and ibv_rc_pingpong what they make of the real
// tools' captured outputs in the same situation: the same command line,
// outcome and reason (the round trip is the fabric's own).
func TestProbeEmulatorsParseLikeRealOutputs(t *testing.T) {
	cases := []struct {
		capture, command string
		exit             int
		probe            string
		state            func(st *sim.State)
	}{
		{"ping-ok", "ping -n -c 3 -w 5 -I pvb -- 192.0.2.1", 0,
			"ping: {to: 192.0.2.1, interface: pvb}", veth("pvb", "192.0.2.2/24", "rxepb", "ACTIVE")},
		{"ping-peer-down", "ping -n -c 3 -w 5 -I pvb -- 192.0.2.1", 1,
			"ping: {to: 192.0.2.1, interface: pvb}", veth("pvb", "192.0.2.2/24", "rxepb", "DOWN")},
		{"ping-partly", "ping -n -c 3 -w 1 -I rfa0 -- 192.0.2.2", 1,
			"ping: {to: 192.0.2.2, interface: rfa0, timeout: 1s}", veth("rfa0", "192.0.2.1/24", "", "")},
		{"ping-no-route", "ping -n -c 1 -w 1 -- 198.51.100.7", 2,
			"ping: {to: 198.51.100.7, count: 1, timeout: 1s}", veth("rfa0", "192.0.2.1/24", "", "")},
		{"ping-no-interface", "ping -n -c 1 -w 2 -I nosuch0 -- 192.0.2.2", 2,
			"ping: {to: 192.0.2.2, interface: nosuch0, count: 1, timeout: 2s}", veth("rfa0", "192.0.2.1/24", "", "")},
		{"rping-ok", "rping -c -a 192.0.2.1 -p 7174 -C 3 -v", 0,
			"rdma_cm: {to: 192.0.2.1}", veth("pvb", "192.0.2.2/24", "rxepb", "ACTIVE")},
		{"rping-peer-down", "rping -c -a 192.0.2.1 -p 7174 -C 3 -v", 255,
			"rdma_cm: {to: 192.0.2.1}", veth("pvb", "192.0.2.2/24", "rxepb", "DOWN")},
		{"rping-no-device", "rping -c -a 192.0.2.2 -p 7174 -C 3 -v", 19,
			"rdma_cm: {to: 192.0.2.2}", veth("rfa0", "192.0.2.1/24", "", "")},
		{"ibv_rc_pingpong-ok", "ibv_rc_pingpong -d rxepb -i 1 -n 3 -p 18515 -g 1 192.0.2.1", 0,
			"verbs: {to: 192.0.2.1, device: rxepb}", veth("pvb", "192.0.2.2/24", "rxepb", "ACTIVE")},
		{"ibv_rc_pingpong-peer-down", "ibv_rc_pingpong -d rxepb -i 1 -n 3 -p 18515 -g 1 192.0.2.1", 1,
			"verbs: {to: 192.0.2.1, device: rxepb}", veth("pvb", "192.0.2.2/24", "rxepb", "DOWN")},
	}
	for _, c := range cases {
		t.Run(c.capture, func(t *testing.T) {
			_, h := simtest.New(t, "vm-soft", 0, c.state)
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
			if e.Outcome != r.Outcome || e.Passed != r.Passed || (e.RTTms > 0) != (r.RTTms > 0) || e.Reason != r.Reason {
				t.Errorf("emulated %+v\n     real %+v", e, r)
			}
			if e.Command != c.command && !(e.Outcome == probe.OutcomeError && e.Command == "") {
				t.Errorf("emulated command %q, real %q", e.Command, c.command)
			}
		})
	}
}

// TestProbeEmulatorsPrintLikeReal: the emulated tools print what the real
// ones printed in the same situation, byte for byte, or with every number
// masked where the numbers are the run's own (round trips, queue pair
// numbers, times), with the same exit status.
func TestProbeEmulatorsPrintLikeReal(t *testing.T) {
	num := regexp.MustCompile(`0x[0-9a-f]+|[0-9]+(\.[0-9]+)?`)
	up, down := veth("pvb", "192.0.2.2/24", "rxepb", "ACTIVE"), veth("pvb", "192.0.2.2/24", "rxepb", "DOWN")
	plain := veth("rfa0", "192.0.2.1/24", "", "")
	cases := []struct {
		capture string
		exit    int
		masked  bool
		state   func(st *sim.State)
		argv    []string
	}{
		{"ping-ok", 0, true, up, []string{"ping", "-n", "-c", "3", "-w", "5", "-I", "pvb", "--", "192.0.2.1"}},
		{"ping-partly", 1, true, plain, []string{"ping", "-n", "-c", "3", "-w", "1", "-I", "rfa0", "--", "192.0.2.2"}},
		{"ping-no-route", 2, false, plain, []string{"ping", "-n", "-c", "1", "-w", "1", "--", "198.51.100.7"}},
		{"ping-no-interface", 2, false, plain, []string{"ping", "-n", "-c", "1", "-w", "2", "-I", "nosuch0", "--", "192.0.2.2"}},
		{"rping-ok", 0, false, up, []string{"rping", "-c", "-a", "192.0.2.1", "-p", "7174", "-C", "3", "-v"}},
		{"rping-peer-down", 255, false, down, []string{"rping", "-c", "-a", "192.0.2.1", "-p", "7174", "-C", "3", "-v"}},
		{"rping-no-device", 19, false, plain, []string{"rping", "-c", "-a", "192.0.2.2", "-p", "7174", "-C", "3", "-v"}},
		{"ibv_rc_pingpong-ok", 0, true, up, []string{"ibv_rc_pingpong", "-d", "rxepb", "-i", "1", "-n", "3", "-p", "18515", "-g", "1", "192.0.2.1"}},
		{"ibv_rc_pingpong-peer-down", 1, true, down, []string{"ibv_rc_pingpong", "-d", "rxepb", "-i", "1", "-n", "3", "-p", "18515", "-g", "1", "192.0.2.1"}},
	}
	for _, c := range cases {
		t.Run(c.capture, func(t *testing.T) {
			s, _ := simtest.New(t, "vm-soft", 0, c.state)
			stdout, stderr, code := runSim(t, s, c.argv...)
			wantOut, wantErr := probeCapture(t, c.capture)
			mask := func(s string) string { return s }
			if c.masked {
				mask = func(s string) string { return num.ReplaceAllString(s, "N") }
			}
			if mask(stdout) != mask(string(wantOut)) || mask(stderr) != mask(string(wantErr)) || code != c.exit {
				t.Errorf("%v: exit %d (real %d)\nstdout:\n%s\nreal:\n%s\nstderr:\n%s\nreal:\n%s", c.argv, code, c.exit, stdout, wantOut, stderr, wantErr)
			}
		})
	}
}
