package host

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrEscapes is returned for a path that would leave the root, lexically or
// through a symlink.
var ErrEscapes = errors.New("path escapes the root")

// FS is every file access rdmaform makes: sysfs, configfs, /proc, /etc and
// /run. Paths are absolute as on the host ("/sys/class/infiniband"); an
// implementation maps them under its root.
type FS interface {
	// Root is the directory "/" maps to ("/" on a live host).
	Root() string
	ReadFile(name string) ([]byte, error)
	// WriteAttr writes data to an existing kernel attribute in one write(2),
	// as `echo data > name` would: no create, no truncate, no rename.
	WriteAttr(name string, data []byte) error
	// WriteFile replaces a regular file atomically (temporary file, fsync,
	// rename), creating parent directories.
	WriteFile(name string, data []byte, perm fs.FileMode) error
	Mkdir(name string, perm fs.FileMode) error
	MkdirAll(name string, perm fs.FileMode) error
	// Remove removes a file, an empty directory or a configfs group (rmdir).
	Remove(name string) error
	ReadDir(name string) ([]fs.DirEntry, error)
	Stat(name string) (fs.FileInfo, error)
	Lstat(name string) (fs.FileInfo, error)
	Readlink(name string) (string, error)
	Symlink(target, name string) error
	// Resolve returns the real path of name below the root, following
	// symlinks inside the root; it never leaves it.
	Resolve(name string) (string, error)
}

// RootFS is an FS over a directory of the real filesystem. With root "/" it
// is the live host; with another root every path, and every symlink met on
// the way, resolves inside that root (absolute symlink targets are read as
// relative to it, as in a chroot); a path or symlink climbing above the root
// is refused with ErrEscapes.
type RootFS struct {
	root string
}

var _ FS = (*RootFS)(nil)

// NewRootFS returns an FS rooted at dir.
func NewRootFS(dir string) (*RootFS, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if abs != "/" {
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
	}
	return &RootFS{root: abs}, nil
}

// Root implements FS.
func (r *RootFS) Root() string { return r.root }

func (r *RootFS) live() bool { return r.root == "/" }

// clean validates name and returns it cleaned, absolute.
func clean(name string) (string, error) {
	if !strings.HasPrefix(name, "/") {
		return "", fmt.Errorf("%q: not an absolute path", name)
	}
	if strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("%q: NUL in path", name)
	}
	depth := 0
	for _, c := range strings.Split(name, "/") {
		switch c {
		case "", ".":
		case "..":
			depth--
			if depth < 0 {
				return "", fmt.Errorf("%s: %w", name, ErrEscapes)
			}
		default:
			depth++
		}
	}
	return path.Clean(name), nil
}

// resolve maps name to a real path. followLast says whether a symlink in
// the last component is followed (Lstat, Readlink, Remove and Symlink act on
// the link itself).
func (r *RootFS) resolve(name string, followLast bool) (string, error) {
	name, err := clean(name)
	if err != nil {
		return "", err
	}
	if r.live() {
		return name, nil
	}
	// Walk component by component; cur is a path relative to the root.
	pending := strings.Split(strings.TrimPrefix(name, "/"), "/")
	var cur []string
	links := 0
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return "", fmt.Errorf("%s: %w", name, ErrEscapes)
			}
			cur = cur[:len(cur)-1]
			continue
		}
		next := append(append([]string(nil), cur...), c)
		real := filepath.Join(r.root, filepath.Join(next...))
		if len(pending) == 0 && !followLast {
			cur = next
			break
		}
		fi, err := os.Lstat(real)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			// Missing components are fine: the caller's operation reports them.
			cur = next
			continue
		}
		links++
		if links > 40 {
			return "", fmt.Errorf("%s: too many levels of symbolic links", name)
		}
		target, err := os.Readlink(real)
		if err != nil {
			return "", err
		}
		tparts := strings.Split(target, "/")
		if strings.HasPrefix(target, "/") {
			cur = nil
		}
		pending = append(tparts, pending...)
	}
	return filepath.Join(r.root, filepath.Join(cur...)), nil
}

// Resolve implements FS.
func (r *RootFS) Resolve(name string) (string, error) { return r.resolve(name, true) }

// ReadFile implements FS.
func (r *RootFS) ReadFile(name string) ([]byte, error) {
	p, err := r.resolve(name, true)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(p)
}

