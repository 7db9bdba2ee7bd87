// Package systemdlab starts a real systemd manager for a test: a
// `systemd --user` instance whose home, runtime and configuration
// directories are the test's own, talked to over its private D-Bus socket.
//
// A systemd manager takes over the cgroup it starts in: it moves every
// process of that cgroup into its own init.scope. Started from the cgroup
// the test runs in (often the root cgroup), it would move processes of the
// machine. So the manager is always started from a dedicated cgroup
// created for it: the test binary re-executes itself as a launcher, the
// launcher writes its own PID into the new cgroup's cgroup.procs in every
// hierarchy (name=systemd and the unified one on a hybrid cgroup v1
// machine, the unified one on v2), and only then execs systemd, which
// keeps the launcher's PID. If any step fails the launcher exits without
// starting systemd. The launcher runs in a private mount namespace, where
// it mounts a tmpfs over /run/systemd to tell the user manager it may run
// and binds the lab's log file over /dev/console, where the manager logs.
// Cleanup stops the manager by PID, kills what is left
// in the lab's cgroup (processes the manager started, nothing else can be
// there) and removes the cgroup.
//
// A test binary that dies before its cleanup (SIGKILL, Ctrl-C, its
// -timeout) leaves nothing either: the manager gets SIGKILL from the
// kernel as its parent dies (reap.Start), and the guardian (reap.Guard)
// kills what the manager started, which stays in the lab's cgroup, and
// removes the cgroups and the lab's directory.
//
// The re-exec is caught by this package's init, so any test binary that
// imports it can start a lab; nothing happens unless the launcher
// environment variables are set.
package systemdlab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
	"github.com/rdmaform/rdmaform/internal/testlab/need"
	"github.com/rdmaform/rdmaform/internal/testlab/reap"
)

// Environment of the launcher re-exec.
const (
	envLaunch  = "RDMAFORM_SYSTEMDLAB_LAUNCH"  // the systemd binary to exec
	envCgroups = "RDMAFORM_SYSTEMDLAB_CGROUPS" // cgroup directories, ':'-separated
	envLog     = "RDMAFORM_SYSTEMDLAB_LOG"     // the lab's log file
)

// RequireEnv makes missing prerequisites fail the test instead of skipping.
const RequireEnv = need.RequireEnv

func init() {
	bin := os.Getenv(envLaunch)
	if bin == "" {
		return
	}
	for _, dir := range strings.Split(os.Getenv(envCgroups), ":") {
		if dir == "" {
			continue
		}
		f := filepath.Join(dir, "cgroup.procs")
		if err := os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "systemdlab launcher: joining %s: %v; not starting systemd\n", f, err)
			os.Exit(111)
		}
	}
	// A user manager refuses to run unless systemd is the init system
	// (/run/systemd/system exists). In the launcher's private mount
	// namespace (Start asks for one) an empty tmpfs over /run/systemd
	// holds that directory; the machine's /run is never touched.
	if err := syscall.Mount("tmpfs", "/run/systemd", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0755"); err != nil {
		fmt.Fprintf(os.Stderr, "systemdlab launcher: mounting a private /run/systemd: %v; not starting systemd\n", err)
		os.Exit(113)
	}
	if err := os.Mkdir("/run/systemd/system", 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "systemdlab launcher: %v; not starting systemd\n", err)
		os.Exit(113)
	}
	// The manager logs to /dev/console whatever its stderr is; in this
	// namespace /dev/console is the lab's log file, so the machine's
	// console never sees it.
	if err := syscall.Mount(os.Getenv(envLog), "/dev/console", "", syscall.MS_BIND, ""); err != nil {
		fmt.Fprintf(os.Stderr, "systemdlab launcher: binding the log over /dev/console: %v; not starting systemd\n", err)
		os.Exit(113)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envLaunch+"=") && !strings.HasPrefix(kv, envCgroups+"=") && !strings.HasPrefix(kv, envLog+"=") {
			env = append(env, kv)
		}
	}
	err := syscall.Exec(bin, []string{"systemd", "--user", "--log-target=console", "--log-level=info"}, env)
	fmt.Fprintf(os.Stderr, "systemdlab launcher: exec %s: %v\n", bin, err)
	os.Exit(112)
}

