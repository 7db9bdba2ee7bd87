package cli_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// perfHost is cx5-roce with 192.168.10.1/24 on ens1f0np0 (mlx5_0, NUMA
// node 0, "100 Gb/sec (4X EDR)"): its RoCE v2 GID is index 3.
func perfHost(t *testing.T, mutate func(st *sim.State)) string {
	t.Helper()
	return simtest.Dir(t, "cx5-roce", func(st *sim.State) {
		roceAddrs(st)
		if mutate != nil {
			mutate(st)
		}
	})
}

type perfResult struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason"`
	Command string `json:"command"`
	Passed  bool   `json:"passed"`
	Perf    *struct {
		Tool          string  `json:"tool"`
		Device        string  `json:"device"`
		Port          int     `json:"port"`
		Netdev        string  `json:"netdev"`
		LinkLayer     string  `json:"link_layer"`
		GIDIndex      *int    `json:"gid_index"`
		GID           string  `json:"gid"`
		GIDType       string  `json:"gid_type"`
		TrafficClass  *int    `json:"traffic_class"`
		NUMANode      *int    `json:"numa_node"`
		CPUs          string  `json:"cpus"`
		PortRateGbps  float64 `json:"port_rate_gbps"`
		BandwidthGbps float64 `json:"bandwidth_gbps"`
		OutGbps       float64 `json:"out_gbps"`
		InGbps        float64 `json:"in_gbps"`
		SumGbps       float64 `json:"sum_gbps"`
		FloorGbps     float64 `json:"floor_gbps"`
		LatencyUs     float64 `json:"latency_us"`
		CeilingUs     float64 `json:"ceiling_us"`
		Checks        []struct {
			Name   string `json:"name"`
			Want   string `json:"want"`
			Got    string `json:"got"`
			Result string `json:"result"`
		} `json:"checks"`
	} `json:"perf"`
}

// perfProbe runs one probe (the YAML of its kind) on a simulated host and
// returns rdmaform probe's exit code and result, checked against the
// output schema.
func perfProbe(t *testing.T, dir, probe string) (int, perfResult) {
	t.Helper()
	code, out := perfProbeJSON(t, dir, probe)
	var doc struct{ Probes []perfResult }
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Probes) != 1 {
		t.Fatalf("%s: %v\n%s", probe, err, out)
	}
	return code, doc.Probes[0]
}

