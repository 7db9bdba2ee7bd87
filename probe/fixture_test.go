package probe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/host"
)

// scripted is a host.Runner for the tests that cannot run the real tool
// here (no RDMA device): it answers each program with what run returns
// and records every command line. The outputs it gives are real samples
// of testdata/real where a test needs a tool's words.
type scripted struct {
	mu    sync.Mutex
	calls []string
	run   func(ctx context.Context, c host.Cmd) (host.Result, error)
}

func (s *scripted) Run(ctx context.Context, c host.Cmd) (host.Result, error) {
	s.mu.Lock()
	s.calls = append(s.calls, c.String())
	s.mu.Unlock()
	return s.run(ctx, c)
}

func (s *scripted) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// looking is a scripted runner that can also tell which programs are
// installed, as the real and simulated runners can.
type looking struct {
	*scripted
	installed map[string]bool
}

func (l looking) LookPath(name string) (string, error) {
	if !l.installed[name] {
		return "", fmt.Errorf("%s: %w on PATH", name, host.ErrNotFound)
	}
	return "/usr/bin/" + name, nil
}

// sample reads a real output pair of testdata/real.
func sample(t *testing.T, name string) host.Result {
	t.Helper()
	out, err := os.ReadFile(filepath.Join("testdata/real", name+".stdout"))
	if err != nil {
		t.Fatal(err)
	}
	errb, err := os.ReadFile(filepath.Join("testdata/real", name+".stderr"))
	if err != nil {
		t.Fatal(err)
	}
	return host.Result{Stdout: out, Stderr: errb}
}

// exitWith is a sample as the runner returns it for a non-zero exit.
func exitWith(c host.Cmd, r host.Result, code int) (host.Result, error) {
	return r, &host.ExitError{Cmd: c, Code: code, Stdout: r.Stdout, Stderr: r.Stderr}
}

// sysfsTree writes a sysfs fixture under root: path -> content (a
// trailing newline is added, as sysfs attributes have one).
func sysfsTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, v := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// rdmaFixture is the sysfs of two RDMA devices as the kernel shows them:
// rxe0, a Soft-RoCE device on rfa0 whose GID 1 is the RoCE v2 GID of
// 192.0.2.1 (the lab's address), and ibx0, an InfiniBand port with LID 2
// and port GUID 0x0002c903000e0b72.
func rdmaFixture(t *testing.T, root string) {
	t.Helper()
	const rxe = "sys/class/infiniband/rxe0/"
	const ib = "sys/class/infiniband/ibx0/"
	sysfsTree(t, root, map[string]string{
		rxe + "parent":                    "rfa0",
		rxe + "node_type":                 "1: CA",
		rxe + "ports/1/state":             "4: ACTIVE",
		rxe + "ports/1/phys_state":        "5: LinkUp",
		rxe + "ports/1/link_layer":        "Ethernet",
		rxe + "ports/1/gids/0":            "fe80:0000:0000:0000:0000:00ff:fe00:0001",
		rxe + "ports/1/gid_attrs/types/0": "IB/RoCE v1",
		rxe + "ports/1/gids/1":            "0000:0000:0000:0000:0000:ffff:c000:0201",
		rxe + "ports/1/gid_attrs/types/1": "RoCE v2",
		rxe + "ports/1/gid_attrs/ndevs/1": "rfa0",
		ib + "node_type":                  "1: CA",
		ib + "ports/1/state":              "4: ACTIVE",
		ib + "ports/1/phys_state":         "5: LinkUp",
		ib + "ports/1/link_layer":         "InfiniBand",
		ib + "ports/1/lid":                "0x2",
		ib + "ports/1/sm_lid":             "0x1",
		ib + "ports/1/gids/0":             "fe80:0000:0000:0000:0002:c903:000e:0b72",
	})
}

// lines joins command lines for messages.
func lines(cmds []string) string { return strings.Join(cmds, "\n") }

// scriptedKernel makes a test's host a running one (host.Host.Offline
// is false), as the probes need: its commands are the scripted runner's
// or run in the lab's network namespace, and it mounts nothing.
type scriptedKernel struct{}

func (scriptedKernel) EnsureConfigfs() error {
	return errors.New("the probe tests' hosts mount nothing")
}

// TestOfflineHostSendsNothing: on an offline host (a --root tree: no
// kernel of its own) Run, Responders and Serve refuse with ErrOffline
// and run no command.
func TestOfflineHostSendsNothing(t *testing.T) {
	r := &scripted{run: func(_ context.Context, c host.Cmd) (host.Result, error) {
		t.Errorf("ran %s", c)
		return host.Result{}, nil
	}}
	h := fixtureHost(t, r)
	h.Kernel = nil
	spec := parseSpec(t, "version: 1\nprobes:\n  - name: p\n    ping: {to: 127.0.0.1}\n  - name: cm\n    rdma_cm: {to: 192.0.2.1}\n")
	if res, err := Run(context.Background(), h, spec); !errors.Is(err, ErrOffline) || res != nil {
		t.Errorf("Run: %v, %v; want ErrOffline", res, err)
	}
	if rs, err := Responders(context.Background(), h, spec); !errors.Is(err, ErrOffline) || rs != nil {
		t.Errorf("Responders: %v, %v; want ErrOffline", rs, err)
	}
	if err := Serve(context.Background(), h, []Responder{{Args: []string{"rping", "-s"}, Probes: []string{"cm"}}}, time.Second, &strings.Builder{}); !errors.Is(err, ErrOffline) {
		t.Errorf("Serve: %v; want ErrOffline", err)
	}
}
