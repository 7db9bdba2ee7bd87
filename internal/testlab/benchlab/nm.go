package benchlab

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"testing"

	"github.com/rdmaform/rdmaform/internal/testlab/nmlab"
)

// StartNM starts nmlab's real NetworkManager (own network namespace, own
// D-Bus, private mounts) for a program rather than a test. stop ends
// NetworkManager, then its bus (by PID), then removes the namespace and
// the lab's directory. log receives what the lab would log to a test.
//
// The lab was written for tests and takes a testing.TB; programTB gives it
// one whose Fatalf/Skipf end the start with an error instead of a test.
func StartNM(log io.Writer, opts ...nmlab.Option) (lab *nmlab.Lab, stop func(), err error) {
	tb := &programTB{log: log}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Fatalf and Skipf end this goroutine (runtime.Goexit), as in a
		// test; deferred functions still run.
		lab = nmlab.Start(tb, opts...)
	}()
	<-done
	if tb.stopped != "" {
		tb.cleanup()
		return nil, nil, fmt.Errorf("%s", tb.stopped)
	}
	return lab, tb.cleanup, nil
}

// programTB is the part of testing.TB nmlab uses, for a program. The
// embedded interface is nil: a method nmlab starts to use without a
// definition here panics at once rather than misbehave.
type programTB struct {
	testing.TB
	log      io.Writer
	cleanups []func()
	dirs     []string
	failed   bool
	stopped  string
}

func (t *programTB) Helper() {}

func (t *programTB) Logf(format string, args ...any) { fmt.Fprintf(t.log, format+"\n", args...) }

func (t *programTB) Errorf(format string, args ...any) {
	t.failed = true
	t.Logf(format, args...)
}

func (t *programTB) Fatalf(format string, args ...any) {
	t.failed = true
	t.stopped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (t *programTB) Skipf(format string, args ...any) {
	t.stopped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (t *programTB) Skip(args ...any) {
	t.stopped = fmt.Sprint(args...)
	runtime.Goexit()
}

func (t *programTB) Failed() bool { return t.failed }

func (t *programTB) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }

func (t *programTB) TempDir() string {
	dir, err := os.MkdirTemp("", "rdmaform-bench-lab-")
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.dirs = append(t.dirs, dir)
	return dir
}

// cleanup runs the cleanups last first, as testing does, then removes the
// temporary directories.
func (t *programTB) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	t.cleanups = nil
	for _, d := range t.dirs {
		os.RemoveAll(d)
	}
	t.dirs = nil
}
