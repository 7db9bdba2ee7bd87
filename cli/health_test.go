package cli_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/rdmaform/rdmaform/internal/testlab/slurmlab"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// healthSpec is the health tests' spec for a cx6-vpi-ib host: the first
// port InfiniBand and ACTIVE (the audit's default), node1.
const healthSpec = "version: 1\nhost:\n  hostname: node1\ndevices:\n  - name: mlx5_0\n    ports:\n      - port: 1\n        link_layer: InfiniBand\n"

// setPortState sets the state of the simulated host's port (what the
// port's sysfs state file reads) and has the simulator render its tree
// again.
func setPortState(t *testing.T, dir, dev string, port int, state string) {
	t.Helper()
	st := simtest.State(t, dir)
	found := false
	for _, d := range st.Devices {
		if d.Name != dev {
			continue
		}
		for _, p := range d.Ports {
			if p.Num == port {
				p.State, found = state, true
			}
		}
	}
	if !found {
		t.Fatalf("%s: no port %s/%d", dir, dev, port)
	}
	b, err := yaml.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sim.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "sys")); err != nil {
		t.Fatal(err)
	}
}

func writeHealthFile(t *testing.T, name, text string) string {
	t.Helper()
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestHealthVerdicts runs rdmaform health on a simulated host through a
// port going down and back, firmware staged for the next boot, a reboot
// that did not activate it and one that did, drift (a warning, or
// critical with --drift critical), a spec for another host, a bad spec
// and bad flags: each gives its Nagios exit code and a first line in
// the plugin form.
func TestHealthVerdicts(t *testing.T) {
	dir := t.TempDir()
	h := filepath.Join(dir, "host")
	if code, _, errs := runCLI(t, "sim", "new", h, "--profile", "cx6-vpi-ib"); code != 0 {
		t.Fatalf("sim new: %s", errs)
	}
	spec := writeHealthFile(t, filepath.Join(dir, "node.yaml"), healthSpec)
	fw := writeHealthFile(t, filepath.Join(dir, "fw.yaml"), strings.Replace(healthSpec, "    ports:\n", "    firmware:\n      params: {SRIOV_EN: true, NUM_OF_VFS: 4}\n    ports:\n", 1))
	other := writeHealthFile(t, filepath.Join(dir, "other.yaml"), strings.Replace(healthSpec, "node1", "node7", 1))
	bad := writeHealthFile(t, filepath.Join(dir, "bad.yaml"), "version: 1\ndevices:\n  - name: mlx5_0\n    ports:\n      - port: one\n")

	health := func(step string, want int, first string, args ...string) string {
		t.Helper()
		code, out, errs := runCLI(t, append([]string{"--sim", h, "health"}, args...)...)
		if code != want {
			t.Errorf("%s: exit %d, want %d\n%s%s", step, code, want, out, errs)
		}
		line, _, _ := strings.Cut(out, "\n")
		if !strings.HasPrefix(line, first) {
			t.Errorf("%s: first line\n %s\nwant it to start with\n %s", step, line, first)
		}
		return out
	}
	health("healthy", 0, "RDMA OK: 5 checks passed | checks=5 critical=0 warning=0 unknown=0", "-f", spec)

	setPortState(t, h, "mlx5_0", 1, "DOWN")
	out := health("port down", 2, "RDMA CRITICAL: port[mlx5_0/1] state: DOWN", "-f", spec)
	if !strings.Contains(out, "\nCRITICAL port[mlx5_0/1] subnet_manager: ") {
		t.Errorf("port down: the problems are not listed one a line:\n%s", out)
	}
	setPortState(t, h, "mlx5_0", 1, "ACTIVE")
	health("port back", 0, "RDMA OK:", "-f", spec)

	health("firmware drift", 1, "RDMA WARNING: firmware[0000:3b:00.0] drift: update (SRIOV_EN: false -> true, NUM_OF_VFS: 0 -> 4)", "-f", fw)
	health("firmware drift, critical", 2, "RDMA CRITICAL: firmware[0000:3b:00.0] drift:", "-f", fw, "--drift", "critical")
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", fw); code != 3 {
		t.Fatalf("apply: exit %d, want 3 (reboot needed)\n%s%s", code, out, errs)
	}
	health("staged", 1, "RDMA WARNING: firmware[0000:3b:00.0] pending_reboot: NUM_OF_VFS staged for next boot", "-f", fw)
	if code, _, errs := runCLI(t, "sim", "reboot", h, "--keep-firmware"); code != 0 {
		t.Fatalf("sim reboot --keep-firmware: %s", errs)
	}
	out = health("did not take", 2, "RDMA CRITICAL: firmware[0000:3b:00.0] activation: ", "-f", fw)
	if !strings.Contains(out, "did not take: still False after the reboot") {
		t.Errorf("did not take: no word of it:\n%s", out)
	}
	doc := loadSchemas(t).check(t, "health -o json", "health", health("did not take, JSON", 2, "{", "-f", fw, "-o", "json"))
	if doc["status"] != "CRITICAL" || doc["exit_code"] != float64(2) {
		t.Errorf("health -o json: status %v, exit_code %v; want CRITICAL, 2", doc["status"], doc["exit_code"])
	}

	// A firmware reset loads it: healthy, and the plan is empty.
	if code, out, errs := runCLI(t, "--sim", h, "activate", "--by", "fw-reset", "--yes", "-f", fw); code != 0 {
		t.Fatalf("activate --by fw-reset: exit %d\n%s%s", code, out, errs)
	}
	health("firmware live", 0, "RDMA OK:", "-f", fw)
	if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", fw); code != 0 {
		t.Errorf("plan after the reset: exit %d, want 0 (empty)\n%s%s", code, out, errs)
	}

	health("another host's spec", 3, `RDMA UNKNOWN: host hostname: this host is "node1"; the spec is for "node7"`, "-f", other)
	health("bad spec", 3, "RDMA UNKNOWN: "+bad+":5:", "-f", bad)
	health("no spec", 3, "RDMA UNKNOWN: no spec", "--timeout", "5s")
	health("bad --drift", 3, `RDMA UNKNOWN: --drift "sometimes"`, "-f", spec, "--drift", "sometimes")
	health("--slurm-node alone", 3, "RDMA UNKNOWN: --slurm-node names the node --slurm-drain drains", "-f", spec, "--slurm-node", "n1")
	health("bad node name", 3, `RDMA UNKNOWN: Slurm node "-n1"`, "-f", spec, "--slurm-drain", "--slurm-node=-n1")
	health("unknown flag", 3, "", "-f", spec, "--no-such-flag")

	// --timeout: 1s and 40s are taken, one step past either is not.
	health("--timeout at the low limit", 0, "RDMA OK:", "-f", spec, "--timeout", "1s")
	health("--timeout at the high limit", 0, "RDMA OK:", "-f", spec, "--timeout", "40s")
	health("--timeout under the low limit", 3, "RDMA UNKNOWN: --timeout 999ms: give a duration from 1s to 40s", "-f", spec, "--timeout", "999ms")
	health("--timeout over the high limit", 3, "RDMA UNKNOWN: --timeout 40.001s: give a duration from 1s to 40s", "-f", spec, "--timeout", "40001ms")
}

