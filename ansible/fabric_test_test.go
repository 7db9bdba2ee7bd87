package ansible_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// fabricTiming is a run's time slot and start delay for n hosts: the
// slot holds a round's n/2 clients and n/2 servers starting at once on
// this machine (two CPUs, shared), the delay Ansible's start of the
// pairs task on every host. At 200 hosts, with the machine's load
// average near 80, that start took 13 minutes: a delay of 120 s left
// 10,204 of the 19,900 pairs too late to measure.
func fabricTiming(n int) (slot, delay int) {
	return 4 + n/50, 20 + 4*n
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
	BadPairs []json.RawMessage `json:"bad_pairs"`
	Suspects []string          `json:"suspects"`
	Untested []string          `json:"untested"`
	Results  []string          `json:"results"`
}

// TestFabricTestRole runs examples/ansible/fabric-test.yml (the role
// rdmaform.rdma.fabric_test) under ansible-core on simulated hosts (8;
// RDMAFORM_FABRIC_HOSTS=200 in make fleet-test), one of which is slow
// (the simulator's slow fault): every host runs its pairs of the n-1
// rounds through rdmaform probe serve and rdmaform probe (the perftest
// bandwidth and latency probes), the results file has every pair of the
// schedule measured, the report is CRITICAL and names the slow host and
// no other, and the play fails saying so. The test logs its wall time
// against rounds x slot.
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
	dir := filepath.Join(f.l.dir, "fabric")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The pairs run as an async task: its job files under the lab's
	// directory, where the async_status after it looks.
	f.l.env = append(f.l.env, "ANSIBLE_ASYNC_DIR="+filepath.Join(f.l.dir, "async"))
	slot, delay := fabricTiming(n)
	vars := map[string]any{"rdma_become": false, "rdma_command": f.cli, "rdma_netdev": "ib0", "rdma_duration": "1s",
		"rdma_slot": slot, "rdma_lead": 1, "rdma_start_delay": delay, "rdma_fabric_dir": dir}
	start := time.Now()
	out, code := f.playbook(t, "../examples/ansible/fabric-test.yml", vars, "-f", strconv.Itoa(min(n, 50)))
	wall := time.Since(start)
	rounds := n - 1
	if n%2 == 1 {
		rounds = n
	}
	t.Logf("%d hosts: %d rounds of %d s, start delay %d s: wall time %s (rounds x slot = %d s, + start delay = %d s)",
		n, rounds, slot, delay, wall.Round(time.Second), rounds*slot, rounds*slot+delay)
	if code == 0 {
		t.Fatalf("the play passed with %s slow; want it failed on CRITICAL\n%s", slow, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatalf("no report: %v\n%s", err, out)
	}
	var r fabricReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report.json: %v\n%s", err, b)
	}
	if r.Status != "CRITICAL" || len(r.BadHosts) != 1 || r.BadHosts[0].Host != slow {
		t.Errorf("report: %s, bad hosts %+v; want CRITICAL naming %s alone\n%s\n%s", r.Status, r.BadHosts, slow, b, out)
	}
	if want := n * (n - 1) / 2; r.Pairs < want || len(r.Untested) > 0 {
		t.Errorf("report: %d pairs measured, untested %v; want all %d pairs of the schedule", r.Pairs, r.Untested, want)
	}
	if len(r.BadPairs) != n-1 {
		t.Errorf("report: %d bad pairs, want the %d pairs with %s", len(r.BadPairs), n-1, slow)
	}
	// The schedule's results: every pair, with its figures.
	res, err := os.ReadFile(filepath.Join(dir, "results-000.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Results []struct {
			Hosts []string `json:"hosts"`
			BW    float64  `json:"bandwidth_gbps"`
			Lat   float64  `json:"latency_us"`
			Err   string   `json:"error"`
		} `json:"results"`
	}
	if err := json.Unmarshal(res, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Results) != n*(n-1)/2 {
		t.Errorf("results-000.json: %d results, want %d", len(doc.Results), n*(n-1)/2)
	}
	for _, x := range doc.Results {
		if x.Err != "" || x.BW <= 0 || x.Lat <= 0 {
			t.Errorf("results-000.json: %v: error %q, %g Gb/s, %g us", x.Hosts, x.Err, x.BW, x.Lat)
			break
		}
	}
	if w := "rdmaform fabric test: CRITICAL: " + slow + " named bad"; !strings.Contains(out, w) {
		t.Errorf("the play's output does not say %q\n%s", w, out)
	}
}
