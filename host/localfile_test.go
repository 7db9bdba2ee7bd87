package host

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWriteLocalFileRefusesNonRegular: an operator file (plan --out,
// audit --report-file) replaces a regular file or makes a new one, and
// refuses a symlink, a directory, a character device and a FIFO, leaving
// each as it was (a symlink's target untouched).
func TestWriteLocalFileRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		make func(p string) error
		kind string // "" = accepted
	}{
		{"new", func(string) error { return nil }, ""},
		{"regular", func(p string) error { return os.WriteFile(p, []byte("old\n"), 0o644) }, ""},
		{"symlink", func(p string) error { return os.Symlink(target, p) }, "symlink"},
		{"dangling symlink", func(p string) error { return os.Symlink(filepath.Join(dir, "nothing"), p) }, "symlink"},
		{"directory", func(p string) error { return os.Mkdir(p, 0o755) }, "directory"},
		{"fifo", func(p string) error { return unix.Mkfifo(p, 0o644) }, "FIFO"},
		// /dev/null's numbers (1, 3): a device node like the one an
		// operator might name by mistake.
		{"char device", func(p string) error { return unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))) }, "character device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name)
			if err := tc.make(p); err != nil {
				if errors.Is(err, unix.EPERM) {
					t.Skipf("cannot make a %s here (not root): %v", tc.kind, err)
				}
				t.Fatal(err)
			}
			before, _ := os.Lstat(p)
			err := WriteLocalFile(p, []byte("report\n"), 0o600)
			if tc.kind == "" {
				if err != nil {
					t.Fatalf("WriteLocalFile: %v", err)
				}
				fi, err := os.Lstat(p)
				if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
					t.Fatalf("after the write: %v, %v; want a regular file, mode 0600", fi, err)
				}
				if b, _ := os.ReadFile(p); string(b) != "report\n" {
					t.Errorf("content %q", b)
				}
				return
			}
			var nr *NotRegularError
			if !errors.As(err, &nr) || nr.Kind != tc.kind || nr.Name != p {
				t.Fatalf("WriteLocalFile over a %s: %v; want a *NotRegularError naming it", tc.kind, err)
			}
			after, err := os.Lstat(p)
			if err != nil || after.Mode() != before.Mode() {
				t.Errorf("%s changed: %v -> %v (%v)", tc.name, before.Mode(), after, err)
			}
			if b, _ := os.ReadFile(target); string(b) != "precious\n" {
				t.Errorf("the symlink's target was written: %q", b)
			}
		})
	}
	// No temporary file is left behind.
	left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
