package host

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestReadStateFileBound: a state file of exactly the bound reads back
// whole; one byte past it is refused by its size, naming the file, under
// a root as on a live one.
func TestReadStateFileBound(t *testing.T) {
	root := t.TempDir()
	f, err := NewRootFS(root)
	if err != nil {
		t.Fatal(err)
	}
	const max = 1000
	for _, tc := range []struct {
		size int
		ok   bool
	}{{0, true}, {max, true}, {max + 1, false}} {
		if err := os.WriteFile(filepath.Join(root, "state"), []byte(strings.Repeat("x", tc.size)), 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := ReadStateFile(f, "/state", max)
		var sf *StateFileError
		switch {
		case tc.ok && (err != nil || len(b) != tc.size):
			t.Errorf("%d bytes: %d read, %v", tc.size, len(b), err)
		case !tc.ok && (!errors.As(err, &sf) || sf.Path != "/state" || !strings.Contains(err.Error(), "1001 bytes, over the 1000")):
			t.Errorf("%d bytes: %v, want refused by its size", tc.size, err)
		}
	}
	if _, err := ReadStateFile(f, "/missing", max); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
}

// TestReadStateFileRefusesNonRegular: a FIFO (with no writer: a plain
// read would block for ever), a directory, a device and a symlink (on a
// live host) at a state file's name are refused at once by their kind.
func TestReadStateFileRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "file"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	live, err := NewRootFS("/")
	if err != nil {
		t.Fatal(err)
	}
	for name, kind := range map[string]string{"fifo": "FIFO", "dir": "directory", "link": "symlink", "/dev/null": "character device"} {
		p := name
		if !strings.HasPrefix(p, "/") {
			p = filepath.Join(dir, name)
		}
		done := make(chan error, 1)
		go func() { _, err := ReadStateFile(live, p, 1<<20); done <- err }()
		select {
		case err := <-done:
			if !strings.Contains(errText(err), "is a "+kind+", not a regular file") {
				t.Errorf("%s: %v, want refused as a %s", name, err, kind)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: ReadStateFile blocked", name)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestReadLocalFileFIFO: a spec named as a FIFO in the filesystem is
// refused at once (open and read would wait for a writer for ever); a
// pipe handed over by descriptor (/dev/fd/N, a shell's process
// substitution) is read.
func TestReadLocalFileFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "spec.fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadLocalFile(fifo, nil); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "is a FIFO, not a regular file") {
			t.Errorf("a FIFO spec: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadLocalFile blocked on a FIFO")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() { _, _ = w.WriteString("version: 1\n"); w.Close() }()
	b, err := ReadLocalFile("/proc/self/fd/"+strconv.Itoa(int(r.Fd())), nil)
	if err != nil || string(b) != "version: 1\n" {
		t.Errorf("a pipe by descriptor: %q, %v", b, err)
	}
}