// TestHealthTimeout: a tool that hangs (the simulator's hang fault on
// mlxconfig, whose own timeout is far longer) is cut off at --timeout
// and the verdict is CRITICAL, saying so. The test's bound is the
// context of the rdmaform it runs, not a stopwatch.
func TestHealthTimeout(t *testing.T) {
	dir := t.TempDir()
	h := filepath.Join(dir, "host")
	if code, _, errs := runCLI(t, "sim", "new", h, "--profile", "cx6-vpi-ib"); code != 0 {
		t.Fatalf("sim new: %s", errs)
	}
	fw := writeHealthFile(t, filepath.Join(dir, "fw.yaml"), strings.Replace(healthSpec, "    ports:\n", "    firmware:\n      params: {SRIOV_EN: true}\n    ports:\n", 1))
	if code, _, errs := runCLI(t, "sim", "fault", h, "--tool", "mlxconfig", "--hang"); code != 0 {
		t.Fatalf("sim fault: %s", errs)
	}
	bin := buildRdmaform(t)
	// Far less than mlxconfig's own timeout: only --timeout ends it in time.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--sim", h, "health", "-f", fw, "--timeout", "1s")
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("rdmaform health --timeout 1s still ran after 15s: %s", out)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	want := "RDMA CRITICAL: host timeout: the checks did not finish within 1s"
	if code != 2 || !strings.HasPrefix(string(out), want) {
		t.Errorf("exit %d, want 2 with %q first\n%s", code, want, out)
	}
}

