package host

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// Detached is a process started in a session of its own, so it outlives
// the process that started it and the terminal or SSH session that one
// ran in.
type Detached struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// DetachSelf starts this program's own executable again with args, in a
// new session (no controlling terminal: a hangup of the caller's session
// does not reach it), with env as its environment, stdin as its standard
// input (a pipe closed after it: the program reads it to the end) and its
// standard output and error appended to the host's file log, a rooted
// path opened by OpenLog (inside the --root or --sim tree). It returns
// once the process runs and stdin is written; a process that exits
// without reading stdin shows in its exit code and its log.
//
// Equivalent to: setsid /proc/self/exe ARGS... <<<"$STDIN" >>LOG 2>&1 &
func DetachSelf(args, env []string, stdin []byte, fsys FS, log string) (*Detached, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program's executable: %w", err)
	}
	out, _, err := OpenLog(fsys, log)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer w.Close()
	cmd := exec.Command(exe, args...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		return nil, fmt.Errorf("starting %s in the background: %w", exe, err)
	}
	d := &Detached{cmd: cmd, done: make(chan struct{})}
	// Reap it while this process lives; once this process exits, init
	// (or the nearest subreaper) does.
	go func() {
		_ = cmd.Wait()
		close(d.done)
	}()
	// An error here (EPIPE: it exited without reading) is the process's
	// to report, in its exit code and log.
	_, _ = w.Write(stdin)
	return d, nil
}

// PID is the process's id.
func (d *Detached) PID() int { return d.cmd.Process.Pid }

// Done is closed when the process has exited (while this process lives).
func (d *Detached) Done() <-chan struct{} { return d.done }

// ExitCode is the process's exit code once Done is closed; -1 if a
// signal ended it.
func (d *Detached) ExitCode() int { return d.cmd.ProcessState.ExitCode() }

// InstallSelf copies this program's executable to dst (a real path, its
// directory existing), mode 0700, through a temporary file renamed over
// dst: a copy that another process is running is replaced, not rewritten.
//
// Equivalent to: install -m 0700 /proc/self/exe DST
func InstallSelf(dst string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this program's executable: %w", err)
	}
	in, err := os.Open(exe)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o700); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}