// perfProbeJSON runs one probe and returns rdmaform probe's exit code
// and its JSON, checked against the output schema.
func perfProbeJSON(t *testing.T, dir, probe string) (int, string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(f, []byte("version: 1\nprobes:\n  - name: p\n    "+probe+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "--sim", dir, "probe", "-f", f, "-o", "json")
	if errs != "" && code == 0 {
		t.Logf("%s: stderr %s", probe, errs)
	}
	loadSchemas(t).check(t, probe, "probe", out)
	return code, out
}

// TestPerfProbeGates: the floor and the ceiling at the limit and one past
// it, as a share of the port's rate and in Gb/s, on the simulated fabric
// (ib_write_bw moves 96.62 Gb/s of mlx5_0's 100 Gb/s, ib_write_lat 1.60
// us); exit 0 when it passes, 2 when it fails.
func TestPerfProbeGates(t *testing.T) {
	dir := perfHost(t, nil)
	cases := []struct {
		probe  string
		passed bool
		reason string
	}{
		{"bandwidth: {to: 192.168.10.2, device: mlx5_0, floor: 96.62%}", true, "96.62 Gb/s, floor 96.62 Gb/s (96.62% of 100 Gb/sec (4X EDR))"},
		{"bandwidth: {to: 192.168.10.2, device: mlx5_0, floor: 96.63%}", false, "96.62 Gb/s below the floor 96.63 Gb/s (96.63% of 100 Gb/sec (4X EDR))"},
		{"bandwidth: {to: 192.168.10.2, device: mlx5_0, floor: 96.62Gb/s}", true, "96.62 Gb/s, floor 96.62 Gb/s"},
		{"bandwidth: {to: 192.168.10.2, device: mlx5_0, floor: 96.63 Gb/s}", false, "96.62 Gb/s below the floor 96.63 Gb/s"},
		{"bandwidth: {to: 192.168.10.2, device: mlx5_0}", true, "96.62 Gb/s"},
		{"latency: {to: 192.168.10.2, device: mlx5_0, ceiling: 1600ns}", true, "1.6 us median, ceiling 1.6µs"},
		{"latency: {to: 192.168.10.2, device: mlx5_0, ceiling: 1599ns}", false, "1.6 us median above the ceiling 1.599µs"},
	}
	for _, c := range cases {
		code, r := perfProbe(t, dir, c.probe)
		want := map[bool]int{true: 0, false: 2}[c.passed]
		if code != want || r.Passed != c.passed || r.Reason != c.reason {
			t.Errorf("%s: exit %d passed %v %q; want exit %d, %q", c.probe, code, r.Passed, r.Reason, want, c.reason)
		}
	}
}

// TestPerfProbeReport: what the result says was measured and against
// what: the device's NUMA node and its CPUs (taskset), the GID perftest
// used and its type from the GID table, the rate; a bidirectional run per
// direction, the gated figure the lower one, the sum perftest's own.
func TestPerfProbeReport(t *testing.T) {
	dir := perfHost(t, func(st *sim.State) { st.Device("mlx5_1").NUMANode = 1 })
	code, r := perfProbe(t, dir, "bandwidth: {to: 192.168.10.2, netdev: ens1f0np0, bidirectional: true, duration: 3s, qps: 4, size: 1048576}")
	p := r.Perf
	if code != 0 || p == nil {
		t.Fatalf("exit %d: %+v", code, r)
	}
	if r.Command != "taskset -c 0-7 ib_write_bw -d mlx5_0 -i 1 -x 3 -s 1048576 -q 4 -D 3 -p 18515 --report_gbits -F -b --report-both 192.168.10.2" {
		t.Errorf("command %q", r.Command)
	}
	if p.Device != "mlx5_0" || p.Port != 1 || p.Netdev != "ens1f0np0" || p.LinkLayer != "Ethernet" || p.GIDIndex == nil || *p.GIDIndex != 3 ||
		p.GID != "::ffff:192.168.10.1" || p.GIDType != "RoCE v2" || p.NUMANode == nil || *p.NUMANode != 0 || p.CPUs != "0-7" || p.PortRateGbps != 100 {
		t.Errorf("perf %+v", *p)
	}
	// perftest prints each figure to two decimals: the sum may be a
	// hundredth off the two it adds.
	if p.OutGbps <= 0 || p.InGbps <= 0 || math.Abs(p.SumGbps-(p.OutGbps+p.InGbps)) > 0.011 || p.BandwidthGbps != min(p.OutGbps, p.InGbps) {
		t.Errorf("directions: out %g in %g sum %g gated %g", p.OutGbps, p.InGbps, p.SumGbps, p.BandwidthGbps)
	}
	// The second port's device is on node 1: CPUs 8-15; cpus: none runs
	// it unpinned; a list as given.
	for probe, want := range map[string]string{
		"bandwidth: {to: 192.168.11.2, device: mlx5_1}":                                  "taskset -c 8-15 ib_write_bw -d mlx5_1 -i 1 -x 3 ",
		"bandwidth: {to: 192.168.11.2, device: mlx5_1, cpus: none}":                      "ib_write_bw -d mlx5_1 ",
		"bandwidth: {to: 192.168.11.2, device: mlx5_1, cpus: \"3\"}":                     "taskset -c 3 ib_write_bw ",
		"latency: {to: 192.168.11.2, device: mlx5_1, rdma_cm: true, traffic_class: 106}": "taskset -c 8-15 ib_write_lat -d mlx5_1 -i 1 -s 2 -n 1000 -p 18515 -F -R --source_ip=192.168.11.1 -T 106 192.168.11.2",
	} {
		if code, r := perfProbe(t, dir, probe); code != 0 || !strings.HasPrefix(r.Command, want) {
			t.Errorf("%s: exit %d, command %q, want %q...: %s", probe, code, r.Command, want, r.Reason)
		}
	}
}

// TestPerfProbeTransport: the run fails when perftest's report or the GID
// table shows another transport than the probe expects: another link
// layer, a RoCE v1 GID (index 2 holds the address's v1 GID); a traffic
// class perftest reports (the TOS of an RDMA CM run) is checked, one it
// cannot report is said to be unverified.
func TestPerfProbeTransport(t *testing.T) {
	dir := perfHost(t, nil)
	cases := []struct {
		probe, outcome, reason string
	}{
		{"bandwidth: {to: 192.168.10.2, device: mlx5_0, link_layer: InfiniBand}", "failed", "96.62 Gb/s; link_layer is Ethernet, not InfiniBand"},
		{"bandwidth: {to: 192.168.10.2, device: mlx5_0, gid_index: 2}", "failed", "96.62 Gb/s; gid_type is IB/RoCE v1, not RoCE v2"},
		{"bandwidth: {to: 192.168.10.2, device: mlx5_0, rdma_cm: true, traffic_class: 106}", "passed", "96.62 Gb/s; priority_counters the traffic class's priority unverified: ens1f0np0 trusts PCP (no DSCP entry in dcb app): its priority is not the traffic class's"},
		{"bandwidth: {to: 192.168.10.2, device: mlx5_0, traffic_class: 106}", "passed", "96.62 Gb/s; traffic_class 106 unverified: not in perftest's report (--tclass without RDMA CM); priority_counters the traffic class's priority unverified: ens1f0np0 trusts PCP (no DSCP entry in dcb app): its priority is not the traffic class's"},
	}
	for _, c := range cases {
		_, r := perfProbe(t, dir, c.probe)
		if r.Outcome != c.outcome || r.Reason != c.reason {
			t.Errorf("%s: %s %q; want %s %q", c.probe, r.Outcome, r.Reason, c.outcome, c.reason)
		}
	}
	_, r := perfProbe(t, dir, "bandwidth: {to: 192.168.10.2, device: mlx5_0, rdma_cm: true, traffic_class: 106}")
	var tc string
	for _, c := range r.Perf.Checks {
		if c.Name == "traffic_class" {
			tc = c.Got + " " + c.Result
		}
	}
	if tc != "106 ok" || r.Perf.TrafficClass == nil || *r.Perf.TrafficClass != 106 {
		t.Errorf("RDMA CM's TOS: check %q, traffic_class %v", tc, r.Perf.TrafficClass)
	}
}

// TestPerfProbeCannotRun: a missing perftest or taskset, a device or
// netdev the host lacks, a port without a RoCE v2 GID for the peer's
// subnet: outcome error, exit 1, nothing measured; a peer that does not
// answer: failed, exit 2, naming it.
func TestPerfProbeCannotRun(t *testing.T) {
	dir := perfHost(t, func(st *sim.State) { st.Netdev("ens1f1np1").Addrs = nil })
	noTools := perfHost(t, func(st *sim.State) {
		var keep []string
		for _, x := range st.Tools {
			if x != "ib_write_bw" && x != "taskset" {
				keep = append(keep, x)
			}
		}
		st.Tools = keep
	})
	noTaskset := perfHost(t, func(st *sim.State) {
		var keep []string
		for _, x := range st.Tools {
			if x != "taskset" {
				keep = append(keep, x)
			}
		}
		st.Tools = keep
	})
	cases := []struct {
		dir, probe string
		code       int
		reason     string
	}{
		{noTools, "bandwidth: {to: 192.168.10.2, device: mlx5_0, cpus: none}", 1, "ib_write_bw is not installed (Debian/Ubuntu: apt-get install perftest; RHEL: dnf install perftest)"},
		{noTaskset, "bandwidth: {to: 192.168.10.2, device: mlx5_0}", 1, "taskset is not installed (Debian/Ubuntu: apt-get install util-linux; RHEL: dnf install util-linux-core)"},
		{dir, "bandwidth: {to: 192.168.10.2, device: mlx5_7}", 1, "no RDMA device mlx5_7 on this host (devices: mlx5_0, mlx5_1)"},
		{dir, "bandwidth: {to: 192.168.10.2, netdev: eno1}", 1, "no RDMA port carries netdev eno1 (netdevs on RDMA ports: ens1f0np0, ens1f1np1)"},
		{dir, "latency: {to: 192.168.11.2, device: mlx5_1}", 1, "mlx5_1 port 1 has no RoCE v2 GID with an IPv4 address; give gid_index"},
		{dir, "bandwidth: {to: 192.168.11.2, device: mlx5_0, gid_index: 3}", 2, "192.168.11.2: Couldn't connect to 192.168.11.2:18515"},
	}
	for _, c := range cases {
		code, r := perfProbe(t, c.dir, c.probe)
		if code != c.code || r.Reason != c.reason {
			t.Errorf("%s: exit %d %q; want %d %q", c.probe, code, r.Reason, c.code, c.reason)
		}
	}
}

// TestPerfProbeSlowFault: sim fault --slow halves what the runs measure
// (to the peer it names, or to all), and the floor catches it; --times
// limits it; the fault's bounds at the limit and one past.
func TestPerfProbeSlowFault(t *testing.T) {
	dir := perfHost(t, nil)
	probe := "bandwidth: {to: 192.168.10.2, device: mlx5_0, floor: 90%}"
	if code, out, errs := runCLI(t, "sim", "fault", dir, "--slow", "0.5", "--match", "192.168.10.2", "--times", "1"); code != 0 {
		t.Fatalf("sim fault: %d %s%s", code, out, errs)
	}
	if code, r := perfProbe(t, dir, probe); code != 2 || r.Perf.BandwidthGbps != 48.31 || !strings.Contains(r.Reason, "below the floor 90 Gb/s") {
		t.Errorf("slowed: exit %d %g %q", code, r.Perf.BandwidthGbps, r.Reason)
	}
	if code, r := perfProbe(t, dir, probe); code != 0 || r.Perf.BandwidthGbps != 96.62 {
		t.Errorf("after --times 1: exit %d %g %q", code, r.Perf.BandwidthGbps, r.Reason)
	}
	// Matching another peer leaves this one alone; a latency probe to the
	// slowed peer takes twice as long.
	runCLI(t, "sim", "fault", dir, "--slow", "0.5", "--match", "192.168.10.3")
	if code, r := perfProbe(t, dir, probe); code != 0 {
		t.Errorf("another peer slowed: exit %d %q", code, r.Reason)
	}
	runCLI(t, "sim", "fault", dir, "--slow", "0.5")
	if _, r := perfProbe(t, dir, "latency: {to: 192.168.10.2, device: mlx5_0}"); r.Perf.LatencyUs != 3.2 {
		t.Errorf("slowed latency %g", r.Perf.LatencyUs)
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"--slow", "0.999"}, 0},
		{[]string{"--slow", "1"}, 1},
		{[]string{"--slow", "0.001"}, 0},
		{[]string{"--slow", "-0.1"}, 1},
		{[]string{"--slow", "0.5", "--match", "node2"}, 1},
		{[]string{"--slow", "0.5", "--exit", "3"}, 1},
	} {
		if code, out, errs := runCLI(t, append([]string{"sim", "fault", dir}, c.args...)...); code != c.code {
			t.Errorf("sim fault %v: exit %d, want %d\n%s%s", c.args, code, c.code, out, errs)
		}
	}
}

