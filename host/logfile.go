package host

import (
	"fmt"
	"io/fs"
	"os"
	"path"

	"golang.org/x/sys/unix"
)

// OpenLog opens the log file name of the host (a rooted path, such as
// /run/rdmaform/rollback.log) for appending, creating it mode 0600 and
// its directory: the file a detached process or a service writes to. It
// is found as every other write of rdmaform is, through fsys: under
// --root and --sim a symlink is followed only inside the tree, and one
// that leaves it is refused (ErrEscapes). The file is then opened with
// O_NOFOLLOW and O_NONBLOCK, and only a regular file is taken: not a
// link put there since, a FIFO (which would block the open) or a
// device. It returns the open file and its real path.
//
// Equivalent to: mkdir -p DIR; exec >>NAME
func OpenLog(fsys FS, name string) (*os.File, string, error) {
	if err := fsys.MkdirAll(path.Dir(name), 0o755); err != nil {
		return nil, "", fmt.Errorf("log %s: %w", name, err)
	}
	p, err := fsys.Resolve(name)
	if err != nil {
		return nil, "", fmt.Errorf("log %s: %w", name, err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, "", fmt.Errorf("log %s: %w", name, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &NotRegularError{Name: name, Kind: kindOf(fi.Mode())}
	}
	if err != nil {
		f.Close()
		return nil, "", fmt.Errorf("log %s: %w", name, err)
	}
	return f, p, nil
}

// kindOf names a file type that is not a regular one, for a message
// (a *NotRegularError, and the bounded reads of bounded.go).
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	}
	return "file of type " + m.Type().String()
}
