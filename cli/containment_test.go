package cli_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/sim"
)

// writeScenario is a run of rdmaform on a fresh simulated host and the
// files of the host it writes (rooted paths; some it removes again
// before it ends, so they are looked for while it runs).
type writeScenario struct {
	name    string
	newHost func(t *testing.T, l *rbLab, name string) string
	spec    string
	args    []string // after --sim DIR; "SPEC" is the spec's path
	paths   []string
	// kill: the run is killed (SIGKILL) once it waits for confirmation.
	kill bool
}

// simHost makes a simulated host of a profile, changed by mutate, with
// rdma-core's udev helper.
func simHost(profile string, mutate func(st *sim.State)) func(t *testing.T, l *rbLab, name string) string {
	return func(t *testing.T, l *rbLab, name string) string {
		t.Helper()
		st, err := sim.NewState(profile, "node1", 0)
		if err != nil {
			t.Fatal(err)
		}
		if mutate != nil {
			mutate(st)
		}
		h := filepath.Join(l.dir, name)
		s, err := sim.Create(h, st)
		if err != nil {
			t.Fatal(err)
		}
		if st.OpenSM != nil {
			sh, err := s.Host()
			if err != nil {
				t.Fatal(err)
			}
			if err := sh.Systemd.Start(context.Background(), "opensm.service"); err != nil {
				t.Fatal(err)
			}
		}
		f := filepath.Join(h, "usr/lib/udev/rdma_rename")
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, nil, 0o755); err != nil {
			t.Fatal(err)
		}
		return h
	}
}

// writeScenarios are runs that, between them, write every file rdmaform
// writes on a host: the confirm window's journal, its copy for the
// boot, the confirm marker, the rollback marker, the watcher's log and
// the apply lock; the staged-firmware ledger and the reboot markers;
// udev rules, modprobe.d and modules-load.d; the boot unit, its enabling
// link and its spec; opensm's files.
var writeScenarios = []writeScenario{{
	name:    "an apply killed in its confirm window, rolled back by the watcher",
	newHost: simHost("vm-soft", nil),
	spec:    "version: 1\nmodules: [rdma_rxe]\nrxe:\n  - {name: rxe0, netdev: enp1s0}\n",
	args:    []string{"apply", "--yes", "--confirm-timeout", "1s", "-f", "SPEC"},
	paths: []string{"/run/rdmaform.lock", "/run/rdmaform/rollback.log", "/run/rdmaform/rolled-back",
		"/run/rdmaform/rollback.json", "/var/lib/rdmaform/unconfirmed.json", "/run/rdmaform/confirm-pending"},
	kill: true,
}, {
	name:    "a firmware change staged",
	newHost: simHost("cx6-vpi-ib", nil),
	spec:    "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params: {LINK_TYPE_P1: ETH}\n",
	args:    []string{"apply", "--yes", "--allow-firmware", "-f", "SPEC"},
	paths:   []string{"/var/lib/rdmaform/staged.json", "/run/reboot-required", "/run/reboot-required.pkgs"},
}, {
	name:    "names, the RDMA netns mode, modules and the boot unit",
	newHost: simHost("cx5-roce", nil),
	spec:    "version: 1\nmodules: [rdma_ucm]\nrdma: {netns_mode: exclusive}\npersistence: boot-unit\ndevices:\n  - pci: 0000:5e:00.1\n    names: {rdma: rail1, netdev: rail1eth}\n",
	args:    []string{"apply", "--yes", "-f", "SPEC"},
	paths: []string{"/etc/udev/rules.d/59-rdmaform-names.rules", "/etc/modprobe.d/rdmaform.conf", "/etc/modules-load.d/rdmaform.conf",
		"/etc/systemd/system/rdmaform.service", "/etc/systemd/system/multi-user.target.wants/rdmaform.service", "/etc/rdmaform/boot.yaml"},
}, {
	name: "the subnet manager",
	newHost: simHost("cx6-vpi-ib", func(st *sim.State) {
		st.OpenSM = &sim.OpenSMState{Layout: "debian"}
		st.Tools = append(st.Tools, "sminfo")
	}),
	spec:  "version: 1\nsubnet_manager:\n  priority: 5\n  port: {device: mlx5_1, port: 1}\n  partitions:\n    - name: storage\n      pkey: 0x8002\n      members: [{guid: all_cas, membership: limited}, {guid: self, membership: full}]\n",
	args:  []string{"apply", "--yes", "-f", "SPEC"},
	paths: []string{"/etc/opensm/partitions.conf", "/etc/opensm/opensm.conf", "/etc/default/opensm"},
}}

