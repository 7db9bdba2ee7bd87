// Package slurmlab runs a real Slurm cluster for a test: Debian's
// slurmctld and one slurmd per node (package slurm-wlm 22.05), with a
// munged of the lab's own for authentication. Recipe and what Debian's
// build needs: the comments below and ../shared/reference/test-lab.md.
//
// Everything is private to the lab:
//
//   - a network namespace of its own (rdmaform-slurm-PID-N) with a veth
//     pair inside it carrying 192.0.2.1/24 and 192.0.2.2/24 (Slurm's
//     address lookups use AI_ADDRCONFIG, which finds nothing on a
//     loopback-only namespace); the controller and every slurmd listen
//     there, on their own ports, so the machine's network never sees them;
//   - its own munge key, socket, seed and log (munged --socket/--key-file),
//     named in slurm.conf by AuthInfo=socket=...; the machine's /etc/munge
//     is never read;
//   - its own slurm.conf, state, spool and log files under the test's
//     temporary directory, given to every daemon and client by -f or
//     SLURM_CONF; the machine's /etc/slurm is never read;
//   - each daemon starts as PID 1 of a PID namespace of its own, in UTS
//     and mount namespaces of its own (hostname ctl, n1, n2, ...): killing
//     it by PID at the end of the test ends every process it started
//     (slurmstepd, the jobs), and nothing outlives the lab. A test binary
//     that dies before its cleanup leaves nothing either: each daemon
//     gets SIGKILL from the kernel as the binary dies (reap.Start), which
//     ends its namespace, and the guardian (reap.Guard) deletes the
//     network namespace.
//
// Several slurmd on one machine: Debian's build is not configured with
// --enable-multiple-slurmd, but its slurmd takes -N NODENAME, and every
// node has its own Port= in slurm.conf and its own spool directory
// (SlurmdSpoolDir=.../%n), so each slurmd is its own node.
//
// Cgroups: proctrack/pgid and task/none need none, but slurmd 22.05
// loads a cgroup plugin anyway and refuses to start unless
// /sys/fs/cgroup/systemd is a cgroup filesystem. In each daemon's private
// mount namespace (after `ip netns exec` mounted a fresh sysfs) a tmpfs
// is mounted on /sys/fs/cgroup and the machine's name=systemd hierarchy
// read-only on /sys/fs/cgroup/systemd: slurmd sees a cgroup v1 machine
// and cannot write to it.
package slurmlab

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmaform/rdmaform/internal/testlab/need"
	"github.com/rdmaform/rdmaform/internal/testlab/reap"
)

// envLaunch carries the launcher's instructions (JSON of launch) to the
// re-executed test binary.
const envLaunch = "RDMAFORM_SLURMLAB_LAUNCH"

// Addresses of the lab's veth pair; every daemon listens on the first.
const (
	Addr     = "192.0.2.1"
	peerAddr = "192.0.2.2"
	ctlPort  = 6817
	nodePort = 6820 // n1 listens on 6821, n2 on 6822, ...
)

type launch struct {
	Hostname string   `json:"hostname"`
	Argv     []string `json:"argv"`
}

// init is the launcher: the test binary, re-executed by `ip netns exec`
// as PID 1 of a new PID namespace with new UTS and mount namespaces,
// prepares that mount namespace and becomes the daemon.
func init() {
	v := os.Getenv(envLaunch)
	if v == "" {
		return
	}
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "slurmlab launcher: "+format+"; not starting the daemon\n", args...)
		os.Exit(113)
	}
	// "@FILE": the instructions are in a file (a systemd unit's
	// Environment= cannot hold JSON's quotes).
	if f, ok := strings.CutPrefix(v, "@"); ok {
		b, err := os.ReadFile(f)
		if err != nil {
			fail("%v", err)
		}
		v = string(b)
	}
	var l launch
	if err := json.Unmarshal([]byte(v), &l); err != nil || len(l.Argv) == 0 {
		fail("bad %s=%q: %v", envLaunch, v, err)
	}
	// Nothing mounted here may reach the machine's mount namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		fail("making / private: %v", err)
	}
	// A /proc of this PID namespace: the daemon and its jobs see only
	// themselves.
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		fail("mounting /proc: %v", err)
	}
	if err := unix.Mount("tmpfs", "/sys/fs/cgroup", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755"); err != nil {
		fail("mounting a tmpfs on /sys/fs/cgroup: %v", err)
	}
	if err := os.Mkdir("/sys/fs/cgroup/systemd", 0o755); err != nil {
		fail("%v", err)
	}
	if err := unix.Mount("cgroup", "/sys/fs/cgroup/systemd", "cgroup", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "none,name=systemd"); err != nil {
		fail("mounting the name=systemd cgroup hierarchy read-only: %v", err)
	}
	if l.Hostname != "" {
		if err := unix.Sethostname([]byte(l.Hostname)); err != nil {
			fail("setting the hostname: %v", err)
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envLaunch+"=") {
			env = append(env, kv)
		}
	}
	err := syscall.Exec(l.Argv[0], l.Argv, env)
	fail("exec %s: %v", l.Argv[0], err)
}

