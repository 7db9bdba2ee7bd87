// Package reap makes sure a lab leaves nothing behind when its test
// binary dies without running its cleanups: killed by SIGKILL, by a
// Ctrl-C, or ended by its own -timeout (the testing package panics, and
// the process exits without running t.Cleanup).
//
// Two mechanisms, one for each kind of leftover:
//
//   - Start starts a process with a parent-death signal (SIGKILL): the
//     kernel kills it when the test binary dies. The signal is tied to
//     the thread that forked the child, not the process, so every Start
//     forks from one goroutine locked to its OS thread for the life of
//     the binary. It reaches only the process started (and what it
//     execs): a daemon that forks is covered by a PID namespace of its
//     own (the process started is its init; the kernel kills the
//     namespace when init dies) or by a cgroup the guardian empties.
//   - Guard hands what a lab made outside its processes (a cgroup, a
//     named network namespace, a directory) to the guardian: this test
//     binary again, started once, in a process group of its own, reading
//     a pipe whose only writer is the test binary. When the pipe closes
//     (the test binary is gone, however it ended) the guardian kills what
//     is left in the cgroups it holds, removes them, deletes the
//     namespaces and the directories, and exits. A lab that removes the
//     thing itself releases it first, so a normal run leaves the guardian
//     nothing to do.
//
// The guardian only ever touches names a lab made: cgroups under
// /sys/fs/cgroup, namespaces and directories of $TMPDIR whose names begin
// with "rdmaform-"; it kills only the processes of those cgroups.
package reap

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// guardEnv marks the re-executed test binary as the guardian.
const guardEnv = "RDMAFORM_REAP_GUARDIAN"

func init() {
	if os.Getenv(guardEnv) != "1" {
		return
	}
	os.Exit(guardian(os.Stdin))
}

// spawner forks every process Start starts, from one thread that lives
// as long as the binary: the parent-death signal fires when the thread
// that forked the child exits.
var spawner struct {
	once sync.Once
	reqs chan spawnReq
}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

// Start starts cmd (as cmd.Start does) so that the kernel sends it
// SIGKILL when the test binary dies. Its SysProcAttr is kept, with
// Pdeathsig set. A process that execs keeps the signal (a set-user-ID
// program would lose it; the labs run none).
func Start(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnReq)
		go func() {
			// Locked and never unlocked: the goroutine never returns,
			// so its thread ends only with the process.
			runtime.LockOSThread()
			for r := range spawner.reqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	r := spawnReq{cmd: cmd, done: make(chan error, 1)}
	spawner.reqs <- r
	return <-r.done
}

// Kind is what the guardian removes.
type Kind string

// The kinds of things a lab hands the guardian.
const (
	// Cgroup is a cgroup directory under /sys/fs/cgroup whose name
	// begins with "rdmaform-": its processes (and its child cgroups')
	// are killed, then it is removed, children first.
	Cgroup Kind = "cgroup"
	// Netns is a named network namespace (ip netns) "rdmaform-...".
	Netns Kind = "netns"
	// Dir is a directory "rdmaform-..." of $TMPDIR (os.MkdirTemp's),
	// removed with everything in it.
	Dir Kind = "dir"
)

var netnsName = regexp.MustCompile(`^rdmaform-[A-Za-z0-9_.-]+$`)

// check says why the guardian must not take name as a thing of kind.
func check(kind Kind, name string) error {
	if strings.ContainsFunc(name, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Errorf("reap: %s %q: a control character", kind, name)
	}
	switch kind {
	case Cgroup:
		if !filepath.IsAbs(name) || filepath.Clean(name) != name || !strings.HasPrefix(name, "/sys/fs/cgroup/") || !strings.HasPrefix(filepath.Base(name), "rdmaform-") {
			return fmt.Errorf("reap: cgroup %q: want /sys/fs/cgroup/.../rdmaform-*", name)
		}
	case Netns:
		if !netnsName.MatchString(name) {
			return fmt.Errorf("reap: network namespace %q: want rdmaform-[A-Za-z0-9_.-]+", name)
		}
	case Dir:
		if !filepath.IsAbs(name) || filepath.Clean(name) != name || !strings.HasPrefix(filepath.Base(name), "rdmaform-") || filepath.Dir(name) != filepath.Clean(os.TempDir()) {
			return fmt.Errorf("reap: directory %q: want %s/rdmaform-*", name, filepath.Clean(os.TempDir()))
		}
	default:
		return fmt.Errorf("reap: unknown kind %q", kind)
	}
	return nil
}

var guard struct {
	mu  sync.Mutex
	w   *os.File
	pid int
	err error
}

