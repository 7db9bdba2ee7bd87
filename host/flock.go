package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Flock is an flock(2) on a file or directory of the host that already
// exists: it creates nothing, so a lock on a kernel directory (configfs)
// leaves no trace, and the kernel releases it when its holder exits,
// however it exits. Every Flock is its own open file, so two of them
// exclude each other in one process as in two.
type Flock struct {
	f    *os.File
	name string
}

// flockPoll is how often a waiting Flock tries again.
const flockPoll = 10 * time.Millisecond

// OpenFlock opens name (below the host's root) for locking.
func OpenFlock(fsys FS, name string) (*Flock, error) {
	p, err := fsys.Resolve(name)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	return &Flock{f: f, name: name}, nil
}

// Shared takes the lock shared, waiting while it is held exclusively,
// until ctx ends.
//
// Equivalent to: flock -s NAME
func (l *Flock) Shared(ctx context.Context) error {
	_, err := l.take(ctx, unix.LOCK_SH, 0)
	return err
}

// Exclusive takes the lock exclusively, waiting at most wait while
// others hold it; false when they still do.
//
// Equivalent to: flock -x -w WAIT NAME
func (l *Flock) Exclusive(ctx context.Context, wait time.Duration) (bool, error) {
	return l.take(ctx, unix.LOCK_EX, wait)
}

// take polls for the lock (a blocking flock could not be given up);
// wait 0 is no limit.
func (l *Flock) take(ctx context.Context, how int, wait time.Duration) (bool, error) {
	var deadline time.Time
	if wait > 0 {
		deadline = time.Now().Add(wait)
	}
	for {
		err := unix.Flock(int(l.f.Fd()), how|unix.LOCK_NB)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return false, fmt.Errorf("lock %s: %w", l.name, err)
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("lock %s: %w", l.name, ctx.Err())
		case <-time.After(flockPoll):
		}
	}
}

// Unlock lets the lock go; the file stays open for another take.
func (l *Flock) Unlock() { _ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN) }

// Close lets the lock go and closes the file.
func (l *Flock) Close() { l.f.Close() }