// Programs the lab runs, and the Debian packages that ship them.
var tools = []struct{ name, pkg string }{
	{"munged", "munge"},
	{"slurmctld", "slurmctld"},
	{"slurmd", "slurmd"},
	{"scontrol", "slurm-client"},
	{"sinfo", "slurm-client"},
	{"sbatch", "slurm-client"},
	{"squeue", "slurm-client"},
	{"scancel", "slurm-client"},
	{"ip", "iproute2"},
}

var seq atomic.Int64

// Lab is one running Slurm cluster.
type Lab struct {
	// Dir holds slurm.conf, the munge key and socket, state, spool and logs.
	Dir string
	// NS is the lab's network namespace (ip netns exec NS ...).
	NS string
	// Conf is slurm.conf (SLURM_CONF for clients).
	Conf string
	// Nodes are the node names, n1, n2, ...
	Nodes []string

	daemons []*daemon
	extra   []string
}

type daemon struct {
	name string
	cmd  *exec.Cmd
	out  string
	done chan struct{}
}

// Start runs munged, slurmctld and one slurmd for each of nodes nodes,
// waits until every node is idle, and stops them all by PID (then
// deletes the namespace) at the end of the test.
func Start(t testing.TB, nodes int) *Lab { return StartWith(t, nodes, Options{}) }

// Options vary a lab.
type Options struct {
	// Conf are lines added to slurm.conf.
	Conf []string
	// StartNode, when set, starts each node's slurmd instead of the lab
	// (as a unit of a systemd lab, whose limits it then has): argv is
	// the command to run, env what it needs besides the caller's
	// environment; the caller stops it. The command makes the PID and UTS
	// namespaces itself (unshare), enters the lab's network namespace and
	// runs the launcher, as the lab does.
	StartNode func(t testing.TB, node string, argv, env []string)
}