// TestPerfProbeServe: probe serve starts, for a probe whose address is
// this host's, the perftest server with this host's device, GID and
// NUMA CPUs and the probe's settings; a host the probe does not target
// serves nothing.
func TestPerfProbeServe(t *testing.T) {
	dir := perfHost(t, nil)
	f := filepath.Join(t.TempDir(), "p.yaml")
	spec := `version: 1
probes:
  - name: bw
    bandwidth: {to: 192.168.10.1, device: mlx5_7, bidirectional: true, rdma_cm: true, traffic_class: 106, tcp_port: 20000}
  - name: lat
    latency: {to: 192.168.11.1, netdev: ens9, tcp_port: 20001}
  - name: elsewhere
    bandwidth: {to: 192.168.10.9, device: mlx5_0}
`
	if err := os.WriteFile(f, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "--sim", dir, "probe", "serve", "-f", f, "--for", "1s")
	for _, want := range []string{
		"serving bw for 1s: taskset -c 0-7 ib_write_bw -d mlx5_0 -i 1 -s 65536 -q 1 -D 5 -p 20000 --report_gbits -F -b --report-both -R -T 106\n",
		"serving lat for 1s: taskset -c 0-7 ib_write_lat -d mlx5_1 -i 1 -x 3 -s 2 -n 1000 -p 20001 -F\n",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("probe serve does not say %q:\n%s", want, errs)
		}
	}
	if code != 0 || strings.Contains(errs, "elsewhere") {
		t.Errorf("exit %d\n%s%s", code, out, errs)
	}
}

