package ansible_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fabricHostsEnv sets how many simulated hosts TestFabricTestRole tests
// (make fleet-test: 200; make test: 8).
const fabricHostsEnv = "RDMAFORM_FABRIC_HOSTS"

// fabricSlow is the planted slow host's factor: its pairs move half the
// bandwidth at twice the latency.
const fabricSlow = "0.5"

// fabricSlot is a run's time slot for n hosts: it holds a round's n/2
// clients and n/2 servers starting at once on this machine (two CPUs,
// shared). Round 0 starts when every host is ready (the barrier), so
// no delay is guessed: at 200 hosts, with the machine's load average
// near 80, Ansible's start of the pairs task on every host took 13
// minutes, and a start delay of 120 s had left 10,204 of the 19,900
// pairs too late to measure.
func fabricSlot(n int) int {
	return 4 + n/50
}

// newFabricFleet is n simulated hosts (cx6-vpi-ib), each with its probe
// address on ib0 (applied), in an inventory of local hosts; the host
// slow, if any, moves half the bandwidth: it has the simulator's slow
// fault, and every other host a slow fault on its runs to it (simulated
// hosts do not see each other).
func newFabricFleet(t *testing.T, n int, slow string) *fleet {
	t.Helper()
	f := newFleet(t, n, 0, nil)
	for _, h := range f.names {
		spec := filepath.Join(f.l.dir, "addr-"+h+".yaml")
		if err := os.WriteFile(spec, []byte(fmt.Sprintf("version: 1\ninterfaces:\n  - name: ib0\n    state: up\n    addresses: [\"%s/16\"]\n", f.addr[h])), 0o644); err != nil {
			t.Fatal(err)
		}
		f.run(t, "--sim", f.dirs[h], "apply", "--yes", "-q", "-f", spec)
		if slow == "" {
			continue
		}
		args := []string{"sim", "fault", f.dirs[h], "--slow", fabricSlow}
		if h != slow {
			args = append(args, "--match", f.addr[slow])
		}
		f.run(t, args...)
	}
	return f
}

