package ansible_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/ansible"
)

// children maps each process of this machine to its children, from
// /proc.
func children(t *testing.T) map[int][]int {
	t.Helper()
	out := map[int][]int{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		out[ppid] = append(out[ppid], pid)
	}
	return out
}

// moduleTasks are the rdmaform module's task processes under root (the
// ansible-playbook this test started): the module run by the action
// plugin, with its arguments on stdin or in an arguments file; never the
// detached activations (their own argument) nor other commands.
func moduleTasks(t *testing.T, root int) []int {
	t.Helper()
	kids := children(t)
	var out []int
	var walk func(int)
	walk = func(p int) {
		for _, c := range kids[p] {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c))
			if err == nil {
				argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
				if len(argv) == 2 && strings.Contains(filepath.Base(argv[0]), "rdmaform") && (argv[1] == ansible.StdinArg || filepath.Base(argv[1]) == "args") {
					out = append(out, c)
				}
			}
			walk(c)
		}
	}
	walk(root)
	return out
}

// TestRolloutLostConnection runs the rollout by firmware reset on four
// simulated hosts in two waves of two, over the test connection
// flaky_local (testdata/connection_plugins): while each host's card is
// away after its reset (sim fault --reset late), the test kills the
// activate task's process, by PID, on every host of the wave: the
// connection is lost. Wave 1's hosts come back: the action plugin waits
// for them and runs the module again, which returns the outcome of the
// activation that went on, detached, and they pass every gate. Wave 2's
// hosts stay unreachable (the whole wave): each fails the gate
// "activate" (not reachable again within reconnect_timeout), stays
// drained (no undrain hook), and the play still reaches the report play,
// which lists them.
func TestRolloutLostConnection(t *testing.T) {
	f := newFleet(t, 4, 0, nil)
	inv := filepath.Join(f.l.dir, "inventory.yml")
	b, err := os.ReadFile(inv)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inv, bytes.ReplaceAll(b, []byte("ansible_connection: local"), []byte("ansible_connection: flaky_local")), 0o644); err != nil {
		t.Fatal(err)
	}
	plugins, err := filepath.Abs("testdata/connection_plugins")
	if err != nil {
		t.Fatal(err)
	}
	down := filepath.Join(f.l.dir, "down")
	if err := os.Mkdir(down, 0o755); err != nil {
		t.Fatal(err)
	}
	f.l.env = append(f.l.env, "ANSIBLE_CONNECTION_PLUGINS="+plugins, "RDMAFORM_TEST_DOWN_DIR="+down)
	for _, n := range f.names {
		// The card registers again 4s after its reset: the window in
		// which the connection is lost.
		rdmaform(t, 0, "sim", "fault", f.dirs[n], "--reset", "late", "--delay", "4s", "--match", "0000:3b:00.0")
	}
	// The waves the role cuts: rdmaform waves on the same hosts.
	wavesInv := filepath.Join(f.l.dir, "waves.json")
	if err := os.WriteFile(wavesInv, []byte(`{"hosts": [{"name": "node001"}, {"name": "node002"}, {"name": "node003"}, {"name": "node004"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var cut struct {
		Waves []struct {
			Hosts []string `json:"hosts"`
		} `json:"waves"`
	}
	if err := json.Unmarshal([]byte(rdmaform(t, 0, "waves", "--inventory", wavesInv, "--max-unavailable", "2", "-o", "json")), &cut); err != nil || len(cut.Waves) != 2 {
		t.Fatalf("waves: %v %+v", err, cut)
	}
	waves := [][]string{cut.Waves[0].Hosts, cut.Waves[1].Hosts}
	report := filepath.Join(f.l.dir, "report.json")
	vars := f.hooks()
	for k, v := range map[string]any{"rdma_spec_file": f.spec, "rdma_become": false, "rdma_command": f.cli, "rdma_probe_interface": "ib1",
		"rdma_max_unavailable": "2", "rdma_report": report, "rdmaform_rollout_reconnect_timeout": 5} {
		vars[k] = v
	}
	bj, err := json.Marshal(vars)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ansible-playbook", "-i", inv, "-f", "4", "../examples/ansible/fleet-rollout.yml", "-e", string(bj))
	cmd.Env = f.l.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Wave by wave: once every card of the wave is away, kill every
	// activate task (and, for wave 2, take its hosts down for good).
	killed := map[int]bool{}
	for w, hosts := range waves {
		deadline := time.Now().Add(2 * time.Minute)
		for {
			away := 0
			for _, h := range hosts {
				if b, _ := os.ReadFile(filepath.Join(f.dirs[h], "sim.yaml")); bytes.Contains(b, []byte("\nunprobed:")) {
					away++
				}
			}
			if away == len(hosts) {
				break
			}
			select {
			case err := <-done:
				t.Fatalf("wave %d: the playbook ended (%v) before the cards of %v were reset:\n%s", w+1, err, hosts, out.String())
			default:
			}
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("wave %d: the cards of %v were not all reset within 2m:\n%s", w+1, hosts, out.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		if w == 1 {
			for _, h := range hosts {
				if err := os.WriteFile(filepath.Join(down, h), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		tasks := moduleTasks(t, cmd.Process.Pid)
		if len(tasks) != len(hosts) {
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("wave %d: %d module tasks running (%v), want one per host", w+1, len(tasks), tasks)
		}
		for _, pid := range tasks {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Errorf("killing the activate task %d: %v", pid, err)
			}
			killed[pid] = true
		}
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the playbook did not end within 5m:\n%s", out.String())
	}
	text := out.String()
	if len(killed) != 4 {
		t.Errorf("killed %d activate tasks, want 4", len(killed))
	}
	for _, want := range []string{"Phase 4 | the report", "rdmaform rollout: 2 done, 2 failed, 0 untouched",
		"rdmaform rollout: failed " + waves[1][0] + " (wave 2, activate): rdmaform: the connection was lost during the activation",
		"rdmaform rollout: failed " + waves[1][1] + " (wave 2, activate): rdmaform: the connection was lost during the activation",
		"was not reachable again within 5s"} {
		if !strings.Contains(text, want) {
			t.Errorf("the play's output lacks %q:\n%s", want, text)
		}
	}
	r := f.report(t, report)
	if strings.Join(r.Done, ",") != strings.Join(waves[0], ",") || len(r.Failed) != 2 || r.StoppedAt != 2 {
		t.Errorf("report: done %v, failed %+v, stopped at %d; want wave 1's hosts %v done, wave 2's failed", r.Done, r.Failed, r.StoppedAt, waves[0])
	}
	for _, fl := range r.Failed {
		if fl.Gate != "activate" || fl.Wave != 2 {
			t.Errorf("failed %+v: want wave 2, gate activate", fl)
		}
	}
	_, left := f.checkHooks(t, 2, 2)
	if strings.Join(left, ",") != strings.Join(waves[1], ",") {
		t.Errorf("left drained %v, want wave 2's unreachable hosts", left)
	}
	// Wave 1 reconnected and passed every gate: its hosts plan empty.
	for _, h := range waves[0] {
		rdmaform(t, 0, "--sim", f.dirs[h], "plan", "-f", f.rendered(t, h))
	}
}

// TestRolloutReconnectLimits: rdmaform_rollout_reconnect_timeout is 1 to
// 86400 seconds: at each limit the play goes on, one past it is refused
// before phase 1 with the variable named.
func TestRolloutReconnectLimits(t *testing.T) {
	f := newFleet(t, 1, 0, nil)
	playbook := filepath.Join(f.l.dir, "limits.yml")
	if err := os.WriteFile(playbook, []byte("- hosts: rdma\n  gather_facts: false\n  roles:\n    - rdmaform.rdma.rollout\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := strings.ReplaceAll(fleetSpec, "{{ rdmaform_probe_address }}", f.addr[f.names[0]])
	for _, c := range []struct {
		value int
		ok    bool
	}{{1, true}, {86400, true}, {0, false}, {86401, false}} {
		out, code := f.playbook(t, playbook, map[string]any{"rdmaform_rollout_spec": spec, "rdmaform_rollout_reconnect_timeout": c.value}, "--check")
		refused := fmt.Sprintf("rdmaform_rollout_reconnect_timeout %d: want 1 to 86400", c.value)
		switch {
		case c.ok && (code != 0 || !strings.Contains(out, "rdmaform rollout: 1 of 1 hosts to change")):
			t.Errorf("%d: exit %d, want the play to go on\n%s", c.value, code, out)
		case !c.ok && (code == 0 || !strings.Contains(out, refused) || strings.Contains(out, "Phase 1 | plan")):
			t.Errorf("%d: exit %d, want %q before phase 1\n%s", c.value, code, refused, out)
		}
	}
}
