package host

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func tree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "sys/devices/pci0000:00/0000:3b:00.0/infiniband/mlx5_0"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "sys/devices/pci0000:00/0000:3b:00.0/infiniband/mlx5_0/fw_ver"), []byte("20.35.1012\n"), 0o644))
	must(os.MkdirAll(filepath.Join(dir, "sys/class/infiniband"), 0o755))
	must(os.Symlink("../../devices/pci0000:00/0000:3b:00.0/infiniband/mlx5_0", filepath.Join(dir, "sys/class/infiniband/mlx5_0")))
	must(os.Symlink("/sys/devices/pci0000:00", filepath.Join(dir, "sys/abs")))
	must(os.Symlink("../../../../../../../../etc", filepath.Join(dir, "sys/class/escape")))
	must(os.MkdirAll(filepath.Join(dir, "etc"), 0o755))
	return dir
}

func TestRootFSResolvesInsideRoot(t *testing.T) {
	dir := tree(t)
	f, err := NewRootFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
		wantErr          error
	}{
		{"relative symlink", "/sys/class/infiniband/mlx5_0/fw_ver", "20.35.1012", nil},
		{"absolute symlink is read inside the root", "/sys/abs/0000:3b:00.0/infiniband/mlx5_0/fw_ver", "20.35.1012", nil},
		{"dot-dot inside the root", "/sys/class/../class/infiniband/mlx5_0/fw_ver", "20.35.1012", nil},
		{"dot-dot above the root", "/../etc/passwd", "", ErrEscapes},
		{"symlink climbing above the root", "/sys/class/escape/passwd", "", ErrEscapes},
		{"missing file", "/sys/class/infiniband/mlx5_9/fw_ver", "", fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadAttr(f, tc.path)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ReadAttr = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestRootFSRefusesRelativePaths(t *testing.T) {
	f, _ := NewRootFS(t.TempDir())
	if _, err := f.ReadFile("etc/passwd"); err == nil {
		t.Fatal("a relative path must be refused")
	}
	if _, err := f.ReadFile("/etc/x\x00y"); err == nil {
		t.Fatal("a NUL in a path must be refused")
	}
}

func TestRootFSWritesStayInside(t *testing.T) {
	dir := tree(t)
	f, _ := NewRootFS(dir)
	if err := f.WriteFile("/etc/modules-load.d/rdmaform.conf", []byte("rdma_cm\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "etc/modules-load.d/rdmaform.conf"))
	if err != nil || string(b) != "rdma_cm\n" {
		t.Fatalf("file under root = %q, %v", b, err)
	}
	if err := f.WriteFile("/sys/class/escape/evil", []byte("x"), 0o644); !errors.Is(err, ErrEscapes) {
		t.Fatalf("write through an escaping symlink: err = %v, want ErrEscapes", err)
	}
	// WriteAttr never creates.
	if err := f.WriteAttr("/sys/new_attr", []byte("1\n")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("WriteAttr of a missing attribute: err = %v, want not exist", err)
	}
}

func TestExecRunner(t *testing.T) {
	r := &ExecRunner{Env: []string{"PATH=" + os.Getenv("PATH"), "LANG=pl_PL.UTF-8", "LC_MESSAGES=pl_PL.UTF-8", "KEEP=1"}}
	ctx := context.Background()
	res, err := r.Run(ctx, Cmd{Args: []string{"env"}})
	if err != nil {
		t.Fatal(err)
	}
	env := string(res.Stdout)
	if !strings.Contains(env, "LC_ALL=C\n") || strings.Contains(env, "pl_PL") || !strings.Contains(env, "KEEP=1\n") {
		t.Errorf("environment must pass through with LC_ALL=C and no other locale:\n%s", env)
	}

	_, err = r.Run(ctx, Cmd{Args: []string{"sh", "-c", "echo '-E- Failed to open the device'; echo oops >&2; exit 3"}})
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 3 || ee.Message() != "oops" {
		t.Fatalf("err = %#v, want exit 3 with stderr message", err)
	}
	_, err = r.Run(ctx, Cmd{Args: []string{"sh", "-c", "echo '-E- Failed to open the device'; exit 3"}})
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), `sh -c "echo '-E- Failed to open the device'; exit 3": exit status 3: -E- Failed to open the device`) {
		t.Fatalf("err = %v: want the command line, exit code and the tool's -E- line", err)
	}
	_, err = r.Run(ctx, Cmd{Args: []string{"sleep", "10"}, Timeout: 100 * time.Millisecond})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	_, err = r.Run(ctx, Cmd{Args: []string{"rdmaform-no-such-tool"}})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	// Dir: the programs' working directory.
	dir := t.TempDir()
	res, err = (&ExecRunner{Env: r.Env, Dir: dir}).Run(ctx, Cmd{Args: []string{"pwd"}})
	if err != nil || strings.TrimSpace(string(res.Stdout)) != dir {
		t.Errorf("pwd with Dir %s: %q, %v", dir, res.Stdout, err)
	}
}

func TestErrnoSurvivesWriteAttr(t *testing.T) {
	dir := t.TempDir()
	f, _ := NewRootFS(dir)
	os.MkdirAll(filepath.Join(dir, "d"), 0o755)
	err := f.WriteAttr("/d", []byte("x"))
	if !errors.Is(err, syscall.EISDIR) {
		t.Fatalf("err = %v, want EISDIR to be recognisable", err)
	}
}

func TestExecRunnerUsesTheCallersPath(t *testing.T) {
	dir := t.TempDir()
	tool := filepath.Join(dir, "rdmaform-test-tool")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\necho from-callers-path\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := &ExecRunner{Env: []string{"PATH=" + dir}}
	res, err := r.Run(context.Background(), Cmd{Args: []string{"rdmaform-test-tool"}})
	if err != nil || string(res.Stdout) != "from-callers-path\n" {
		t.Fatalf("run = %q, %v; want the tool from the caller's PATH", res.Stdout, err)
	}
	r = &ExecRunner{Env: []string{"PATH=/nonexistent"}}
	if _, err := r.Run(context.Background(), Cmd{Args: []string{"sh", "-c", "true"}}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a program missing from the caller's PATH: err = %v, want ErrNotFound", err)
	}
}
