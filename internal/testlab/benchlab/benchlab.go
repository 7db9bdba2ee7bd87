// Package benchlab is the OS side of rdmaform's benchmarks (bench/): it
// runs programs and measures them (wall time, CPU time, peak RSS), makes
// temporary directories and files, and starts nmlab's real NetworkManager
// outside a test. bench/ itself stays on the pure side of the OS boundary
// that `make lint` enforces.
//
// Nothing here touches the machine beyond a temporary directory and the
// processes it starts: NetworkManager only runs inside nmlab's namespace,
// and only processes started here are ever signalled, by PID.
package benchlab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Run is one measured program run.
type Run struct {
	Wall   time.Duration
	User   time.Duration // CPU time in user mode
	Sys    time.Duration // CPU time in the kernel
	MaxRSS int64         // peak resident set size, bytes
	Exit   int
	Stdout []byte
	Stderr []byte
}

// CPU is user plus system time.
func (r Run) CPU() time.Duration { return r.User + r.Sys }

// Exec runs argv with env (nil: this process's environment) and stdin,
// and measures it with the child's rusage. The error is non-nil only when
// the program could not be run or did not finish; its exit code is in Run.
//
// Equivalent to: /usr/bin/time -v ARGV < STDIN
func Exec(ctx context.Context, argv, env []string, stdin []byte) (Run, error) {
	if len(argv) == 0 {
		return Run{}, errors.New("empty command")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := Run{Wall: time.Since(start), Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	if ps := cmd.ProcessState; ps != nil {
		r.User, r.Sys = ps.UserTime(), ps.SystemTime()
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			r.MaxRSS = ru.Maxrss * 1024 // kilobytes on Linux
		}
	}
	var xe *exec.ExitError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return r, fmt.Errorf("%s: %w", argv[0], ctx.Err())
	case errors.As(err, &xe):
		r.Exit = xe.ExitCode()
	default:
		return r, fmt.Errorf("%s: %w", argv[0], err)
	}
	return r, nil
}

// LookPath says whether a program is on PATH.
func LookPath(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

// TempDir makes a temporary directory; remove deletes it and everything
// in it.
func TempDir(pattern string) (dir string, remove func(), err error) {
	dir, err = os.MkdirTemp("", pattern)
	if err != nil {
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// WriteFile writes a file, making its directory.
func WriteFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// WriteExecutable writes a program, making its directory.
func WriteExecutable(path string, data []byte) error {
	if err := WriteFile(path, data); err != nil {
		return err
	}
	return os.Chmod(path, 0o755)
}

// ReadFile reads a file.
func ReadFile(path string) ([]byte, error) { return os.ReadFile(path) }

// Exists reports whether path exists.
func Exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// ChildArg, as the first argument of a program that calls ChildMain,
// makes it the measuring parent of one command (see ExecFresh).
const ChildArg = "-benchlab-rusage"

// ExecFresh is Exec with a peak RSS that belongs to argv alone. Linux
// carries a process's peak RSS across exec, and os/exec starts children
// with vfork, sharing the caller's memory until the exec: a child of a
// large benchmark process reports the benchmark's own peak. So self (a
// program whose main hands ChildArg to ChildMain) is started first, small,
// and starts argv; it reports argv's rusage in a file.
//
// Equivalent to: /usr/bin/time -f %M ARGV
func ExecFresh(ctx context.Context, self string, argv, env []string, stdin []byte) (Run, error) {
	dir, remove, err := TempDir("rdmaform-bench-rusage-")
	if err != nil {
		return Run{}, err
	}
	defer remove()
	out := filepath.Join(dir, "rusage")
	r, err := Exec(ctx, append([]string{self, ChildArg, out, "--"}, argv...), env, stdin)
	if err != nil {
		return r, err
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return r, fmt.Errorf("%s did not report the rusage of %s: %w\n%s", self, argv[0], err, r.Stderr)
	}
	var child struct {
		User, Sys time.Duration
		MaxRSS    int64
		Exit      int
	}
	if err := json.Unmarshal(b, &child); err != nil {
		return r, err
	}
	r.User, r.Sys, r.MaxRSS, r.Exit = child.User, child.Sys, child.MaxRSS, child.Exit
	return r, nil
}

// ChildMain is the measuring parent of ExecFresh: args are OUT -- ARGV.
// It runs ARGV with this process's stdin, stdout, stderr and environment
// and writes its rusage as JSON to OUT. It returns the exit code.
func ChildMain(args []string) int {
	if len(args) < 3 || args[1] != "--" {
		fmt.Fprintln(os.Stderr, "benchlab: want OUT -- ARGV")
		return 2
	}
	cmd := exec.Command(args[2], args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var xe *exec.ExitError
	if err != nil && !errors.As(err, &xe) {
		fmt.Fprintln(os.Stderr, "benchlab:", err)
		return 1
	}
	ps := cmd.ProcessState
	res := struct {
		User, Sys time.Duration
		MaxRSS    int64
		Exit      int
	}{User: ps.UserTime(), Sys: ps.SystemTime(), Exit: ps.ExitCode()}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		res.MaxRSS = ru.Maxrss * 1024
	}
	b, _ := json.Marshal(res)
	if err := os.WriteFile(args[0], b, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "benchlab:", err)
		return 1
	}
	return ps.ExitCode()
}
