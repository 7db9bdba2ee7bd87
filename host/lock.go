package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// LockFile is where applies on one host serialize (rooted: under --root
// and --sim it is inside the tree).
const LockFile = "/run/rdmaform.lock"

// ErrLocked is returned when another rdmaform holds the lock past the
// caller's timeout.
var ErrLocked = errors.New("another rdmaform apply holds the lock")

// Lock takes the host's apply lock, waiting up to timeout. It is an
// flock(2) on LockFile: the kernel releases it when its holder exits,
// however it exits, so a lock left by a dead process is taken over at once;
// the file only records who holds it, for the message the next one prints.
//
// Equivalent to: flock -w TIMEOUT /run/rdmaform.lock
func (h *Host) Lock(ctx context.Context, timeout time.Duration, owner string) (unlock func(), err error) {
	return h.LockWaiting(ctx, timeout, owner, nil)
}

// LockWaiting is Lock that, when another process holds the lock, calls
// waiting once with who holds it, as the holder recorded it ("pid PID,
// COMMAND, since TIME"; "" if it recorded nothing), before it waits.
func (h *Host) LockWaiting(ctx context.Context, timeout time.Duration, owner string, waiting func(holder string)) (unlock func(), err error) {
	if err := h.FS.MkdirAll(filepath.Dir(LockFile), 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", LockFile, err)
	}
	p, err := h.FS.Resolve(LockFile)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", LockFile, err)
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", LockFile, err)
	}
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", LockFile, err)
		}
		if waiting != nil {
			// The holder records itself just after it takes the lock:
			// a moment with no record yet is waited out, briefly.
			holder, _ := os.ReadFile(p)
			if who := strings.TrimSpace(string(holder)); who != "" || time.Since(start) > time.Second {
				waiting(who)
				waiting = nil
			}
		}
		if time.Now().After(deadline) {
			holder, _ := os.ReadFile(p)
			f.Close()
			msg := fmt.Errorf("%w (%s), waited %s", ErrLocked, LockFile, timeout)
			if h := strings.TrimSpace(string(holder)); h != "" {
				msg = fmt.Errorf("%w: held by %s", msg, h)
			}
			return nil, msg
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d, %s, since %s\n", os.Getpid(), owner, time.Now().UTC().Format(time.RFC3339))), 0)
	return func() {
		_ = f.Truncate(0)
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}
