package cli_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rdmaform/rdmaform/cli/clitest"
)

// TestOutputFilesRefuseNonRegular: plan --out and audit --report-file
// refuse a symlink, a device node, a FIFO and a directory before reading
// the host (exit 1, the name and its kind in the error, the node as it
// was), and write a new file or replace a regular one.
func TestOutputFilesRefuseNonRegular(t *testing.T) {
	dir := t.TempDir()
	simDir := filepath.Join(dir, "host")
	if code, _, stderr := clitest.Run(t, "sim", "new", simDir, "--profile", "cx5-roce"); code != 0 {
		t.Fatal(stderr)
	}
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const spec = "../examples/roce.yaml"
	commands := map[string]func(file string) []string{
		"plan --out":          func(f string) []string { return []string{"--sim", simDir, "plan", "-f", spec, "--out", f} },
		"audit --report-file": func(f string) []string { return []string{"--sim", simDir, "audit", "-f", spec, "--report-file", f} },
	}
	nodes := []struct {
		name string
		make func(p string) error
		kind string
	}{
		{"symlink", func(p string) error { return os.Symlink(target, p) }, "symlink"},
		{"char device", func(p string) error { return unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))) }, "character device"},
		{"fifo", func(p string) error { return unix.Mkfifo(p, 0o644) }, "FIFO"},
		{"directory", func(p string) error { return os.Mkdir(p, 0o755) }, "directory"},
	}
	for cmdName, args := range commands {
		for _, n := range nodes {
			p := filepath.Join(dir, strings.ReplaceAll(cmdName+" "+n.name, " ", "_"))
			if err := n.make(p); err != nil {
				if errors.Is(err, unix.EPERM) {
					t.Logf("no %s here (not root): %v", n.name, err)
					continue
				}
				t.Fatalf("%s: %v", n.name, err)
			}
			before, _ := os.Lstat(p)
			code, stdout, stderr := clitest.Run(t, args(p)...)
			if code != 1 || !strings.Contains(stderr, p+" is a "+n.kind+", not a regular file") || stdout != "" {
				t.Errorf("%s onto a %s: exit %d, stdout %q, stderr %q; want exit 1 refusing it before reading the host", cmdName, n.name, code, stdout, stderr)
			}
			if after, err := os.Lstat(p); err != nil || after.Mode() != before.Mode() {
				t.Errorf("%s onto a %s: it became %v (%v)", cmdName, n.name, after.Mode(), err)
			}
		}
		for _, existing := range []bool{false, true} {
			p := filepath.Join(dir, strings.ReplaceAll(cmdName, " ", "_")+map[bool]string{false: ".new", true: ".old"}[existing])
			if existing {
				if err := os.WriteFile(p, []byte("old\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if code, _, stderr := clitest.Run(t, args(p)...); code != 2 {
				t.Errorf("%s onto %s: exit %d, want 2 (changes): %s", cmdName, p, code, stderr)
			}
			if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() || fi.Size() < 10 {
				t.Errorf("%s onto %s: %v, %v", cmdName, p, fi, err)
			}
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "precious\n" {
		t.Errorf("a symlink's target was written: %q", b)
	}
}