// Lab is one running systemd user manager.
type Lab struct {
	// Dir holds everything of the lab: home, runtime and config dirs.
	Dir string
	// UnitDir is the manager's first unit directory
	// ($XDG_CONFIG_HOME/systemd/user): drop test units here (AddUnit).
	// Enabling a unit puts its symlinks here too.
	UnitDir string
	// Address is the D-Bus address of the manager's private socket.
	Address string
	// PID is the manager's process ID.
	PID int

	cmd      *exec.Cmd
	cgroups  []string
	log      string
	released []func() // the guardian's hold on the cgroups and Dir
}

var seq atomic.Int64

// skipOrFail skips the test with the reason, or fails it when the
// environment demands the lab.
func skipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	need.Skip(t, "systemd lab: "+format, args...)
}

func systemdBinary() string {
	for _, p := range []string{"/usr/lib/systemd/systemd", "/lib/systemd/systemd"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// cgroupRoots returns the hierarchies a systemd manager uses: the named
// systemd hierarchy and the unified one on a hybrid machine, or the
// unified hierarchy mounted at /sys/fs/cgroup on a pure v2 machine.
func cgroupRoots() ([]string, error) {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return []string{"/sys/fs/cgroup"}, nil
	}
	var roots []string
	for _, d := range []string{"/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"} {
		if _, err := os.Stat(filepath.Join(d, "cgroup.procs")); err == nil {
			roots = append(roots, d)
		}
	}
	if len(roots) == 0 {
		return nil, errors.New("no systemd or unified cgroup hierarchy under /sys/fs/cgroup")
	}
	return roots, nil
}

// Option changes how Start runs the manager.
type Option func(*options)

type options struct{ bus string }

// WithBus has the manager join the D-Bus bus at address as its API bus
// (DBUS_SESSION_BUS_ADDRESS), besides its private socket: the bus's
// clients reach it as org.freedesktop.systemd1, as a host's system bus
// has the system manager. A manager connects to its API bus only while
// its dbus.socket and dbus.service units run (manager_dbus_is_running in
// systemd's src/core/manager.c), so the lab adds stand-ins for those two
// (a socket nobody uses, a sleeping service), starts them, and waits
// until the bus has the name.
func WithBus(address string) Option { return func(o *options) { o.bus = address } }

// Start starts a systemd user manager in a new cgroup and waits until it
// runs. It skips the test (or fails it, with RDMAFORM_REQUIRE_LAB=1) when
// not root, when systemd is not installed or cgroups cannot be created.
// Cleanup is registered on t.
func Start(t testing.TB, opts ...Option) *Lab {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if os.Geteuid() != 0 {
		skipOrFail(t, "needs root (to create a cgroup for the manager)")
	}
	bin := systemdBinary()
	if bin == "" {
		skipOrFail(t, "no systemd binary (apt-get install -y --no-install-recommends systemd)")
	}
	roots, err := cgroupRoots()
	if err != nil {
		skipOrFail(t, "%v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatalf("systemd lab: %v", err)
	}

	dir, err := os.MkdirTemp("", "rdmaform-systemdlab-")
	if err != nil {
		t.Fatal(err)
	}
	l := &Lab{Dir: dir, UnitDir: filepath.Join(dir, "config", "systemd", "user"), log: filepath.Join(dir, "systemd.log")}
	t.Cleanup(func() { l.stop(t) })
	l.guard(t, reap.Dir, dir)
	runtime := filepath.Join(dir, "run")
	for _, d := range []string{runtime, l.UnitDir, filepath.Join(dir, "home"), filepath.Join(dir, "data"), filepath.Join(dir, "state"), filepath.Join(dir, "cache")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	l.Address = "unix:path=" + filepath.Join(runtime, "systemd", "private")

	name := fmt.Sprintf("rdmaform-systemdlab-%d-%d", os.Getpid(), seq.Add(1))
	for _, r := range roots {
		cg := filepath.Join(r, name)
		// Mkdir, not MkdirAll: the cgroup must be new, never one in use.
		if err := os.Mkdir(cg, 0o755); err != nil {
			skipOrFail(t, "creating cgroup %s: %v", cg, err)
		}
		l.cgroups = append(l.cgroups, cg)
		l.guard(t, reap.Cgroup, cg)
	}

	logf, err := os.Create(l.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(self)
	cmd.Env = []string{
		envLaunch + "=" + bin,
		envCgroups + "=" + strings.Join(l.cgroups, ":"),
		envLog + "=" + l.log,
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + filepath.Join(dir, "home"),
		"XDG_RUNTIME_DIR=" + runtime,
		"XDG_CONFIG_HOME=" + filepath.Join(dir, "config"),
		"XDG_DATA_HOME=" + filepath.Join(dir, "data"),
		"XDG_STATE_HOME=" + filepath.Join(dir, "state"),
		"XDG_CACHE_HOME=" + filepath.Join(dir, "cache"),
		"LC_ALL=C",
	}
	if o.bus != "" {
		cmd.Env = append(cmd.Env, "DBUS_SESSION_BUS_ADDRESS="+o.bus)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, so a terminal's signals reach only the test.
	// A private mount namespace (Go makes every mount in it private
	// before the launcher runs), for the launcher's /run/systemd.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Unshareflags: syscall.CLONE_NEWNS}
	if err := reap.Start(cmd); err != nil {
		t.Fatalf("systemd lab: starting the launcher: %v", err)
	}
	l.cmd, l.PID = cmd, cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	l.cmd = cmd
	if err := l.waitRunning(exited, 30*time.Second); err != nil {
		t.Fatalf("systemd lab: %v\n%s", err, l.Log())
	}
	if o.bus != "" {
		l.AddUnit(t, "dbus.socket", "[Socket]\nListenStream=%t/rdmaform-systemdlab-unused-bus\n")
		l.AddUnit(t, "dbus.service", "[Service]\nExecStart=/bin/sleep infinity\n")
		l.StartUnit(t, "dbus.socket")
		l.StartUnit(t, "dbus.service")
		if err := waitName(o.bus, "org.freedesktop.systemd1", 30*time.Second); err != nil {
			t.Fatalf("systemd lab: %v\n%s", err, l.Log())
		}
	}
	return l
}

// waitName waits until name has an owner on the bus at address.
func waitName(address, name string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := dbus.Dial(address, dbus.WithContext(ctx))
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Auth(nil); err != nil {
		return err
	}
	if err := c.Hello(); err != nil {
		return err
	}
	for {
		var has bool
		err := c.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, name).Store(&has)
		if err == nil && has {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s has no owner on %s after %s (last error %v)", name, address, timeout, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitRunning polls the manager's SystemState until it is running (or
// degraded: some stock user unit failed, the manager works).
func (l *Lab) waitRunning(exited <-chan error, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("the manager exited: %v", err)
		default:
		}
		state, err := l.property("SystemState")
		if err == nil && (state == "running" || state == "degraded") {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("SystemState %s", state)
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not running after %s: %v", timeout, last)
}

// conn opens a connection to the manager's private socket.
func (l *Lab) conn(ctx context.Context) (*dbus.Conn, error) {
	c, err := dbus.Dial(l.Address, dbus.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	if err := c.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (l *Lab) property(name string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := l.conn(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	v, err := c.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1").GetProperty("org.freedesktop.systemd1.Manager." + name)
	if err != nil {
		return "", err
	}
	s, _ := v.Value().(string)
	return s, nil
}

// AddUnit writes a unit file into UnitDir and has the manager reload.
func (l *Lab) AddUnit(t testing.TB, name, content string) {
	t.Helper()
	if strings.ContainsAny(name, "/\x00") {
		t.Fatalf("unit name %q", name)
	}
	if err := os.WriteFile(filepath.Join(l.UnitDir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := sdbus.NewConnection(func() (*dbus.Conn, error) { return l.conn(ctx) })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.ReloadContext(ctx); err != nil {
		t.Fatalf("daemon-reload: %v", err)
	}
}

// StartUnit starts a unit of the lab's manager and waits (bounded) until
// its job is done.
func (l *Lab) StartUnit(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := sdbus.NewConnection(func() (*dbus.Conn, error) { return l.conn(ctx) })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done := make(chan string, 1)
	if _, err := c.StartUnitContext(ctx, name, "replace", done); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	select {
	case r := <-done:
		if r != "done" {
			t.Fatalf("starting %s: job %s\n%s", name, r, l.Log())
		}
	case <-ctx.Done():
		t.Fatalf("starting %s: %v", name, ctx.Err())
	}
}

// Log returns what the manager printed.
func (l *Lab) Log() string {
	b, _ := os.ReadFile(l.log)
	return string(b)
}

// guard hands what the lab made to the guardian (reap.Guard), for a
// test binary that dies before its cleanup.
func (l *Lab) guard(t testing.TB, kind reap.Kind, name string) {
	t.Helper()
	release, err := reap.Guard(kind, name)
	if err != nil {
		t.Fatalf("systemd lab: %v", err)
	}
	l.released = append(l.released, release)
}

// Cgroups are the lab's cgroup directories, one per hierarchy the
// manager uses.
func (l *Lab) Cgroups() []string { return append([]string(nil), l.cgroups...) }

// stop ends the manager by PID (SIGTERM, then SIGKILL after 10 s), kills
// whatever the manager left in the lab's cgroup, removes the cgroup
// (children first) and the lab's directory, and then lets the guardian
// go of them (it keeps them when they could not be removed).
func (l *Lab) stop(t testing.TB) {
	if l.cmd != nil && l.cmd.Process != nil {
		_ = l.cmd.Process.Signal(syscall.SIGTERM)
		if !waitGone(l.PID, 10*time.Second) {
			_ = l.cmd.Process.Kill()
			waitGone(l.PID, 5*time.Second)
		}
	}
	ok := true
	for _, cg := range l.cgroups {
		if err := reap.KillCgroup(cg, 10*time.Second); err != nil {
			t.Errorf("systemd lab: emptying %s: %v", cg, err)
			ok = false
		}
	}
	for _, cg := range l.cgroups {
		if err := reap.RemoveCgroup(cg); err != nil {
			t.Errorf("systemd lab: removing %s: %v", cg, err)
			ok = false
		}
	}
	if t.Failed() {
		t.Logf("systemd lab log:\n%s", l.Log())
	}
	_ = os.RemoveAll(l.Dir)
	if ok {
		for _, release := range l.released {
			release()
		}
	}
}

// waitGone waits until a child process has been reaped (Start's Wait
// goroutine reaps it) or is otherwise gone.
func waitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// Verify runs `systemd-analyze verify` on unit files, which needs no
// running manager, and fails the test with its messages unless it exits
// 0 and prints nothing. It skips (or fails, with RDMAFORM_REQUIRE_LAB=1)
// when systemd-analyze is not installed.
func Verify(t testing.TB, files ...string) {
	t.Helper()
	bin := need.Tool(t, "systemd-analyze", "apt-get install -y --no-install-recommends systemd")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, append([]string{"verify", "--man=no"}, files...)...).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify %s: %v\n%s", strings.Join(files, " "), err, out)
	}
}
