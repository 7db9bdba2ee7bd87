package reap_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/internal/testlab/need"
	"github.com/rdmaform/rdmaform/internal/testlab/netns"
	"github.com/rdmaform/rdmaform/internal/testlab/nmlab"
	"github.com/rdmaform/rdmaform/internal/testlab/reap"
	"github.com/rdmaform/rdmaform/internal/testlab/slurmlab"
	"github.com/rdmaform/rdmaform/internal/testlab/smlab"
	"github.com/rdmaform/rdmaform/internal/testlab/systemdlab"
)

// holdEnv makes TestKilledTestLeavesNothing, in the test binary it
// starts, the test that is killed: it starts the labs, writes what they
// run to the file holdEnv names, and waits to be killed.
const holdEnv = "RDMAFORM_REAP_HOLD"

// proc is one process a lab runs: its PID and its start time (field 22
// of /proc/PID/stat), so a PID the kernel gave to another process since
// is not taken for it.
type proc struct {
	What  string `json:"what"`
	PID   int    `json:"pid"`
	Start string `json:"start"`
}

// record is what the killed test's labs ran and made.
type record struct {
	Procs   []proc   `json:"procs"`
	Cgroups []string `json:"cgroups"`
	Netns   []string `json:"netns"`
	Dirs    []string `json:"dirs"`
	// Complete: every lab started (the test holds them all).
	Complete bool `json:"complete"`
}