// StartWith is Start with options.
func StartWith(t testing.TB, nodes int, o Options) *Lab {
	t.Helper()
	need.Root(t, "network, PID, UTS and mount namespaces for the Slurm daemons")
	bin := map[string]string{}
	for _, tl := range tools {
		bin[tl.name] = need.Tool(t, tl.name, "apt-get install "+tl.pkg)
	}
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup/systemd", &st); err != nil || st.Type != unix.CGROUP_SUPER_MAGIC {
		need.Skip(t, "slurmd 22.05 needs a cgroup v1 name=systemd hierarchy at /sys/fs/cgroup/systemd, and this machine has none")
	}
	l := &Lab{Dir: t.TempDir(), NS: fmt.Sprintf("rdmaform-slurm-%d-%d", os.Getpid(), seq.Add(1)), extra: o.Conf}
	// munged wants every directory above its socket searchable by all.
	for d := l.Dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= nodes; i++ {
		l.Nodes = append(l.Nodes, fmt.Sprintf("n%d", i))
	}
	for _, d := range append([]string{"munge", "run", "state", "log"}, l.Nodes...) {
		if err := os.Mkdir(filepath.Join(l.Dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(l.Dir, "munge"), 0o700); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 1024)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(l.Dir, "munge", "munge.key"), key, 0o400); err != nil {
		t.Fatal(err)
	}
	l.Conf = filepath.Join(l.Dir, "slurm.conf")
	if err := os.WriteFile(l.Conf, []byte(l.config()), 0o644); err != nil {
		t.Fatal(err)
	}

	if out, err := exec.Command("ip", "netns", "add", l.NS).CombinedOutput(); err != nil {
		need.Skip(t, "ip netns add %s: %v: %s", l.NS, err, out)
	}
	release, err := reap.Guard(reap.Netns, l.NS)
	if err != nil {
		_ = exec.Command("ip", "netns", "del", l.NS).Run()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", l.NS).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", l.NS, err, out)
			return
		}
		release()
	})
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", "sl0", "type", "veth", "peer", "name", "sl1"},
		{"addr", "add", Addr + "/24", "dev", "sl0"},
		{"addr", "add", peerAddr + "/24", "dev", "sl1"},
		{"link", "set", "sl0", "up"},
		{"link", "set", "sl1", "up"},
	} {
		if out, err := exec.Command("ip", append([]string{"-n", l.NS}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip -n %s %s: %v: %s", l.NS, strings.Join(args, " "), err, out)
		}
	}
	// Stopped in reverse order: the nodes, the controller, munged.
	t.Cleanup(func() {
		for i := len(l.daemons) - 1; i >= 0; i-- {
			l.daemons[i].stop(t)
		}
	})

	sock := filepath.Join(l.Dir, "run", "munge.socket")
	l.start(t, "munged", "", bin["munged"], "--foreground", "--socket="+sock,
		"--key-file="+filepath.Join(l.Dir, "munge", "munge.key"), "--pid-file="+filepath.Join(l.Dir, "run", "munged.pid"),
		"--log-file="+filepath.Join(l.Dir, "munge", "munged.log"), "--seed-file="+filepath.Join(l.Dir, "munge", "munged.seed"))
	l.wait(t, 20*time.Second, "munged's socket", func() (bool, string) {
		_, err := os.Stat(sock)
		return err == nil, fmt.Sprint(err)
	})
	l.start(t, "slurmctld", "ctl", bin["slurmctld"], "-D", "-f", l.Conf)
	for _, n := range l.Nodes {
		argv := []string{bin["slurmd"], "-D", "-N", n, "-f", l.Conf}
		if o.StartNode != nil {
			l.startOutside(t, o.StartNode, n, argv)
			continue
		}
		l.start(t, "slurmd-"+n, n, argv...)
	}
	want := strings.Join(l.Nodes, " idle\n") + " idle\n"
	l.wait(t, 60*time.Second, "every node idle", func() (bool, string) {
		out, err := l.Run(context.Background(), "sinfo", "-h", "-N", "-o", "%N %T")
		return err == nil && out == want, out + fmt.Sprint(err)
	})
	return l
}

