package host

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// MaxStateFile bounds the files rdmaform keeps its own state in and
// reads back: the rollback journal and its copy, the staged ledger. Each
// holds a few kilobytes on a host; anything past the bound is not a file
// rdmaform wrote, and is refused before it is read.
const MaxStateFile = 4 << 20

// StateFileError is a state file of rdmaform that cannot be used as it
// is: not a regular file, over its bound, or not what rdmaform writes
// there (the caller's Err).
type StateFileError struct {
	Path string
	Err  error
}

func (e *StateFileError) Error() string { return fmt.Sprintf("%s: %v", e.Path, e.Err) }
func (e *StateFileError) Unwrap() error { return e.Err }

// ReadStateFile reads one of rdmaform's state files under f's root: only
// a regular file (a FIFO, a device or a directory at its name is refused
// without blocking: the file is opened O_NONBLOCK and checked before a
// byte is read) of at most max bytes. A missing file is fs.ErrNotExist,
// as ReadFile says it.
//
// Equivalent to: test -f NAME && test $(stat -c %s NAME) -le MAX && cat NAME
func ReadStateFile(f FS, name string, max int64) ([]byte, error) {
	p, err := f.Resolve(name)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		switch {
		case errors.Is(err, unix.ENOENT):
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		case errors.Is(err, unix.ELOOP):
			return nil, &StateFileError{Path: name, Err: errors.New("is a symlink, not a regular file")}
		}
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	file := os.NewFile(uintptr(fd), p)
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	if !fi.Mode().IsRegular() {
		return nil, &StateFileError{Path: name, Err: fmt.Errorf("is a %s, not a regular file", kindOf(fi.Mode()))}
	}
	if fi.Size() > max {
		return nil, &StateFileError{Path: name, Err: fmt.Errorf("is %d bytes, over the %d bytes rdmaform ever writes there", fi.Size(), max)}
	}
	// One byte past the bound: a file that grew since the stat is seen.
	b, err := io.ReadAll(io.LimitReader(file, max+1))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	if int64(len(b)) > max {
		return nil, &StateFileError{Path: name, Err: fmt.Errorf("is over the %d bytes rdmaform ever writes there", max)}
	}
	return b, nil
}

// openLocal opens an operator file for ReadLocalFile without blocking: a
// named FIFO (or a device) at a spec's name would hold the open, or the
// read, for ever. A regular file is read; so is a pipe the shell handed
// over by descriptor (/dev/stdin, /dev/fd/N, /proc/self/fd/N: a process
// substitution); anything else is refused by its kind.
func openLocal(name string) (*os.File, error) {
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	switch m := fi.Mode(); {
	case m.IsRegular():
	case m&fs.ModeNamedPipe != 0 && handedOver(name):
		// Reads wait for the writer, as the shell meant.
		if err := unix.SetNonblock(fd, false); err != nil {
			f.Close()
			return nil, err
		}
	default:
		f.Close()
		return nil, fmt.Errorf("%s is a %s, not a regular file: name a file, or - to read standard input", name, kindOf(m))
	}
	return f, nil
}

// handedOver: name is a descriptor this process was given (a shell's
// process substitution or redirection), not a name in the filesystem.
func handedOver(name string) bool {
	return name == "/dev/stdin" || strings.HasPrefix(name, "/dev/fd/") || strings.HasPrefix(name, "/proc/self/fd/")
}
