//go:build kernlab

package guest

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/sim"
)

// activate --by fw-reset against the real kernel's RDMA users. The guest
// has no ConnectX card, so the card (its staged firmware value and its
// reset) is the simulator's; everything rdmaform reads to find the users
// of RDMA is this kernel's: usersFS answers /sys/module/ib_core/holders,
// /proc/mounts, /sys/class/nvme and /sys/kernel/config/nvmet from the
// guest's own files, usersRunner runs `rdma -j resource show cm_id` here.

// usersPaths are what rdmaform's check reads (cli/rdmausers.go).
var usersPaths = []string{"/sys/module/ib_core/holders", "/proc/mounts", "/sys/class/nvme", "/sys/kernel/config/nvmet"}

func usersPath(name string) bool {
	return slices.ContainsFunc(usersPaths, func(p string) bool { return name == p || strings.HasPrefix(name, p+"/") })
}

// usersFS is the simulated host's files, but for usersPaths, which are
// the kernel's.
type usersFS struct {
	host.FS
	live host.FS
}

func (f usersFS) pick(name string) host.FS {
	if usersPath(name) {
		return f.live
	}
	return f.FS
}
func (f usersFS) ReadFile(name string) ([]byte, error)       { return f.pick(name).ReadFile(name) }
func (f usersFS) ReadDir(name string) ([]fs.DirEntry, error) { return f.pick(name).ReadDir(name) }
func (f usersFS) Stat(name string) (fs.FileInfo, error)      { return f.pick(name).Stat(name) }
func (f usersFS) Lstat(name string) (fs.FileInfo, error)     { return f.pick(name).Lstat(name) }
func (f usersFS) Readlink(name string) (string, error)       { return f.pick(name).Readlink(name) }

// usersRunner runs the simulated host's tools, but `rdma resource show
// cm_id` here.
type usersRunner struct {
	host.Runner
	live host.Runner
}

func (r usersRunner) Run(ctx context.Context, c host.Cmd) (host.Result, error) {
	if slices.Equal(c.Args, []string{"rdma", "-j", "resource", "show", "cm_id"}) {
		return r.live.Run(ctx, c)
	}
	return r.Runner.Run(ctx, c)
}

// stagedCard makes a simulated host with a ConnectX-6 whose LINK_TYPE_P1
// ETH is staged (apply, exit 3) and returns it and the spec.
func stagedCard(t *testing.T) (dir, spec string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "host")
	st, err := sim.NewState("cx6-vpi-ib", "node1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Create(dir, st); err != nil {
		t.Fatal(err)
	}
	spec = writeSpec(t, "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params: {LINK_TYPE_P1: ETH}\n")
	if code, out := activateOn(t, nil, "--sim", dir, "apply", "--yes", "-f", spec); code != 3 {
		t.Fatalf("staging on the simulator: apply exit %d, want 3\n%s", code, out)
	}
	return dir, spec
}

// activateOn runs rdmaform in this process; with live, on the simulated
// host whose RDMA users are this kernel's.
func activateOn(t *testing.T, live *host.Host, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	env := cli.Env{Stdout: &out, Stderr: &out, Environ: append(os.Environ(), "NO_COLOR=1")}
	wrap := func(h *host.Host) *host.Host {
		if live != nil {
			h.FS = usersFS{FS: h.FS, live: live.FS}
			h.Runner = usersRunner{Runner: h.Runner, live: live.Runner}
		}
		return h
	}
	code := cli.RunWrapped(args, env, wrap)
	t.Logf("$ rdmaform %s  # exit %d\n%s", strings.Join(args, " "), code, out.String())
	return code, out.String()
}

// refusedFor checks that activate --by fw-reset on a staged card refuses
// while this kernel has the RDMA users want, naming each and changing
// nothing, and that --force resets the card anyway (exit 0, plan empty).
func refusedFor(t *testing.T, want ...string) {
	t.Helper()
	live, err := host.NewLive(os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	dir, spec := stagedCard(t)
	code, out := activateOn(t, live, "--sim", dir, "activate", "--by", "fw-reset", "-f", spec)
	if code != 1 || !strings.Contains(out, "Nothing was changed") || !strings.Contains(out, "--force") {
		t.Errorf("activate --by fw-reset with the kernel's RDMA users: exit %d, want 1, refused naming --force", code)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("the refusal does not name %q", w)
		}
	}
	if code, _ := activateOn(t, nil, "--sim", dir, "plan", "-f", spec); code != 3 {
		t.Errorf("after the refusal: plan exit %d, want 3 (still staged)", code)
	}
	if code, _ := activateOn(t, live, "--sim", dir, "activate", "--by", "fw-reset", "--force", "-f", spec); code != 0 {
		t.Errorf("activate --by fw-reset --force: exit %d, want 0", code)
	}
	if code, _ := activateOn(t, nil, "--sim", dir, "plan", "-f", spec); code != 0 {
		t.Errorf("plan after activate --force: exit %d, want 0", code)
	}
}

// notRefused checks that activate --by fw-reset resets a staged card
// without --force: this kernel has no RDMA user left.
func notRefused(t *testing.T) {
	t.Helper()
	live, err := host.NewLive(os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	dir, spec := stagedCard(t)
	if code, out := activateOn(t, live, "--sim", dir, "activate", "--by", "fw-reset", "-f", spec); code != 0 {
		t.Errorf("activate --by fw-reset with no RDMA user: exit %d, want 0\n%s", code, out)
	}
	if code, _ := activateOn(t, nil, "--sim", dir, "plan", "-f", spec); code != 0 {
		t.Errorf("plan after activate: exit %d, want 0", code)
	}
}