// config is the lab's slurm.conf. Plugins that need no cgroup, no
// accounting database and no MPI library; ReturnToService=2 so a node
// that registers is idle at once.
func (l *Lab) config() string {
	var b strings.Builder
	p := func(k, v string) { fmt.Fprintf(&b, "%s=%s\n", k, v) }
	p("ClusterName", "rdmaformlab")
	p("SlurmctldHost", "ctl("+Addr+")")
	p("SlurmctldPort", fmt.Sprint(ctlPort))
	p("SlurmdPort", fmt.Sprint(nodePort))
	p("AuthType", "auth/munge")
	p("AuthInfo", "socket="+filepath.Join(l.Dir, "run", "munge.socket"))
	p("CredType", "cred/munge")
	p("SlurmUser", "root")
	p("SlurmdUser", "root")
	p("StateSaveLocation", filepath.Join(l.Dir, "state"))
	p("SlurmdSpoolDir", filepath.Join(l.Dir, "%n"))
	p("SlurmctldPidFile", filepath.Join(l.Dir, "run", "slurmctld.pid"))
	p("SlurmdPidFile", filepath.Join(l.Dir, "%n", "slurmd.pid"))
	p("SlurmctldLogFile", filepath.Join(l.Dir, "log", "slurmctld.log"))
	p("SlurmdLogFile", filepath.Join(l.Dir, "log", "slurmd-%n.log"))
	p("ProctrackType", "proctrack/pgid")
	p("TaskPlugin", "task/none")
	p("JobAcctGatherType", "jobacct_gather/none")
	p("AccountingStorageType", "accounting_storage/none")
	p("JobCompType", "jobcomp/none")
	p("SchedulerType", "sched/builtin")
	p("SelectType", "select/linear")
	p("MpiDefault", "none")
	p("MailProg", "/bin/true")
	p("ReturnToService", "2")
	for i, n := range l.Nodes {
		fmt.Fprintf(&b, "NodeName=%s NodeAddr=%s Port=%d CPUs=1 State=UNKNOWN\n", n, Addr, nodePort+1+i)
	}
	p("PartitionName", "lab Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
	for _, c := range l.extra {
		b.WriteString(c + "\n")
	}
	return b.String()
}

// startOutside has the caller start a node's daemon (Options.StartNode)
// with the launcher's instructions in a file.
func (l *Lab) startOutside(t testing.TB, start func(testing.TB, string, []string, []string), node string, argv []string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	spec, err := json.Marshal(launch{Hostname: node, Argv: argv})
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(l.Dir, "run", node+".launch")
	if err := os.WriteFile(f, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	unshare := need.Tool(t, "unshare", "apt-get install util-linux")
	ip := need.Tool(t, "ip", "apt-get install iproute2")
	// -test.run matches no test: the launcher execs the daemon first.
	start(t, node, []string{unshare, "--pid", "--uts", "--fork", "--kill-child", "--", ip, "netns", "exec", l.NS, self, "-test.run=^NoTestRunsInTheLauncher"},
		[]string{envLaunch + "=@" + f, "SLURM_CONF=" + l.Conf})
}

// start runs argv through the launcher, as hostname, in the lab's
// network namespace.
func (l *Lab) start(t testing.TB, name, hostname string, argv ...string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	spec, err := json.Marshal(launch{Hostname: hostname, Argv: argv})
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{name: name, out: filepath.Join(l.Dir, "log", name+".out"), done: make(chan struct{})}
	out, err := os.Create(d.out)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	// The launcher must not run the tests: -test.run matches nothing,
	// though init execs the daemon before the test framework starts.
	d.cmd = exec.Command("ip", "netns", "exec", l.NS, self, "-test.run=^$")
	d.cmd.Dir = l.Dir
	d.cmd.Env = append(os.Environ(), envLaunch+"="+string(spec), "SLURM_CONF="+l.Conf)
	d.cmd.Stdout, d.cmd.Stderr = out, out
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWUTS}
	if err := reap.Start(d.cmd); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() { _ = d.cmd.Wait(); close(d.done) }()
	l.daemons = append(l.daemons, d)
}

// stop ends the daemon by its PID: SIGTERM, SIGKILL after 10 s. It is
// PID 1 of its PID namespace, so every process it started ends with it.
func (d *daemon) stop(t testing.TB) {
	select {
	case <-d.done:
		return
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		t.Logf("%s (PID %d) did not stop on SIGTERM; killing it", d.name, d.cmd.Process.Pid)
		_ = d.cmd.Process.Kill()
		<-d.done
	}
}

// wait polls ok until it is true, failing the test with the daemons'
// output after timeout or when a daemon has exited.
func (l *Lab) wait(t testing.TB, timeout time.Duration, what string, ok func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		done, last := ok()
		if done {
			return
		}
		for _, d := range l.daemons {
			select {
			case <-d.done:
				t.Fatalf("waiting for %s: %s exited (%v):\n%s", what, d.name, d.cmd.ProcessState, l.Logs())
			default:
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s; last: %s\n%s", what, timeout, last, l.Logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Logs is every daemon's output and log file, for a failure message.
func (l *Lab) Logs() string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(l.Dir, "log", "*"))
	files = append(files, filepath.Join(l.Dir, "munge", "munged.log"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		fmt.Fprintf(&b, "==> %s <==\n%s\n", filepath.Base(f), data)
	}
	return b.String()
}

// PIDs are the lab's daemons by name (munged, slurmctld, slurmd-n1, ...):
// each is PID 1 of its own PID namespace.
func (l *Lab) PIDs() map[string]int {
	pids := map[string]int{}
	for _, d := range l.daemons {
		pids[d.name] = d.cmd.Process.Pid
	}
	return pids
}

// Env is what a Slurm client needs besides running in the lab's network
// namespace: SLURM_CONF.
func (l *Lab) Env() []string { return []string{"SLURM_CONF=" + l.Conf} }

// Command is argv run in the lab's network namespace with the caller's
// environment and Env (the caller may replace cmd.Env: keep Env in it).
func (l *Lab) Command(ctx context.Context, argv ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", l.NS}, argv...)...)
	cmd.Dir = l.Dir
	cmd.Env = append(os.Environ(), l.Env()...)
	return cmd
}

// Run runs a Slurm client (scontrol, sinfo, sbatch, ...) against the lab
// and returns its standard output.
func (l *Lab) Run(ctx context.Context, argv ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := l.Command(ctx, argv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// MustRun is Run that fails the test on an error.
func (l *Lab) MustRun(t testing.TB, argv ...string) string {
	t.Helper()
	out, err := l.Run(context.Background(), argv...)
	if err != nil {
		t.Fatalf("%v\n%s", err, l.Logs())
	}
	return out
}

// State is the node's state as sinfo prints it in long form (idle,
// allocated, draining, drained, ...).
func (l *Lab) State(t testing.TB, node string) string {
	t.Helper()
	return strings.TrimSpace(l.MustRun(t, "sinfo", "-h", "-N", "-n", node, "-o", "%T"))
}

// WaitState waits (bounded) until the node's sinfo state is want.
func (l *Lab) WaitState(t testing.TB, node, want string, timeout time.Duration) {
	t.Helper()
	l.wait(t, timeout, node+" "+want, func() (bool, string) {
		out, err := l.Run(context.Background(), "sinfo", "-h", "-N", "-n", node, "-o", "%T")
		return err == nil && strings.TrimSpace(out) == want, out + fmt.Sprint(err)
	})
}

// Submit runs `sleep seconds` as a batch job on node and returns its job
// ID once the job runs.
func (l *Lab) Submit(t testing.TB, node string, seconds int) string {
	t.Helper()
	out := l.MustRun(t, "sbatch", "--parsable", "-w", node, "-o", "/dev/null", "--chdir", l.Dir, "-J", "rdmaform-lab",
		"--wrap", fmt.Sprintf("exec sleep %d", seconds))
	id := strings.TrimSpace(out)
	l.WaitJob(t, id, "RUNNING", 30*time.Second)
	return id
}

// SubmitLingering runs a batch job on node that, cancelled, lingers in
// COMPLETING until release is called: its script traps SIGTERM (scancel's
// signal) and waits for a file of the lab's. It returns the job ID once
// the job runs. (Slurm sends SIGKILL KillWait seconds after the SIGTERM,
// 30 by default, which ends the lingering anyway.)
func (l *Lab) SubmitLingering(t testing.TB, node string) (id string, release func()) {
	t.Helper()
	dir, err := os.MkdirTemp(l.Dir, "job-")
	if err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(dir, "release")
	script := filepath.Join(dir, "job.sh")
	text := "#!/bin/sh\n" +
		"trap 'while [ ! -e " + mark + " ]; do sleep 0.1; done; exit 0' TERM\n" +
		"sleep 600 &\n" +
		"wait\n"
	if err := os.WriteFile(script, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	out := l.MustRun(t, "sbatch", "--parsable", "-w", node, "-o", "/dev/null", "--chdir", dir, "-J", "rdmaform-lab-lingering", script)
	id = strings.TrimSpace(out)
	l.WaitJob(t, id, "RUNNING", 30*time.Second)
	return id, func() {
		if err := os.WriteFile(mark, nil, 0o644); err != nil {
			t.Error(err)
		}
	}
}

// WaitJob waits (bounded) until squeue says the job is in state (RUNNING,
// COMPLETING, ...).
func (l *Lab) WaitJob(t testing.TB, id, state string, timeout time.Duration) {
	t.Helper()
	l.wait(t, timeout, "job "+id+" "+state, func() (bool, string) {
		out, err := l.Run(context.Background(), "squeue", "-h", "-j", id, "-o", "%T")
		return err == nil && strings.TrimSpace(out) == state, out + fmt.Sprint(err)
	})
}
