package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// DefaultTimeout bounds every external command unless the caller sets one.
// The slowest tool rdmaform runs is a full mlxconfig query (~13 s on a
// ConnectX-6 Dx); a minute leaves room for a loaded host.
const DefaultTimeout = 60 * time.Second

// Cmd is one external command: an argument vector, never a shell line.
type Cmd struct {
	Args    []string      // Args[0] is the program, found on PATH
	Stdin   []byte        // optional standard input
	Timeout time.Duration // 0 means DefaultTimeout
	// Gentle: a write that must not be torn (a firmware set). The command
	// runs in a process group of its own, so a Ctrl-C at the terminal
	// does not reach it; when its context ends (timeout or interrupt) it
	// gets SIGTERM and is waited for, never SIGKILL.
	Gentle bool
	// Progress, when set, gets each line the command prints on stdout
	// while it runs (split by LineWriter: at \n or \r); stdout is still
	// collected whole in the Result.
	Progress func(line string)
}

// String renders the command line for messages, quoting arguments that
// contain spaces so the line can be pasted into a shell to reproduce it.
func (c Cmd) String() string {
	parts := make([]string, len(c.Args))
	for i, a := range c.Args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$") {
			parts[i] = fmt.Sprintf("%q", a)
		} else {
			parts[i] = a
		}
	}
	return strings.Join(parts, " ")
}

// Result is what a finished command printed.
type Result struct {
	Stdout []byte
	Stderr []byte
}

// Runner runs external commands. The real one execs programs; the simulator
// emulates them in-process with the same output bytes.
type Runner interface {
	Run(ctx context.Context, c Cmd) (Result, error)
}

// ErrTimeout is wrapped by an ExitError when the command ran past its timeout.
var ErrTimeout = errors.New("timed out")

// ErrInterrupted is wrapped by an ExitError when the caller stopped the
// command (Ctrl-C, SIGTERM) before it finished.
var ErrInterrupted = errors.New("interrupted")

// ErrNotFound is wrapped when the program is not installed.
var ErrNotFound = errors.New("command not found")

// ExitError is a command that failed: it exited non-zero, was killed at its
// timeout, or could not start. It carries everything an operator needs to
// reproduce the failure.
type ExitError struct {
	Cmd    Cmd
	Code   int // exit code; -1 when the command did not exit by itself
	Stdout []byte
	Stderr []byte
	Err    error // ErrTimeout, ErrNotFound or the start error, if any
}

func (e *ExitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", e.Cmd)
	switch {
	case errors.Is(e.Err, ErrTimeout):
		fmt.Fprintf(&b, "timed out after %s", e.Cmd.EffectiveTimeout())
	case errors.Is(e.Err, ErrInterrupted):
		b.WriteString("interrupted")
	case e.Err != nil:
		b.WriteString(e.Err.Error())
	default:
		fmt.Fprintf(&b, "exit status %d", e.Code)
	}
	if msg := e.Message(); msg != "" {
		fmt.Fprintf(&b, ": %s", msg)
	}
	return b.String()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Message is the tool's own explanation: its stderr, or the error lines it
// printed on stdout (mlxconfig prints "-E- ..." on stdout), trimmed.
func (e *ExitError) Message() string {
	if s := strings.TrimSpace(string(e.Stderr)); s != "" {
		return oneLine(s)
	}
	var errs []string
	for _, l := range strings.Split(string(e.Stdout), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "-E-") || strings.HasPrefix(l, "error:") || strings.HasPrefix(l, "Error:") {
			errs = append(errs, l)
		}
	}
	if len(errs) > 0 {
		return strings.Join(dedup(errs), "; ")
	}
	return oneLine(strings.TrimSpace(string(e.Stdout)))
}

func oneLine(s string) string {
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	out := strings.Join(dedup(lines), "; ")
	if len(out) > 2000 {
		out = out[:2000] + "..."
	}
	return out
}