// TestKilledTestLeavesNothing runs a test binary that starts every lab
// whose daemons could outlive it (smlab: ibsim and opensm; systemdlab: a
// systemd --user with a service that runs and one that forks away from
// its starter; netns: a named network namespace; nmlab: dbus-daemon
// and NetworkManager in another; slurmlab: munged,
// slurmctld, a slurmd and a job on it), records their PIDs, cgroups,
// namespaces and directories, and ends it without its cleanups: by
// SIGKILL, and by its own -timeout (the testing package's panic). Every
// recorded process must be gone, and every cgroup, namespace and
// directory, and the guardian that removed them must have exited. What
// is left is reported, then removed (processes by their recorded PID and
// start time only).
func TestKilledTestLeavesNothing(t *testing.T) {
	if out := os.Getenv(holdEnv); out != "" {
		hold(t, out)
		return
	}
	need.Root(t, "the labs need root")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A short TMPDIR of the test's own: the labs' directories and the
	// killed binary's t.TempDir go there (unix socket paths stay short;
	// munged wants its parents searchable).
	tmp, err := os.MkdirTemp("", "rdmaform-reap-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	took := 2 * time.Minute
	for _, how := range []string{"SIGKILL", "timeout"} {
		t.Run(how, func(t *testing.T) {
			out := filepath.Join(tmp, how+".json")
			args := []string{"-test.run=^TestKilledTestLeavesNothing$", "-test.v"}
			if how == "timeout" {
				// Long enough for the labs to start (twice what they
				// took under SIGKILL, and 30 s), short enough to come
				// soon. Should it come while they start, what started
				// by then is checked.
				args = append(args, "-test.timeout="+(2*took+30*time.Second).Round(time.Second).String())
			} else {
				args = append(args, "-test.timeout=30m")
			}
			cmd := exec.Command(self, args...)
			cmd.Env = append(os.Environ(), holdEnv+"="+out, "TMPDIR="+tmp)
			var log bytes.Buffer
			cmd.Stdout, cmd.Stderr = &log, &log
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			start := time.Now()
			if err := reap.Start(cmd); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			var exitErr error
			go func() { exitErr = cmd.Wait(); close(done) }()
			rec := waitRecord(out, done, 10*time.Minute)
			if how == "SIGKILL" && rec != nil && rec.Complete {
				took = time.Since(start)
				_ = cmd.Process.Kill()
			}
			select {
			case <-done:
			case <-time.After(10 * time.Minute):
				_ = cmd.Process.Kill()
				<-done
			}
			if how == "timeout" {
				rec = readRecord(out)
			}
			if rec != nil {
				t.Cleanup(func() { removeLeft(t, rec) })
			}
			if m := regexp.MustCompile(regexp.QuoteMeta(need.Marker) + `(.*)`).FindStringSubmatch(log.String()); m != nil {
				need.Skip(t, "a lab is missing: %s", m[1])
			}
			switch {
			case rec == nil || (how == "SIGKILL" && !rec.Complete):
				t.Fatalf("the labs did not start (%v):\n%s", exitErr, log.String())
			case how == "SIGKILL" && !strings.Contains(fmt.Sprint(exitErr), "signal: killed"):
				t.Errorf("the held test ended with %v, not by SIGKILL", exitErr)
			case how == "timeout" && !strings.Contains(log.String(), "panic: test timed out after"):
				t.Errorf("the held test did not end by its -timeout (%v):\n%s", exitErr, log.String())
			case !rec.Complete:
				t.Logf("the -timeout came while the labs started: what had started is checked")
			}
			if left := waitGone(rec, time.Minute); len(left) > 0 {
				t.Fatalf("left behind after the test binary was ended (%s):\n  %s", how, strings.Join(left, "\n  "))
			}
			t.Logf("%d processes, %d cgroups, %d network namespaces and %d directories gone", len(rec.Procs), len(rec.Cgroups), len(rec.Netns), len(rec.Dirs))
		})
	}
}

// readRecord is the record the held test wrote last, nil if none.
func readRecord(path string) *record {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var r record
	if json.Unmarshal(b, &r) != nil {
		return nil
	}
	return &r
}

// waitRecord waits for the held test's complete record; if the test
// exits first, or the timeout passes, it returns the last one written.
func waitRecord(path string, exited <-chan struct{}, timeout time.Duration) *record {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if r := readRecord(path); r != nil && r.Complete {
			return r
		}
		select {
		case <-exited:
			return readRecord(path)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return readRecord(path)
}

// hold is the killed test: it starts the labs, records each as it
// starts, and waits.
func hold(t *testing.T, out string) {
	var r record
	save := func() {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out+".tmp", b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(out+".tmp", out); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[int]bool{}
	add := func(what string, pid int) {
		if p, ok := procOf(what, pid); ok && !seen[pid] {
			seen[pid] = true
			r.Procs = append(r.Procs, p)
		}
	}

	f := smlab.Start(t)
	add("smlab ibsim", f.SimPID())
	sm := f.StartOpenSM(t, smlab.HCAs[0])
	add("smlab opensm", sm.Process.Pid)
	save()

	sd := systemdlab.Start(t)
	// The first lab that hands the guardian something starts it.
	add("the guardian", reap.GuardianPID())
	r.Cgroups = sd.Cgroups()
	r.Dirs = append(r.Dirs, sd.Dir)
	add("systemdlab manager", sd.PID)
	save()
	sd.AddUnit(t, "rdmaform-held.service", "[Service]\nExecStart=/bin/sleep 3600\n")
	// A daemon that forks away from what the manager started: nothing
	// but its cgroup ties it to the manager.
	sd.AddUnit(t, "rdmaform-forked.service", "[Service]\nType=forking\nExecStart=/bin/sh -c '/bin/sleep 3600 & exit 0'\n")
	sd.StartUnit(t, "rdmaform-held.service")
	sd.StartUnit(t, "rdmaform-forked.service")
	for _, cg := range r.Cgroups {
		pids, err := reap.CgroupPIDs(cg)
		if err != nil {
			t.Fatal(err)
		}
		for _, pid := range pids {
			add("systemdlab cgroup "+filepath.Base(cg), pid)
		}
	}
	save()

	nl := netns.New(t)
	r.Netns = append(r.Netns, nl.Name)
	save()

	nm := nmlab.Start(t)
	for what, pid := range nm.PIDs() {
		add("nmlab "+what, pid)
	}
	r.Netns = append(r.Netns, nm.Netns())
	if strings.HasPrefix(filepath.Base(nm.Dir()), "rdmaform-") {
		r.Dirs = append(r.Dirs, nm.Dir())
	}
	save()

	sl := slurmlab.Start(t, 1)
	sl.Submit(t, sl.Nodes[0], 3600)
	r.Netns = append(r.Netns, sl.NS)
	for what, pid := range sl.PIDs() {
		// Each daemon is PID 1 of its own namespace: everything in it
		// (slurmstepd, the job) is the lab's.
		for _, member := range pidnsMembers(pid) {
			add("slurmlab "+what, member)
		}
	}

	r.Complete = true
	save()
	t.Logf("holding %d processes; waiting to be killed", len(r.Procs))
	time.Sleep(time.Hour)
}

// startTime is field 22 of /proc/PID/stat (after the command's
// parenthesis, which may hold spaces), "" when the process is gone.
func startTime(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

func procOf(what string, pid int) (proc, bool) {
	st := startTime(pid)
	return proc{What: what, PID: pid, Start: st}, pid > 0 && st != ""
}

// alive: the process of the record still runs (the PID has the same
// start time; a zombie has exited).
func alive(p proc) bool {
	if startTime(p.PID) != p.Start {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}

// pidnsMembers are the processes in the PID namespace of pid.
func pidnsMembers(pid int) []int {
	ns, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	if err != nil {
		return nil
	}
	own, _ := os.Readlink("/proc/self/ns/pid")
	if ns == own {
		return []int{pid}
	}
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err == nil && l == ns {
			pids = append(pids, p)
		}
	}
	sort.Ints(pids)
	return pids
}

// left is what of the record is still there.
func left(r *record) []string {
	var out []string
	for _, p := range r.Procs {
		if alive(p) {
			out = append(out, fmt.Sprintf("%s: PID %d runs", p.What, p.PID))
		}
	}
	for _, cg := range r.Cgroups {
		if _, err := os.Stat(cg); !errors.Is(err, os.ErrNotExist) {
			out = append(out, "cgroup "+cg)
		}
	}
	for _, ns := range r.Netns {
		if _, err := os.Stat(filepath.Join("/run/netns", ns)); !errors.Is(err, os.ErrNotExist) {
			out = append(out, "network namespace "+ns)
		}
	}
	for _, d := range r.Dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			out = append(out, "directory "+d)
		}
	}
	return out
}

// waitGone waits (bounded) until nothing of the record is left, and
// returns what is.
func waitGone(r *record, timeout time.Duration) []string {
	deadline := time.Now().Add(timeout)
	for {
		l := left(r)
		if len(l) == 0 || time.Now().After(deadline) {
			return l
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// removeLeft removes what a failed run left: the recorded processes (by
// PID, when the start time still matches), the cgroups, namespaces and
// directories.
func removeLeft(t *testing.T, r *record) {
	for _, p := range r.Procs {
		if alive(p) {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
	}
	for _, cg := range r.Cgroups {
		if err := reap.KillCgroup(cg, 10*time.Second); err == nil {
			_ = reap.RemoveCgroup(cg)
		}
	}
	for _, ns := range r.Netns {
		if _, err := os.Stat(filepath.Join("/run/netns", ns)); err == nil {
			_ = exec.Command("ip", "netns", "del", ns).Run()
		}
	}
	for _, d := range r.Dirs {
		_ = os.RemoveAll(d)
	}
	if l := left(r); len(l) > 0 {
		t.Errorf("could not remove: %v", l)
	}
}