// WriteAttr implements FS.
func (r *RootFS) WriteAttr(name string, data []byte) error {
	p, err := r.resolve(name, true)
	if err != nil {
		return err
	}
	flags := os.O_WRONLY
	if !r.live() {
		// A --root tree is plain files: a shorter value must not leave the
		// tail of a longer one behind.
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(p, flags, 0)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr != nil {
		return &fs.PathError{Op: "write", Path: name, Err: unwrapPathErr(werr)}
	}
	return cerr
}

// AtWriter is an FS that writes part of an attribute in place, as a PCI
// config space takes one register (pwrite at an offset, no truncate).
type AtWriter interface {
	WriteAttrAt(name string, data []byte, off int64) error
}

// WriteAttrAt writes data at offset off of an existing attribute through
// f, when f can (AtWriter).
func WriteAttrAt(f FS, name string, data []byte, off int64) error {
	w, ok := f.(AtWriter)
	if !ok {
		return &fs.PathError{Op: "pwrite", Path: name, Err: errors.ErrUnsupported}
	}
	return w.WriteAttrAt(name, data, off)
}

// WriteAttrAt implements AtWriter: one pwrite(2) of data at off.
func (r *RootFS) WriteAttrAt(name string, data []byte, off int64) error {
	p, err := r.resolve(name, true)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, werr := f.WriteAt(data, off)
	cerr := f.Close()
	if werr != nil {
		return &fs.PathError{Op: "pwrite", Path: name, Err: unwrapPathErr(werr)}
	}
	return cerr
}

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// WriteFile implements FS.
func (r *RootFS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	p, err := r.resolve(name, true)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".rdmaform-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}

// Mkdir implements FS.
func (r *RootFS) Mkdir(name string, perm fs.FileMode) error {
	p, err := r.resolve(name, true)
	if err != nil {
		return err
	}
	return os.Mkdir(p, perm)
}

// MkdirAll implements FS.
func (r *RootFS) MkdirAll(name string, perm fs.FileMode) error {
	p, err := r.resolve(name, true)
	if err != nil {
		return err
	}
	return os.MkdirAll(p, perm)
}

// Remove implements FS.
func (r *RootFS) Remove(name string) error {
	p, err := r.resolve(name, false)
	if err != nil {
		return err
	}
	return os.Remove(p)
}

// ReadDir implements FS.
func (r *RootFS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := r.resolve(name, true)
	if err != nil {
		return nil, err
	}
	return os.ReadDir(p)
}

// Stat implements FS.
func (r *RootFS) Stat(name string) (fs.FileInfo, error) {
	p, err := r.resolve(name, true)
	if err != nil {
		return nil, err
	}
	return os.Stat(p)
}

// Lstat implements FS.
func (r *RootFS) Lstat(name string) (fs.FileInfo, error) {
	p, err := r.resolve(name, false)
	if err != nil {
		return nil, err
	}
	return os.Lstat(p)
}

// Readlink implements FS.
func (r *RootFS) Readlink(name string) (string, error) {
	p, err := r.resolve(name, false)
	if err != nil {
		return "", err
	}
	return os.Readlink(p)
}

// Symlink implements FS.
func (r *RootFS) Symlink(target, name string) error {
	p, err := r.resolve(name, false)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.Symlink(target, p)
}

// Exists reports whether name exists (following symlinks).
func Exists(f FS, name string) bool {
	_, err := f.Stat(name)
	return err == nil
}

// ReadOptional reads a file that may be missing: nil and no error when it
// is.
func ReadOptional(f FS, name string) ([]byte, error) {
	b, err := f.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return b, nil
}

// ReadAttr reads a kernel attribute and trims the trailing newline and
// padding sysfs adds.
func ReadAttr(f FS, name string) (string, error) {
	b, err := f.ReadFile(name)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(b), " \n"), nil
}

// ReadLocalFile reads a file of the operator's own filesystem (a spec, a
// saved plan), whatever the target host's root is. "-" reads stdin.
func ReadLocalFile(name string, stdin io.Reader) ([]byte, error) {
	var r io.Reader
	if name == "-" {
		r = stdin
	} else {
		f, err := openLocal(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	// Read one byte past the limit so an oversized file is recognised.
	return io.ReadAll(io.LimitReader(r, MaxLocalFile+1))
}

// LocalDirNames lists a directory of the operator's own filesystem (the
// names, sorted); dir is false, and the names nil, when name is not a
// directory.
func LocalDirNames(name string) (names []string, dir bool, err error) {
	fi, err := os.Stat(name)
	if err != nil || !fi.IsDir() {
		return nil, false, err
	}
	es, err := os.ReadDir(name)
	if err != nil {
		return nil, true, err
	}
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names, true, nil
}

// MaxLocalFile bounds operator files rdmaform reads.
const MaxLocalFile = 16 << 20

// WriteLocalFile writes an operator file (a saved plan, an audit report)
// with mode perm, atomically: a new temporary file in the same directory
// (O_EXCL, so it follows no link), then a rename over name. It refuses a
// name that exists and is not a regular file (CheckLocalTarget): a
// device node, a FIFO, a directory or a symlink is never replaced by a
// plain file, and a rename replaces a directory entry, so nothing is ever
// written through a link.
func WriteLocalFile(name string, data []byte, perm fs.FileMode) error {
	if err := CheckLocalTarget(name); err != nil {
		return err
	}
	dir := filepath.Dir(name)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(name)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// Checked again right before the rename: what stands there now is
	// what the rename replaces.
	if err := CheckLocalTarget(name); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}

// NotRegularError is an operator file rdmaform was asked to write whose
// name holds something other than a regular file.
type NotRegularError struct {
	Name string
	Kind string // "symlink", "directory", "character device", ...
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is a %s, not a regular file: refusing to replace it (name a new file or a regular one)", e.Name, e.Kind)
}

// CheckLocalTarget accepts a name rdmaform may write an operator file to:
// one that does not exist yet, or a regular file. The name itself is
// opened with O_PATH|O_NOFOLLOW, so a symlink is seen as the link, never
// as what it points to; anything else is a *NotRegularError.
func CheckLocalTarget(name string) error {
	fd, err := unix.Open(name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	kind := ""
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return nil
	case unix.S_IFLNK:
		kind = "symlink"
	case unix.S_IFDIR:
		kind = "directory"
	case unix.S_IFCHR:
		kind = "character device"
	case unix.S_IFBLK:
		kind = "block device"
	case unix.S_IFIFO:
		kind = "FIFO"
	case unix.S_IFSOCK:
		kind = "socket"
	default:
		kind = fmt.Sprintf("file of type %#o", st.Mode&unix.S_IFMT)
	}
	return &NotRegularError{Name: name, Kind: kind}
}