// run runs the fleet's rdmaform, the one the play runs.
func (f *fleet) run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(f.cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("rdmaform %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

type fabricReport struct {
	Status   string `json:"status"`
	ExitCode int    `json:"exit_code"`
	Pairs    int    `json:"pairs"`
	BadHosts []struct {
		Host   string `json:"host"`
		Reason string `json:"reason"`
	} `json:"bad_hosts"`
	BadPairs   []json.RawMessage `json:"bad_pairs"`
	Unmeasured []struct {
		Host   string `json:"host"`
		Reason string `json:"reason"`
	} `json:"unmeasured"`
	Suspects []string `json:"suspects"`
	Untested []string `json:"untested"`
	Results  []string `json:"results"`
	Retest   bool     `json:"retest"`
}

// TestFabricTestRole runs examples/ansible/fabric-test.yml (the role
// rdmaform.rdma.fabric_test) under ansible-core on simulated hosts (8;
// RDMAFORM_FABRIC_HOSTS=200 in make fleet-test), one of which is slow
// (the simulator's slow fault), twice.
//
// The whole schedule: every host runs its pairs of the n-1 rounds
// through rdmaform probe serve and rdmaform probe (the perftest
// bandwidth and latency probes), from when the last host is ready (the
// barrier); the results file has every pair of the schedule measured,
// the report is CRITICAL and names the slow host and no other, and the
// play fails saying so.
//
// The first round alone (rdmaform_fabric_test_max_rounds 1): the slow
// host and its peer are suspects, and the halving retest round pairs
// each with a cleared host, which names the slow host and clears its
// peer; the next retest finds nothing left.
//
// The test logs each run's wall time against its passes and rounds x
// slot.
func TestFabricTestRole(t *testing.T) {
	n := 8
	if v := os.Getenv(fabricHostsEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 4 {
			t.Fatalf("%s=%q: want a number of hosts, 4 or more", fabricHostsEnv, v)
		}
	}
	slow := fmt.Sprintf("node%03d", n*2/3)
	f := newFabricFleet(t, n, slow)
	// The pairs run as an async task: its job files under the lab's
	// directory, where the async_status after it looks.
	f.l.env = append(f.l.env, "ANSIBLE_ASYNC_DIR="+filepath.Join(f.l.dir, "async"))
	slot := fabricSlot(n)
	// Every simulated host is this machine: the leader's barrier
	// listens on loopback.
	port := freePort(t)
	rounds := n - 1
	if n%2 == 1 {
		rounds = n
	}
	// play runs the role; mainRounds is how many of the schedule's rounds it
	// runs (each retest pass is one round more).
	play := func(name string, mainRounds int, extra map[string]any) (dir, out string, r fabricReport) {
		t.Helper()
		dir = filepath.Join(f.l.dir, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		vars := map[string]any{"rdma_become": false, "rdma_command": f.cli, "rdma_netdev": "ib0", "rdma_duration": "1s",
			"rdma_slot": slot, "rdma_lead": 1, "rdma_fabric_dir": dir, "rdma_barrier_address": "127.0.0.1", "rdma_barrier_port": port,
			// At 200 hosts and a load average of 35 to 90, 600 s (the
			// default) saw 101 of the 200 ready: Ansible's start of the
			// task on every host takes longer than that here.
			"rdma_ready_timeout": 3600}
		for k, v := range extra {
			vars[k] = v
		}
		load := func() string {
			b, _ := os.ReadFile("/proc/loadavg")
			return strings.Join(strings.Fields(string(b))[:3], " ")
		}
		before := load()
		begin := time.Now()
		out, code := f.playbook(t, "../examples/ansible/fabric-test.yml", vars, "-f", strconv.Itoa(min(n, 50)))
		wall := time.Since(begin)
		if code == 0 {
			t.Fatalf("%s: the play passed with %s slow; want it failed on CRITICAL\n%s", name, slow, out)
		}
		b, err := os.ReadFile(filepath.Join(dir, "report.json"))
		if err != nil {
			t.Fatalf("%s: no report: %v\n%s", name, err, out)
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: report.json: %v\n%s", name, err, b)
		}
		if r.Status != "CRITICAL" || len(r.BadHosts) != 1 || r.BadHosts[0].Host != slow || len(r.Unmeasured) > 0 {
			t.Errorf("%s: report: %s, bad hosts %+v, not measured %+v; want CRITICAL naming %s alone, every host measured\n%s\n%s",
				name, r.Status, r.BadHosts, r.Unmeasured, slow, b, out)
		}
		if w := "rdmaform fabric test: CRITICAL: " + slow + " named bad"; !strings.Contains(out, w) {
			t.Errorf("%s: the play's output does not say %q\n%s", name, w, out)
		}
		run := mainRounds + len(r.Results) - 1
		// Each pass's barrier: how long Ansible took to start every host.
		for _, line := range strings.Split(out, "\n") {
			if i := strings.Index(line, "rdmaform fabric test: "); i >= 0 && strings.Contains(line, "round 0 began") {
				t.Logf("%s: %s", name, strings.TrimSuffix(strings.TrimSpace(line[i:]), "\""))
			}
		}
		t.Logf("%d hosts, %s: %d passes, %d rounds of %d s: wall time %s (rounds x slot = %d s); load average %s before, %s after",
			n, name, len(r.Results), run, slot, wall.Round(time.Second), run*slot, before, load())
		return dir, out, r
	}

	dir, out, r := play("schedule", rounds, nil)
	if want := n * (n - 1) / 2; r.Pairs != want || len(r.Untested) > 0 {
		t.Errorf("schedule: %d pairs measured, untested %v; want all %d pairs of the schedule", r.Pairs, r.Untested, want)
	}
	if len(r.BadPairs) != n-1 || len(r.Results) != 1 {
		t.Errorf("schedule: %d bad pairs, results files %v; want the %d pairs with %s, named without a retest", len(r.BadPairs), r.Results, n-1, slow)
	}
	// The schedule's results: every pair, with its figures.
	res := readFabricResults(t, filepath.Join(dir, "results-000.json"))
	if len(res) != n*(n-1)/2 {
		t.Errorf("results-000.json: %d results, want %d", len(res), n*(n-1)/2)
	}
	for _, x := range res {
		if x.Err != "" || x.BW <= 0 || x.Lat <= 0 {
			t.Errorf("results-000.json: %v: error %q, %g Gb/s, %g us\n%s", x.Hosts, x.Err, x.BW, x.Lat, out)
			break
		}
	}

	// The first round, then the retests.
	dir, out, r = play("first-round", 1, map[string]any{"rdma_max_rounds": 1})
	if len(r.Results) != 2 || !strings.HasSuffix(r.Results[1], "retest-001.json") {
		t.Errorf("first round: results files %v; want results-000.json and retest-001.json\n%s", r.Results, out)
	}
	first := readFabricResults(t, filepath.Join(dir, "results-000.json"))
	var peer string
	for _, x := range first {
		if x.Hosts[0] == slow || x.Hosts[1] == slow {
			peer = x.Hosts[0] + x.Hosts[1]
			peer = strings.Replace(peer, slow, "", 1)
		}
	}
	if len(first) != n/2 || peer == "" {
		t.Fatalf("first round: results-000.json has %d pairs, %s's peer %q; want the %d pairs of round 0\n%s", len(first), slow, peer, n/2, out)
	}
	retest := readFabricResults(t, filepath.Join(dir, "retest-001.json"))
	var hosts []string
	for _, x := range retest {
		hosts = append(hosts, x.Hosts[:]...)
		if x.Err != "" {
			t.Errorf("retest-001.json: %v: %s", x.Hosts, x.Err)
		}
	}
	if len(retest) != 2 || !slices.Contains(hosts, slow) || !slices.Contains(hosts, peer) {
		t.Errorf("retest-001.json: %+v; want two pairs, %s and %s each with a host of a good pair", retest, slow, peer)
	}
	if r.Pairs != n/2+2 || len(r.Suspects) != 0 || len(r.Untested) != 0 || r.Retest {
		t.Errorf("first round: %d pairs, suspects %v, untested %v, retest %v; want %d pairs, no suspect left, no retest due", r.Pairs, r.Suspects, r.Untested, r.Retest, n/2+2)
	}
}

type fabricResult struct {
	Hosts [2]string `json:"hosts"`
	BW    float64   `json:"bandwidth_gbps"`
	Lat   float64   `json:"latency_us"`
	Err   string    `json:"error"`
}

// readFabricResults reads a results file the role wrote.
func readFabricResults(t *testing.T, path string) []fabricResult {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Results []fabricResult `json:"results"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc.Results
}

// TestFabricTestLimits gives the variables of the role
// rdmaform.rdma.fabric_test that have limits their limits and one past
// them, under ansible-core on localhost: at the limits (all the low ones,
// then all the high ones) the role's first task names only the probe
// path the play leaves out on purpose (so that nothing runs); one past
// them it names every bad value.
func TestFabricTestLimits(t *testing.T) {
	l := newLab(t)
	l.installCollection(t)
	run := func(vars map[string]any) string {
		t.Helper()
		vars["rdmaform_probe_address"] = "10.0.0.1"
		vars["rdmaform_fabric_test_bandwidth"] = map[string]any{"duration": "1s"}
		b, err := json.Marshal(vars)
		if err != nil {
			t.Fatal(err)
		}
		out, err := l.playbook(t, "- hosts: all\n  gather_facts: false\n  roles:\n    - rdmaform.rdma.fabric_test\n", "-e", string(b))
		if err == nil {
			t.Errorf("%v: the play passed; want the role's check to fail\n%s", vars, out)
		}
		return out
	}
	const missing = "rdmaform fabric test: rdmaform_fabric_test_bandwidth names no netdev or device"
	for _, vars := range []map[string]any{
		{"rdmaform_fabric_test_slot": 2, "rdmaform_fabric_test_lead": 0.5, "rdmaform_fabric_test_ready_timeout": 1,
			"rdmaform_fabric_test_barrier_port": 1, "rdmaform_fabric_test_max_rounds": 0, "rdmaform_fabric_test_max_retests": 0},
		{"rdmaform_fabric_test_slot": 3600, "rdmaform_fabric_test_lead": 3598.5, "rdmaform_fabric_test_ready_timeout": 3600,
			"rdmaform_fabric_test_barrier_port": 65535, "rdmaform_fabric_test_max_rounds": 100000, "rdmaform_fabric_test_max_retests": 32},
	} {
		if out := run(vars); !strings.Contains(out, missing+"\"") {
			t.Errorf("at the limits %v: want only %q\n%s", vars, missing, out)
		}
	}
	for _, c := range []struct {
		vars map[string]any
		want []string
	}{
		{map[string]any{"rdmaform_fabric_test_slot": 1, "rdmaform_fabric_test_ready_timeout": 0, "rdmaform_fabric_test_barrier_port": 0,
			"rdmaform_fabric_test_max_rounds": -1, "rdmaform_fabric_test_max_retests": -1},
			[]string{"rdmaform_fabric_test_slot 1: want 2 to 3600", "rdmaform_fabric_test_ready_timeout 0: want 1 to 3600",
				"rdmaform_fabric_test_barrier_port 0: want 1 to 65535", "rdmaform_fabric_test_max_rounds -1: want 0 to 100000",
				"rdmaform_fabric_test_max_retests -1: want 0 to 32", "rdmaform_fabric_test_lead 1: want above 0 and under"}},
		{map[string]any{"rdmaform_fabric_test_slot": 3601, "rdmaform_fabric_test_ready_timeout": 3601, "rdmaform_fabric_test_barrier_port": 65536,
			"rdmaform_fabric_test_max_rounds": 100001, "rdmaform_fabric_test_max_retests": 33, "rdmaform_fabric_test_lead": 3599.5},
			[]string{"rdmaform_fabric_test_slot 3601: want 2 to 3600", "rdmaform_fabric_test_ready_timeout 3601: want 1 to 3600",
				"rdmaform_fabric_test_barrier_port 65536: want 1 to 65535", "rdmaform_fabric_test_max_rounds 100001: want 0 to 100000",
				"rdmaform_fabric_test_max_retests 33: want 0 to 32"}},
	} {
		out := run(c.vars)
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("one past the limits %v: lacks %q\n%s", c.vars, w, out)
			}
		}
	}
}