// TestPerfProbePriorityCounters: with a traffic class, the port's
// per-priority counters (the simulator's mlx5 ethtool -S) must move on
// the priority the port's DSCP map gives (DSCP 26 -> 3 here) or the probe
// names, and not on the others; a port trusting PCP cannot tell, and a
// netdev without such counters has no check at all.
func TestPerfProbePriorityCounters(t *testing.T) {
	dir := perfHost(t, nil)
	qos := filepath.Join(t.TempDir(), "qos.yaml")
	if err := os.WriteFile(qos, []byte("version: 1\ndevices:\n  - name: mlx5_0\n    ports:\n      - port: 1\n        qos: {trust: dscp, pfc: [3], dscp_map: {26: 3}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI(t, "--sim", dir, "apply", "--yes", "-f", qos); code != 0 {
		t.Fatalf("apply: %d\n%s%s", code, out, errs)
	}
	check := func(probe string) (string, string, string) {
		t.Helper()
		_, r := perfProbe(t, dir, probe)
		for _, c := range r.Perf.Checks {
			if c.Name == "priority_counters" {
				return c.Result, c.Want, c.Got
			}
		}
		return "", "", ""
	}
	res, want, got := check("bandwidth: {to: 192.168.10.2, device: mlx5_0, traffic_class: 106}")
	if res != "ok" || want != "priority 3 (DSCP 26 in ens1f0np0's DSCP map)" || !strings.HasPrefix(got, "tx_prio3_bytes +60389105058, other priorities +2048") {
		t.Errorf("DSCP 26: %s %q %q", res, want, got)
	}
	res, _, got = check("bandwidth: {to: 192.168.10.2, device: mlx5_0, traffic_class: 106, priority: 5}")
	if res != "failed" || !strings.Contains(got, "tx_prio5_bytes +0") {
		t.Errorf("priority 5: %s %q", res, got)
	}
	// A read moves the data in: rx on priority 3.
	res, _, got = check("bandwidth: {to: 192.168.10.2, device: mlx5_0, test: read, traffic_class: 106}")
	if res != "ok" || !strings.HasPrefix(got, "rx_prio3_bytes +") {
		t.Errorf("read: %s %q", res, got)
	}
	// mlx5_1's port trusts PCP: the check cannot tell.
	res, _, got = check("bandwidth: {to: 192.168.11.2, device: mlx5_1, traffic_class: 106}")
	if res != "unverified" || !strings.Contains(got, "trusts PCP") {
		t.Errorf("PCP: %s %q", res, got)
	}
	// No traffic class, no check.
	if res, _, _ = check("bandwidth: {to: 192.168.10.2, device: mlx5_0}"); res != "" {
		t.Errorf("no traffic class: %q", res)
	}
}

// TestPerfProbeAudit: audit --probes reports a bandwidth probe as one
// check whose message is its figures (no round trip: it has none), and
// its Prometheus output has the measured figures beside their floors
// and ceilings.
func TestPerfProbeAudit(t *testing.T) {
	dir := perfHost(t, nil)
	f := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(f, []byte("version: 1\nprobes:\n  - name: bw\n    bandwidth: {to: 192.168.10.2, device: mlx5_0, floor: 90%}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "--sim", dir, "audit", "-f", f, "--probes", "-o", "json")
	if !strings.Contains(out, `"message": "96.62 Gb/s, floor 90 Gb/s (90% of 100 Gb/sec (4X EDR))"`) || strings.Contains(out, "0.000 ms") {
		t.Errorf("exit %d\n%s%s", code, out, errs)
	}

	// Prometheus: the figures, floors and ceilings in base units, a
	// failed probe's figure too; no round trip for a probe that has none.
	if err := os.WriteFile(f, []byte("version: 1\nprobes:\n"+
		"  - name: bw\n    bandwidth: {to: 192.168.10.2, device: mlx5_0, floor: 90%}\n"+
		"  - name: slow\n    bandwidth: {to: 192.168.10.2, device: mlx5_0, floor: 97%, tcp_port: 18516}\n"+
		"  - name: lat\n    latency: {to: 192.168.10.2, device: mlx5_0, ceiling: 1599ns, tcp_port: 18517}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runCLI(t, "--sim", dir, "audit", "-f", f, "--probes", "-o", "prometheus")
	for _, want := range []string{
		`rdmaform_probe_success{name="bw",kind="bandwidth",target="192.168.10.2"} 1`,
		`rdmaform_probe_success{name="slow",kind="bandwidth",target="192.168.10.2"} 0`,
		`rdmaform_probe_success{name="lat",kind="latency",target="192.168.10.2"} 0`,
		"# TYPE rdmaform_probe_bandwidth_bits_per_second gauge\n",
		`rdmaform_probe_bandwidth_bits_per_second{name="bw",kind="bandwidth",target="192.168.10.2"} 9.662e+10`,
		`rdmaform_probe_bandwidth_bits_per_second{name="slow",kind="bandwidth",target="192.168.10.2"} 9.662e+10`,
		`rdmaform_probe_bandwidth_floor_bits_per_second{name="bw",kind="bandwidth",target="192.168.10.2"} 9e+10`,
		`rdmaform_probe_bandwidth_floor_bits_per_second{name="slow",kind="bandwidth",target="192.168.10.2"} 9.7e+10`,
		`rdmaform_probe_latency_seconds{name="lat",kind="latency",target="192.168.10.2"} 1.6e-06`,
		`rdmaform_probe_latency_ceiling_seconds{name="lat",kind="latency",target="192.168.10.2"} 1.599e-06`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("audit --probes prometheus lacks %q: exit %d\n%s%s", want, code, out, errs)
		}
	}
	if strings.Contains(out, "rdmaform_probe_rtt_seconds{") {
		t.Errorf("a bandwidth or latency probe has a round trip:\n%s", out)
	}
}

// TestPerfProbeGPUMemory: a bandwidth probe with use_cuda on the
// simulated 8-GPU node (gpu-switch: each GPU beside its NIC below one
// PCIe switch, GPUs 0-3 on NUMA node 0, 4-7 on node 1) sends from the
// GPU perftest reports it picked: the result names the CUDA device, its
// PCIe address as perftest printed it, the host's GPU of that address,
// its NUMA node and its relation to the RDMA device, and the check
// gpu_memory passes on perftest's own lines (the device picked, the
// buffer allocated). A device the host does not have, or a host without
// GPUs, cannot run (exit 1), in the CUDA driver's words. Simulator only:
// no GPU here.
func TestPerfProbeGPUMemory(t *testing.T) {
	dir := simtest.Dir(t, "gpu-switch", func(st *sim.State) {
		st.Netdev("ibp24s0").Addrs = []string{"10.31.0.1/16"}
	})
	type gpu struct {
		CUDADevice  int    `json:"cuda_device"`
		PCIe        string `json:"pcie"`
		Name        string `json:"name"`
		BufferBytes int64  `json:"buffer_bytes"`
		PCI         string `json:"pci"`
		NUMANode    *int   `json:"numa_node"`
		Relation    string `json:"relation"`
	}
	probeGPU := func(probe string) (int, perfResult, *gpu) {
		t.Helper()
		code, out := perfProbeJSON(t, dir, probe)
		var doc struct {
			Probes []struct {
				Perf *struct {
					GPU *gpu `json:"gpu"`
				} `json:"perf"`
			}
		}
		var plain struct{ Probes []perfResult }
		if err := errors.Join(json.Unmarshal([]byte(out), &doc), json.Unmarshal([]byte(out), &plain)); err != nil || len(plain.Probes) != 1 {
			t.Fatalf("%s: %v\n%s", probe, err, out)
		}
		var g *gpu
		if p := doc.Probes[0].Perf; p != nil {
			g = p.GPU
		}
		return code, plain.Probes[0], g
	}
	for _, c := range []struct {
		cuda                int
		pcie, pci, relation string
		numa                int
		buffer              int64
		size, qps           int
	}{
		// The GPU beside mlx5_0, below the same switch.
		{0, "19:00", "0000:19:00.0", "PIX", 0, 131072, 65536, 1},
		// GPU 4, across the sockets; 4 queue pairs of 1 MiB messages.
		{4, "9B:00", "0000:9b:00.0", "SYS", 1, 8388608, 1048576, 4},
	} {
		probe := fmt.Sprintf("bandwidth: {to: 10.31.0.2, netdev: ibp24s0, use_cuda: %d, size: %d, qps: %d, floor: 90%%}", c.cuda, c.size, c.qps)
		code, r, g := probeGPU(probe)
		if code != 0 || !r.Passed || !strings.Contains(r.Command, fmt.Sprintf(" --use_cuda=%d ", c.cuda)) {
			t.Fatalf("%s: exit %d passed %v, command %q: %s", probe, code, r.Passed, r.Command, r.Reason)
		}
		if g == nil || g.CUDADevice != c.cuda || g.PCIe != c.pcie || g.PCI != c.pci || g.NUMANode == nil || *g.NUMANode != c.numa ||
			g.Relation != c.relation || g.BufferBytes != c.buffer || g.Name == "" {
			t.Errorf("%s: gpu %+v; want CUDA device %d at %s (%s), node %d, %s to mlx5_0, a buffer of %d bytes", probe, g, c.cuda, c.pcie, c.pci, c.numa, c.relation, c.buffer)
		}
		var gm string
		for _, ch := range r.Perf.Checks {
			if ch.Name == "gpu_memory" {
				gm = ch.Result + ": " + ch.Got
			}
		}
		if want := fmt.Sprintf("ok: a buffer on CUDA device %d", c.cuda); gm != want {
			t.Errorf("%s: the gpu_memory check %q, want %q", probe, gm, want)
		}
		if want := fmt.Sprintf(" from the memory of CUDA device %d (%s, %s to mlx5_0)", c.cuda, c.pci, c.relation); !strings.Contains(r.Reason, want) {
			t.Errorf("%s: reason %q lacks %q", probe, r.Reason, want)
		}
	}

	// 8 GPUs: CUDA device 7 is the last, 8 is none.
	if code, r, _ := probeGPU("bandwidth: {to: 10.31.0.2, netdev: ibp24s0, use_cuda: 7}"); code != 0 || !r.Passed {
		t.Errorf("use_cuda 7: exit %d: %s", code, r.Reason)
	}
	if code, r, _ := probeGPU("bandwidth: {to: 10.31.0.2, netdev: ibp24s0, use_cuda: 8}"); code != 1 || r.Reason != "ib_write_bw: No such device ID (8) exists in system" {
		t.Errorf("use_cuda 8: exit %d %q; want 1, perftest's words", code, r.Reason)
	}
	noGPU := perfHost(t, nil)
	if code, r := perfProbe(t, noGPU, "bandwidth: {to: 192.168.10.2, device: mlx5_0, use_cuda: 0}"); code != 1 || r.Reason != "ib_write_bw: cuInit(0) returned 100" {
		t.Errorf("no GPU: exit %d %q; want 1, the CUDA driver's error", code, r.Reason)
	}
}