func dedup(in []string) []string {
	var out []string
	for i, s := range in {
		if s == "" || (i > 0 && in[i-1] == s) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// EffectiveTimeout is the command's timeout, DefaultTimeout when unset.
func (c Cmd) EffectiveTimeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// ExecRunner runs real programs. It passes the caller's environment through
// (nmcli finds a private NetworkManager only through DBUS_SYSTEM_BUS_ADDRESS)
// and forces LC_ALL=C so messages are never translated.
type ExecRunner struct {
	Env []string // nil means os.Environ()
	// Dir is the programs' working directory; "" means this process's.
	Dir string
}

var _ Runner = (*ExecRunner)(nil)

// Run executes c and waits for it, killing it at its timeout.
func (r *ExecRunner) Run(ctx context.Context, c Cmd) (Result, error) {
	if len(c.Args) == 0 {
		return Result{}, &ExitError{Cmd: c, Code: -1, Err: errors.New("empty command")}
	}
	ctx, cancel := context.WithTimeout(ctx, c.EffectiveTimeout())
	defer cancel()
	path, err := lookPath(c.Args[0], r.Env)
	if err != nil {
		return Result{}, &ExitError{Cmd: c, Code: -1, Err: fmt.Errorf("%w on PATH", ErrNotFound)}
	}
	cmd := exec.CommandContext(ctx, path, c.Args[1:]...)
	cmd.Env = WithCLocale(r.Env)
	cmd.Dir = r.Dir
	if c.Stdin != nil {
		cmd.Stdin = bytes.NewReader(c.Stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if c.Progress != nil {
		lw := NewLineWriter(c.Progress)
		defer lw.Flush()
		cmd.Stdout = io.MultiWriter(&stdout, lw)
	}
	cmd.WaitDelay = 2 * time.Second
	if c.Gentle {
		// SIGTERM, then wait for it as long as it takes (WaitDelay 0).
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.WaitDelay = 0
	}
	err = cmd.Run()
	res := Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	if err == nil {
		return res, nil
	}
	ee := &ExitError{Cmd: c, Code: -1, Stdout: res.Stdout, Stderr: res.Stderr}
	var xe *exec.ExitError
	isExit := errors.As(err, &xe)
	if isExit {
		ee.Code = xe.ExitCode() // -1 when a signal ended it
	}
	switch {
	case ctx.Err() != nil:
		ee.Err = CtxErr(ctx)
	case !isExit:
		ee.Err = err
	}
	return res, ee
}

// CtxErr is why a command's context ended: ErrTimeout at its own
// deadline, ErrInterrupted when the caller cancelled it.
func CtxErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ErrTimeout
	}
	return ErrInterrupted
}

// WithCLocale returns env (or the process environment when nil) with every
// locale variable replaced by LC_ALL=C.
func WithCLocale(env []string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG=") || strings.HasPrefix(kv, "LANGUAGE=") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "LC_ALL=C")
}

// lookPath finds a program on the PATH of env (the caller's environment,
// which is what the program will run with), or of this process when env
// has none.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return exec.LookPath(name)
	}
	var pathVar string
	found := false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar, found = v, true
		}
	}
	if !found {
		return exec.LookPath(name)
	}
	for _, dir := range filepath.SplitList(pathVar) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// Looker is implemented by runners that can tell whether a program is
// installed without running it.
type Looker interface {
	// LookPath returns where the program is, or an error wrapping
	// ErrNotFound. Equivalent to: command -v NAME
	LookPath(name string) (string, error)
}

var _ Looker = (*ExecRunner)(nil)

// LookPath implements Looker on the caller's PATH.
func (r *ExecRunner) LookPath(name string) (string, error) {
	p, err := lookPath(name, r.Env)
	if err != nil {
		return "", fmt.Errorf("%s: %w on PATH", name, ErrNotFound)
	}
	return p, nil
}

// Installed reports whether a program is on the host's PATH, asking the
// runner without running anything when it can; ok is false when the runner
// cannot tell (the caller must then try the program).
func Installed(r Runner, name string) (found, ok bool) {
	l, can := r.(Looker)
	if !can {
		return false, false
	}
	_, err := l.LookPath(name)
	return err == nil, true
}