// Guard hands name, a thing of kind the lab just made, to the guardian,
// which removes it if the test binary dies first. Call release once the
// lab has removed it itself (release after a failed removal leaves it to
// nothing: keep it guarded then, by not calling release).
func Guard(kind Kind, name string) (release func(), err error) {
	if err := check(kind, name); err != nil {
		return nil, err
	}
	if err := send("+", kind, name); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { _ = send("-", kind, name) }) }, nil
}

// GuardianPID is the guardian's PID, 0 before the first Guard.
func GuardianPID() int {
	guard.mu.Lock()
	defer guard.mu.Unlock()
	return guard.pid
}

func send(op string, kind Kind, name string) error {
	guard.mu.Lock()
	defer guard.mu.Unlock()
	if guard.w == nil && guard.err == nil {
		guard.w, guard.pid, guard.err = startGuardian()
	}
	if guard.err != nil {
		return guard.err
	}
	if _, err := fmt.Fprintf(guard.w, "%s %s %s\n", op, kind, name); err != nil {
		return fmt.Errorf("reap: telling the guardian (PID %d): %w", guard.pid, err)
	}
	return nil
}

// startGuardian runs this binary again as the guardian, its standard
// input the read end of a pipe only this process writes to (the write
// end is close-on-exec: no other child inherits it).
func startGuardian() (*os.File, int, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, 0, fmt.Errorf("reap: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, 0, fmt.Errorf("reap: %w", err)
	}
	defer r.Close()
	cmd := exec.Command(self)
	cmd.Env = []string{guardEnv + "=1", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", "TMPDIR=" + os.TempDir()}
	cmd.Stdin = r
	cmd.Dir = "/"
	// A process group of its own: a Ctrl-C at the terminal reaches the
	// test binary, not the guardian (which ignores it anyway).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, 0, fmt.Errorf("reap: starting the guardian: %w", err)
	}
	// Never waited for: it exits once this process is gone.
	_ = cmd.Process.Release()
	return w, cmd.Process.Pid, nil
}

type item struct {
	kind Kind
	name string
}

// guardian reads "+ KIND NAME" and "- KIND NAME" lines until the pipe
// closes, then removes what is still held: cgroups first (their
// processes killed), then namespaces, then directories. Problems go to
// $TMPDIR/rdmaform-reap-PID.log, the only thing it may leave.
func guardian(in *os.File) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	var held []item
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		op, rest, _ := strings.Cut(sc.Text(), " ")
		kind, name, _ := strings.Cut(rest, " ")
		it := item{Kind(kind), name}
		if check(it.kind, it.name) != nil {
			continue
		}
		switch op {
		case "+":
			held = append(held, it)
		case "-":
			for i := len(held) - 1; i >= 0; i-- {
				if held[i] == it {
					held = append(held[:i], held[i+1:]...)
					break
				}
			}
		}
	}
	var problems []string
	for _, kind := range []Kind{Cgroup, Netns, Dir} {
		for _, it := range held {
			if it.kind != kind {
				continue
			}
			if err := remove(it); err != nil {
				problems = append(problems, err.Error())
			}
		}
	}
	if len(problems) == 0 {
		return 0
	}
	log := filepath.Join(os.TempDir(), "rdmaform-reap-"+strconv.Itoa(os.Getpid())+".log")
	_ = os.WriteFile(log, []byte(strings.Join(problems, "\n")+"\n"), 0o644)
	return 1
}

func remove(it item) error {
	switch it.kind {
	case Cgroup:
		if err := KillCgroup(it.name, 10*time.Second); err != nil {
			return err
		}
		return RemoveCgroup(it.name)
	case Netns:
		if _, err := os.Stat(filepath.Join("/run/netns", it.name)); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if out, err := exec.Command("ip", "netns", "del", it.name).CombinedOutput(); err != nil {
			return fmt.Errorf("ip netns del %s: %v: %s", it.name, err, strings.TrimSpace(string(out)))
		}
	case Dir:
		return os.RemoveAll(it.name)
	}
	return nil
}

// CgroupPIDs lists the processes of a cgroup and of its children.
func CgroupPIDs(cg string) ([]int, error) {
	var pids []int
	err := filepath.WalkDir(cg, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids, err
}

// KillCgroup SIGKILLs every process of a cgroup (and of its children)
// until none is left, or fails after timeout; a cgroup that does not
// exist has none.
func KillCgroup(cg string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		pids, err := CgroupPIDs(cg)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s: processes %v still there after %s", cg, pids, timeout)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// RemoveCgroup removes an empty cgroup and the children made in it,
// deepest first (cgroup directories go with rmdir, never recursively).
func RemoveCgroup(cg string) error {
	var dirs []string
	err := filepath.WalkDir(cg, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
			return fmt.Errorf("rmdir %s: %w", dirs[i], err)
		}
	}
	return nil
}