// TestHealthCheckProgramDrainsSlurmNode: the real slurmd of the Slurm
// lab runs rdmaform health as its HealthCheckProgram (a two-line wrapper,
// as slurmd passes no arguments) every 2 seconds, against a simulated
// host. While the host is healthy its node stays idle; with the port
// down the node is drained, the reason naming the problem; with the port
// back the node is resumed; a node an administrator drained for their
// own reason stays drained while health passes.
func TestHealthCheckProgramDrainsSlurmNode(t *testing.T) {
	bin := buildRdmaform(t)
	dir := t.TempDir()
	// slurmd runs the program as root from its own spool directory: every
	// directory above it must be searchable.
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h := filepath.Join(dir, "host")
	if code, _, errs := runCLI(t, "sim", "new", h, "--profile", "cx6-vpi-ib"); code != 0 {
		t.Fatalf("sim new: %s", errs)
	}
	spec := writeHealthFile(t, filepath.Join(dir, "node.yaml"), healthSpec)
	runs := filepath.Join(dir, "runs")
	wrapper := filepath.Join(dir, "rdmaform-health")
	// slurmd runs the program with SLURMD_NODENAME and no PATH: the
	// wrapper sets PATH, as an operator's does. The lab's slurm.conf is
	// not /etc/slurm's: the wrapper names it, as it names the simulated
	// host. The log counts the runs and keeps
	// what rdmaform printed.
	conf := func(l *slurmlab.Lab) string {
		return fmt.Sprintf("#!/bin/sh\nexport PATH=%s SLURM_CONF=%s\n%s --sim %s health -f %s --slurm-drain >>%s 2>&1\nrc=$?\necho \"exit $rc SLURMD_NODENAME=$SLURMD_NODENAME\" >>%s\nexit $rc\n",
			os.Getenv("PATH"), l.Conf, bin, h, spec, runs, runs)
	}
	// The wrapper must exist when slurmd starts (it runs the program
	// before it registers): a placeholder, rewritten once the lab's
	// slurm.conf is known.
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	l := slurmlab.StartWith(t, 1, slurmlab.Options{Conf: []string{"HealthCheckProgram=" + wrapper, "HealthCheckInterval=2"}})
	if err := os.WriteFile(wrapper, []byte(conf(l)), 0o755); err != nil {
		t.Fatal(err)
	}
	log := func() string { b, _ := os.ReadFile(runs); return string(b) }
	// waitRuns waits for n more runs of the program.
	waitRuns := func(n int) {
		t.Helper()
		start := strings.Count(log(), "\nexit ")
		deadline := time.Now().Add(60 * time.Second)
		for strings.Count(log(), "\nexit ") < start+n {
			if time.Now().After(deadline) {
				t.Fatalf("slurmd ran the health check %d times in 60s, want %d more\n%s\n%s", strings.Count(log(), "\nexit ")-start, n, log(), l.Logs())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if err := os.WriteFile(runs, []byte("\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitRuns(2)
	if got := l.State(t, "n1"); got != "idle" {
		t.Fatalf("healthy: n1 is %s, want idle\n%s", got, log())
	}
	if !strings.Contains(log(), "exit 0 SLURMD_NODENAME=n1") {
		t.Errorf("the health check did not pass with slurmd's SLURMD_NODENAME=n1:\n%s", log())
	}

	setPortState(t, h, "mlx5_0", 1, "DOWN")
	l.WaitState(t, "n1", "drained", 60*time.Second)
	show := l.MustRun(t, "scontrol", "show", "node", "-o", "n1")
	if !strings.Contains(show, "Reason=rdmaform health: port[mlx5_0/1] state: DOWN") {
		t.Errorf("drained, but not for the port: %s\n%s", show, log())
	}
	if !strings.Contains(log(), "exit 2 ") {
		t.Errorf("no run exited 2 (CRITICAL):\n%s", log())
	}

	setPortState(t, h, "mlx5_0", 1, "ACTIVE")
	l.WaitState(t, "n1", "idle", 60*time.Second)
	if !strings.Contains(log(), "slurm: node n1 resumed") {
		t.Errorf("resumed, but the health check did not say so:\n%s", log())
	}

	theirs := "bad DIMM, ticket 4711"
	l.MustRun(t, "scontrol", "update", "nodename=n1", "state=drain", "reason="+theirs)
	l.WaitState(t, "n1", "drained", 30*time.Second)
	waitRuns(2)
	if got := l.State(t, "n1"); got != "drained" {
		t.Errorf("an administrator's drain: n1 is %s after two passing health checks, want drained\n%s", got, log())
	}
	if show := l.MustRun(t, "scontrol", "show", "node", "-o", "n1"); !strings.Contains(show, "Reason="+theirs+" [") {
		t.Errorf("the administrator's reason is gone: %s", show)
	}
	if !strings.Contains(log(), "is not rdmaform health's") {
		t.Errorf("the health check did not say why it left n1 drained:\n%s", log())
	}
	// rdmaform's own drain reason is a real scontrol line's Reason field.
	t.Logf("scontrol show node -o n1: %s", strings.TrimSpace(show))
}