// TestWritesStayInTheTree: every write rdmaform makes on a host goes
// through host.FS, whose containment keeps it inside the --sim or --root
// tree. First each scenario runs on a fresh host with nothing planted,
// and each path it lists is shown written (so the list is what rdmaform
// writes, not a guess). Then, for each path, on a fresh host, a symlink
// is planted there before the run: one climbing out of the tree to a
// file outside (relative), one naming that file by its absolute path
// (read inside the tree, as in a chroot), and the same two at the
// path's directory, to the directory outside. Whatever the run says of
// the link, the file outside keeps its content, and nothing is added
// next to it. The watcher (a real rdmaform, started by the apply) runs
// too: the apply is killed while it waits, and the watcher rolls back at
// the deadline, writing its log. The simulator's own stand-ins for the
// host's programs (systemctl enable, the opensm package) write inside
// the tree as well.
func TestWritesStayInTheTree(t *testing.T) {
	l := newRBLab(t)
	var mu sync.Mutex
	n := 0
	host := func(t *testing.T, sc writeScenario, what string) string {
		t.Helper()
		mu.Lock()
		n++
		name := fmt.Sprintf("%s%d", what, n)
		mu.Unlock()
		return sc.newHost(t, l, name)
	}
	run := func(t *testing.T, sc writeScenario, h string, seen func()) (int, string) {
		t.Helper()
		spec := filepath.Join(h+".spec", "spec.yaml")
		if err := os.MkdirAll(filepath.Dir(spec), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(spec, []byte(sc.spec), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"--sim", h}
		for _, a := range sc.args {
			args = append(args, strings.ReplaceAll(a, "SPEC", spec))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, l.bin, args...)
		cmd.Env = append(os.Environ(), "NO_COLOR=1")
		out := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
		killed := false
	wait:
		for {
			select {
			case err = <-done:
				break wait
			case <-time.After(20 * time.Millisecond):
				if seen != nil {
					seen()
				}
				if sc.kill && !killed && strings.Contains(out.String(), "to keep them") {
					// Killed while it waits: the watcher rolls back, and
					// says so in its log.
					_ = cmd.Process.Kill()
					killed = true
				}
			}
		}
		// The watcher the apply started outlives it: it ends once the
		// journal is gone (the apply's own rollback at the deadline, or
		// its own); one still there after half a minute is stopped.
		if m := watcherPID.FindStringSubmatch(out.String()); m != nil {
			pid, _ := strconv.Atoi(m[1])
			start := time.Now()
			for syscall.Kill(pid, 0) == nil && time.Since(start) < 30*time.Second {
				time.Sleep(50 * time.Millisecond)
			}
			if syscall.Kill(pid, 0) == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("the watcher, pid %d, was still running 30s after the apply", pid)
			}
		}
		code := 0
		if ee, ok := err.(*exec.ExitError); ok && killed {
			code = -1
		} else if ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String()
	}
	// plant puts a symlink of a kind at the path p (at "file") or its
	// directory, to a file (or directory) outside the tree, runs the
	// scenario, and checks the outside is as it was.
	plant := func(t *testing.T, sc writeScenario, p, at, kind string) {
		t.Helper()
		outside := t.TempDir()
		victim := filepath.Join(outside, "victim")
		if err := os.WriteFile(victim, []byte("outside\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		h := host(t, sc, "planted")
		link, target := filepath.Join(h, p), victim
		if at == "directory" {
			link, target = filepath.Dir(link), outside
		}
		if err := os.RemoveAll(link); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if kind == "relative" {
			rel, err := filepath.Rel(filepath.Dir(link), target)
			if err != nil {
				t.Fatal(err)
			}
			target = rel
		}
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		code, out := run(t, sc, h, nil)
		if b, err := os.ReadFile(victim); err != nil || string(b) != "outside\n" {
			t.Errorf("a %s symlink at the %s %s (to %s): the file outside the tree now holds %q (%v); the run exited %d:\n%s", kind, at, p, target, b, err, code, out)
		}
		if names := dirNames(t, outside); len(names) != 1 {
			t.Errorf("a %s symlink at the %s %s (to %s): outside the tree now %v; the run exited %d:\n%s", kind, at, p, target, names, code, out)
		}
	}
	for _, sc := range writeScenarios {
		t.Run(sc.name, func(t *testing.T) {
			h := host(t, sc, "plain")
			// A path is written when it appears, or its content changes.
			read := func(p string) (string, bool) {
				b, err := os.ReadFile(filepath.Join(h, p))
				if err != nil {
					if l, lerr := os.Readlink(filepath.Join(h, p)); lerr == nil {
						return "-> " + l, true
					}
					return "", false
				}
				return string(b), true
			}
			before := map[string]string{}
			for _, p := range sc.paths {
				if b, ok := read(p); ok {
					before[p] = b
				}
			}
			written := map[string]bool{}
			look := func() {
				for _, p := range sc.paths {
					b, ok := read(p)
					if was, existed := before[p]; ok && (!existed || b != was) {
						written[p] = true
					}
				}
			}
			code, out := run(t, sc, h, look)
			look()
			for _, p := range sc.paths {
				if !written[p] {
					t.Errorf("%s (exit %d) did not write %s:\n%s", strings.Join(sc.args, " "), code, p, out)
				}
			}
			if t.Failed() {
				return
			}
			for _, p := range sc.paths {
				t.Run(p, func(t *testing.T) {
					t.Parallel()
					for _, at := range []string{"file", "directory"} {
						for _, kind := range []string{"relative", "absolute"} {
							plant(t, sc, p, at, kind)
						}
					}
				})
			}
		})
	}
}

// lockedBuffer is a command's output, read while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// watcherPID finds the watcher's PID in apply's words.
var watcherPID = regexp.MustCompile(`rollback armed \(watcher pid ([0-9]+)\)`)

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}
