package host

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// SelfPath is the path of the running rdmaform program, for starting a
// copy of it (the rollback watcher): argv[0] as run, found on PATH when it
// has no slash. "" when it cannot be found.
func SelfPath() string {
	self := os.Args[0]
	if !strings.Contains(self, "/") {
		p, err := exec.LookPath(self)
		if err != nil {
			return ""
		}
		self = p
	}
	abs, err := filepath.Abs(self)
	if err != nil {
		return ""
	}
	return abs
}

// StartDetached starts argv as a process that outlives this one: its own
// session (no controlling terminal, so a hang-up of the operator's SSH
// session does not reach it), stdin from /dev/null, stdout and stderr
// appended to the host's logFile (a rooted path, opened by OpenLog:
// inside the --root or --sim tree). It returns the child's PID and does
// not wait for it.
//
// Equivalent to: setsid ARGV... </dev/null >>LOG 2>&1 &
func StartDetached(argv, env []string, fsys FS, logFile string) (int, error) {
	if len(argv) == 0 {
		return 0, errors.New("empty command")
	}
	log, _, err := OpenLog(fsys, logFile)
	if err != nil {
		return 0, err
	}
	defer log.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		return 0, err
	}
	defer null.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid
	return pid, cmd.Process.Release()
}

// ProcessAlive tells whether a process with this PID exists (signal 0).
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	// A zombie (killed, not yet reaped by its parent) does not run: a
	// killed watcher whose apply still runs is one.
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if i := strings.LastIndexByte(string(b), ')'); err == nil && i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z' && b[i+2] != 'X'
	}
	return true
}
