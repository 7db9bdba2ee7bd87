package host

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOpenLogStaysInTheTree: the log a detached watcher or a service
// writes to is opened as the rest of rdmaform's writes are: inside the
// --root tree. A symlink there that climbs out is refused and the file
// outside stays as it was; an absolute one is read inside the tree (as
// in a chroot), so the log goes to the tree's file of that name; a FIFO
// is refused at once (it would block the open) and so is a directory;
// a regular file, or none, is appended to.
func TestOpenLogStaysInTheTree(t *testing.T) {
	const log = "/run/rdmaform/rollback.log"
	outside := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(outside, []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tree := func(t *testing.T, plant func(real string)) (FS, string) {
		t.Helper()
		root := t.TempDir()
		real := filepath.Join(root, log)
		if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
			t.Fatal(err)
		}
		if plant != nil {
			plant(real)
		}
		fsys, err := NewRootFS(root)
		if err != nil {
			t.Fatal(err)
		}
		return fsys, root
	}
	appendTo := func(fsys FS) (string, error) {
		f, p, err := OpenLog(fsys, log)
		if err != nil {
			return "", err
		}
		defer f.Close()
		_, err = f.WriteString("watcher\n")
		return p, err
	}
	t.Run("a symlink out of the tree", func(t *testing.T) {
		fsys, _ := tree(t, func(real string) {
			rel, err := filepath.Rel(filepath.Dir(real), outside)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(rel, real); err != nil {
				t.Fatal(err)
			}
		})
		if _, err := appendTo(fsys); !errors.Is(err, ErrEscapes) {
			t.Errorf("OpenLog through %s: %v, want ErrEscapes", log, err)
		}
	})
	t.Run("a directory symlink out of the tree", func(t *testing.T) {
		fsys, _ := tree(t, func(real string) {
			dir := filepath.Dir(real)
			if err := os.Remove(dir); err != nil {
				t.Fatal(err)
			}
			rel, err := filepath.Rel(filepath.Dir(dir), filepath.Dir(outside))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(rel, dir); err != nil {
				t.Fatal(err)
			}
		})
		if _, err := appendTo(fsys); !errors.Is(err, ErrEscapes) {
			t.Errorf("OpenLog through /run/rdmaform: %v, want ErrEscapes", err)
		}
	})
	t.Run("an absolute symlink", func(t *testing.T) {
		fsys, root := tree(t, func(real string) {
			if err := os.Symlink(outside, real); err != nil {
				t.Fatal(err)
			}
			// The tree has the directory the link names.
			in := filepath.Join(strings.TrimSuffix(real, log), filepath.Dir(outside))
			if err := os.MkdirAll(in, 0o755); err != nil {
				t.Fatal(err)
			}
		})
		p, err := appendTo(fsys)
		if err != nil || p != filepath.Join(root, outside) {
			t.Fatalf("OpenLog: %s, %v; want the tree's %s", p, err, outside)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != "watcher\n" {
			t.Errorf("the tree's file: %q %v", b, err)
		}
	})
	t.Run("a FIFO", func(t *testing.T) {
		fsys, _ := tree(t, func(real string) {
			if err := syscall.Mkfifo(real, 0o600); err != nil {
				t.Fatal(err)
			}
		})
		var nr *NotRegularError
		if _, err := appendTo(fsys); !errors.As(err, &nr) && !errors.Is(err, syscall.ENXIO) {
			t.Errorf("OpenLog of a FIFO: %v, want it refused", err)
		}
	})
	t.Run("a directory", func(t *testing.T) {
		fsys, _ := tree(t, func(real string) {
			if err := os.Mkdir(real, 0o755); err != nil {
				t.Fatal(err)
			}
		})
		if _, err := appendTo(fsys); err == nil {
			t.Error("OpenLog of a directory: no error")
		}
	})
	t.Run("a regular file is appended to", func(t *testing.T) {
		fsys, root := tree(t, func(real string) {
			if err := os.WriteFile(real, []byte("before\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		})
		if _, err := appendTo(fsys); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(root, log)); err != nil || string(b) != "before\nwatcher\n" {
			t.Errorf("log: %q %v", b, err)
		}
	})
	if b, err := os.ReadFile(outside); err != nil || string(b) != "outside\n" {
		t.Fatalf("the file outside the tree: %q %v", b, err)
	}
}
