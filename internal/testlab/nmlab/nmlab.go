// Package nmlab gives rdmaform's tests a real NetworkManager that cannot
// touch the machine it runs on: its own network namespace, its own private
// D-Bus system bus, and NetworkManager inside a private mount namespace with
// tmpfs on /run and /var/lib/NetworkManager, /sys read-only, and every
// configuration and state path in a temporary directory.
//
// The recipe, as commands:
//
//	ip netns add rdmaform-nm-PID-N
//	dbus-daemon --config-file=DIR/bus.conf --nofork --nopidfile
//	ip netns exec NS unshare --mount --uts --propagation private \
//	    sh -c 'mount -t tmpfs ... /run; ...; exec "$@"' sh NetworkManager --debug --config=DIR/nm.conf ...
//	nmcli -t -f RUNNING general    # until it prints "running"
//
// The root namespace's links, addresses, routes, /etc/resolv.conf and
// hostname are never touched: NetworkManager runs with dns=none,
// rc-manager=unmanaged and hostname-mode=none, in a namespace of its own.
//
// Tests skip (with the reason) when not root or when a tool is missing,
// unless RDMAFORM_REQUIRE_LAB=1, in which case they fail.
//
// A test binary that dies before its cleanup leaves nothing running:
// dbus-daemon and NetworkManager (which the `ip netns exec`, `unshare`
// and `sh` before it exec in place) get SIGKILL from the kernel as the
// binary dies (reap.Start), and the guardian (reap.Guard) deletes the
// namespace and the lab's own directory.
package nmlab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/internal/testlab/need"
	"github.com/rdmaform/rdmaform/internal/testlab/reap"
)

// RequireEnv is the environment variable that turns a skip into a failure,
// for CI machines that must run the real-NetworkManager tests.
const RequireEnv = need.RequireEnv

// DefaultPrefix is the interface-name prefix (besides ib*) the lab's
// NetworkManager manages; veth pairs created by WithVeth use it.
const DefaultPrefix = "rfv"

// readyTimeout bounds the wait for NetworkManager to answer on the bus.
// It is ready in ~0.2 s on an idle two-core machine.
const readyTimeout = 20 * time.Second

// Option changes how Start builds the lab.
type Option func(*config)

type config struct {
	veth   bool
	prefix string
	polkit bool
}

// WithPolkit makes NetworkManager authorize every request through polkit
// (auth-polkit=true), as a distribution's default configuration does; the
// lab's bus has no polkit daemon, so only what NetworkManager itself
// grants passes.
func WithPolkit() Option { return func(c *config) { c.polkit = true } }

// WithVeth creates a veth pair PREFIX0/PREFIX1 inside the lab's namespace
// before NetworkManager starts, so an ethernet profile can activate for
// real. Equivalent to: ip -n NS link add PREFIX0 type veth peer name PREFIX1
func WithVeth() Option { return func(c *config) { c.veth = true } }

// WithPrefix changes the managed interface-name prefix (default "rfv").
func WithPrefix(p string) Option { return func(c *config) { c.prefix = p } }

// Lab is one running NetworkManager in a namespace of its own.
type Lab struct {
	t       testing.TB
	dir     string
	ns      string
	bus     string // unix socket path of the private system bus
	prefix  string
	veth    [2]string
	dbus    *exec.Cmd
	nm      *exec.Cmd
	nmDone  chan struct{}
	nmLog   string
	baseEnv []string
	polkit  bool
	// releaseNS lets the guardian go of the namespace once it is deleted.
	releaseNS func()
}

// Result is what one command printed and how it exited.
type Result struct {
	Stdout []byte
	Stderr []byte
	Exit   int
}

// Start builds the lab and registers its teardown with t.Cleanup. It skips
// the test (or fails it when RDMAFORM_REQUIRE_LAB=1) when the machine cannot
// host the lab.
func Start(t testing.TB, opts ...Option) *Lab {
	t.Helper()
	cfg := config{prefix: DefaultPrefix}
	for _, o := range opts {
		o(&cfg)
	}
	if reason := unavailable(); reason != "" {
		need.Skip(t, "nmlab: %s", reason)
	}

	dir := t.TempDir()
	// A unix socket path is limited to 108 bytes; long test names make long
	// temporary directories.
	if len(filepath.Join(dir, "bus.sock")) > 100 {
		short, err := os.MkdirTemp("", "rdmaform-nm-")
		if err != nil {
			t.Fatalf("nmlab: %v", err)
		}
		release, err := reap.Guard(reap.Dir, short)
		if err != nil {
			os.RemoveAll(short)
			t.Fatalf("nmlab: %v", err)
		}
		t.Cleanup(func() {
			if os.RemoveAll(short) == nil {
				release()
			}
		})
		dir = short
	}
	l := &Lab{
		t:       t,
		dir:     dir,
		bus:     filepath.Join(dir, "bus.sock"),
		prefix:  cfg.prefix,
		nmLog:   filepath.Join(dir, "NetworkManager.log"),
		baseEnv: os.Environ(),
		polkit:  cfg.polkit,
	}
	// One cleanup, registered before anything starts, tears down whatever
	// was built, in order: NetworkManager, then D-Bus, then the namespace.
	t.Cleanup(l.stop)

	if err := l.writeConfig(); err != nil {
		t.Fatalf("nmlab: %v", err)
	}
	if err := l.addNetns(); err != nil {
		t.Fatalf("nmlab: %v", err)
	}
	if cfg.veth {
		l.veth = [2]string{cfg.prefix + "0", cfg.prefix + "1"}
		if err := l.ip("-n", l.ns, "link", "add", l.veth[0], "type", "veth", "peer", "name", l.veth[1]); err != nil {
			t.Fatalf("nmlab: %v", err)
		}
	}
	if err := l.startDBus(); err != nil {
		t.Fatalf("nmlab: %v", err)
	}
	if err := l.startNM(); err != nil {
		t.Fatalf("nmlab: %v", err)
	}
	if err := l.waitRunning(); err != nil {
		t.Fatalf("nmlab: %v\n%s", err, l.logTail())
	}
	return l
}

// unavailable says why this machine cannot host the lab, or "".
func unavailable() string {
	if os.Geteuid() != 0 {
		return "not root (a network namespace and mounts need root)"
	}
	for _, tool := range []string{"NetworkManager", "nmcli", "dbus-daemon", "ip", "unshare", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Sprintf("%s not installed (apt-get install -y --no-install-recommends network-manager dbus iproute2)", tool)
		}
	}
	if _, err := os.Stat("/var/lib/NetworkManager"); err != nil {
		return "/var/lib/NetworkManager is missing (a tmpfs is mounted over it inside the lab)"
	}
	return ""
}

// Netns is the name of the lab's network namespace.
func (l *Lab) Netns() string { return l.ns }

// Dir is the lab's temporary directory (configuration, keyfiles, log).
func (l *Lab) Dir() string { return l.dir }

// KeyfileDir is where NetworkManager writes the lab's profiles.
func (l *Lab) KeyfileDir() string { return filepath.Join(l.dir, "conns") }

// Prefix is the managed interface-name prefix besides ib*.
func (l *Lab) Prefix() string { return l.prefix }

// Veth returns the veth pair created by WithVeth ("", "" without it).
func (l *Lab) Veth() (string, string) { return l.veth[0], l.veth[1] }

// Env is the caller's environment plus DBUS_SYSTEM_BUS_ADDRESS pointing at
// the lab's private bus: what nmcli needs to find this NetworkManager.
func (l *Lab) Env() []string {
	env := make([]string, 0, len(l.baseEnv)+1)
	for _, kv := range l.baseEnv {
		if !strings.HasPrefix(kv, "DBUS_SYSTEM_BUS_ADDRESS=") {
			env = append(env, kv)
		}
	}
	return append(env, "DBUS_SYSTEM_BUS_ADDRESS=unix:path="+l.bus)
}

// guardScript stands for nmcli on the PATH of the code under test: it
// records its arguments and fails, so a test proves nmcli never runs.
const guardScript = `#!/bin/sh
printf '%s\n' "$*" >> "$(dirname "$0")/ran"
echo "nmcli must not run: rdmaform talks to NetworkManager over D-Bus" >&2
exit 127
`

// GuardedEnv is Env() with an nmcli guard first on PATH: the code under
// test gets it instead of the real nmcli, and the test fails at its end
// if anything ran it (the lab's own helpers, such as Nmcli, still use the
// real one).
func (l *Lab) GuardedEnv() []string {
	l.t.Helper()
	dir := filepath.Join(l.dir, "guard")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		l.t.Fatalf("nmlab: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "nmcli"), []byte(guardScript), 0o755); err != nil {
		l.t.Fatalf("nmlab: %v", err)
	}
	l.t.Cleanup(func() {
		if b, err := os.ReadFile(filepath.Join(dir, "ran")); err == nil {
			l.t.Errorf("nmlab: nmcli ran under the guard:\n%s", b)
		}
	})
	env := []string{}
	path := os.Getenv("PATH")
	for _, kv := range l.Env() {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
			continue
		}
		env = append(env, kv)
	}
	return append(env, "PATH="+dir+":"+path)
}

// Nmcli runs nmcli with args inside the lab's namespace, LC_ALL=C, and
// fails the test only when nmcli could not be run at all; a non-zero exit
// is in the Result.
func (l *Lab) Nmcli(args ...string) Result {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := l.Run(ctx, append([]string{"nmcli"}, args...))
	if err != nil {
		l.t.Fatalf("nmlab: %v", err)
	}
	return r
}

// Run runs argv (argv[0] is a program on PATH, usually nmcli or ip) inside
// the lab's namespace with Env() and LC_ALL=C. The error is non-nil only
// when the program could not be run; its exit code is in the Result.
//
// Equivalent to: LC_ALL=C DBUS_SYSTEM_BUS_ADDRESS=... ip netns exec NS ARGV...
func (l *Lab) Run(ctx context.Context, argv []string) (Result, error) {
	if len(argv) == 0 {
		return Result{}, errors.New("empty command")
	}
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", l.ns}, argv...)...)
	cmd.Env = cLocale(l.Env())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	var xe *exec.ExitError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return r, fmt.Errorf("%s: %w", strings.Join(argv, " "), ctx.Err())
	case errors.As(err, &xe):
		r.Exit = xe.ExitCode()
	default:
		return r, fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	return r, nil
}

func cLocale(env []string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG=") || strings.HasPrefix(kv, "LANGUAGE=") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "LC_ALL=C")
}

const busConf = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
`

const nmConf = `[main]
plugins=keyfile
no-auto-default=*
dns=none
rc-manager=unmanaged
systemd-resolved=false
hostname-mode=none
auth-polkit=false

[keyfile]
path=%s
unmanaged-devices=except:interface-name:ib*;except:interface-name:%s*

[connectivity]
enabled=false
`

func (l *Lab) writeConfig() error {
	for _, d := range []string{"conns", "conf.d", "system-conf.d"} {
		if err := os.MkdirAll(filepath.Join(l.dir, d), 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(l.dir, "bus.conf"), fmt.Appendf(nil, busConf, l.bus), 0o600); err != nil {
		return err
	}
	conf := fmt.Appendf(nil, nmConf, l.KeyfileDir(), l.prefix)
	if l.polkit {
		conf = bytes.Replace(conf, []byte("auth-polkit=false"), []byte("auth-polkit=true"), 1)
	}
	return os.WriteFile(filepath.Join(l.dir, "NetworkManager.conf"), conf, 0o600)
}

// addNetns creates a namespace named rdmaform-nm-PID-N with the first free
// N: `ip netns add` refuses a name that exists, so concurrent labs in one
// test binary and leftovers of a killed run never collide.
//
// Equivalent to: ip netns add rdmaform-nm-PID-N && ip -n rdmaform-nm-PID-N link set lo up
func (l *Lab) addNetns() error {
	removeStaleNetns()
	for n := 0; n < 1000; n++ {
		name := fmt.Sprintf("rdmaform-nm-%d-%d", os.Getpid(), n)
		if _, err := os.Stat(filepath.Join("/run/netns", name)); err == nil {
			continue
		}
		if err := l.ip("netns", "add", name); err != nil {
			if _, serr := os.Stat(filepath.Join("/run/netns", name)); serr == nil {
				continue // lost a race with another lab
			}
			return err
		}
		l.ns = name
		release, err := reap.Guard(reap.Netns, name)
		if err != nil {
			return err
		}
		l.releaseNS = release
		return l.ip("-n", name, "link", "set", "lo", "up")
	}
	return errors.New("no free namespace name")
}

// removeStaleNetns deletes the namespaces of labs whose test binary was
// killed before its cleanup ran: named rdmaform-nm-PID-N, PID no longer
// running, no process inside. Anything else is left alone.
func removeStaleNetns() {
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		var pid, n int
		if _, err := fmt.Sscanf(e.Name(), "rdmaform-nm-%d-%d", &pid, &n); err != nil || e.Name() != fmt.Sprintf("rdmaform-nm-%d-%d", pid, n) {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			continue
		}
		out, err := exec.Command("ip", "netns", "pids", e.Name()).Output()
		if err != nil || len(bytes.TrimSpace(out)) > 0 {
			continue
		}
		_ = exec.Command("ip", "netns", "del", e.Name()).Run()
	}
}

func (l *Lab) ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// startDBus runs a private system-type bus as a child process of the test,
// so its PID is known and nothing else is ever signalled.
func (l *Lab) startDBus() error {
	cmd := exec.Command("dbus-daemon", "--config-file="+filepath.Join(l.dir, "bus.conf"), "--nofork", "--nopidfile")
	log, err := os.Create(filepath.Join(l.dir, "dbus.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := reap.Start(cmd); err != nil {
		return fmt.Errorf("dbus-daemon: %w", err)
	}
	l.dbus = cmd
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(l.bus); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("dbus-daemon did not create %s", l.bus)
}

// mountScript runs inside the lab's private mount namespace. Every value
// arrives as a positional parameter; nothing is interpolated into the text.
// A read-only /sys makes NetworkManager treat devices as ready without
// udev, which this machine does not run.
const mountScript = `set -e
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t tmpfs -o mode=0700 tmpfs /var/lib/NetworkManager
mount -o remount,bind,ro /sys
exec "$@"`

// startNM starts NetworkManager in the lab's namespaces. `ip netns exec`,
// `unshare` (without --fork) and `sh -c 'exec ...'` all exec in place, so
// the PID of the started process is NetworkManager's.
func (l *Lab) startNM() error {
	argv := []string{
		"netns", "exec", l.ns,
		"unshare", "--mount", "--uts", "--propagation", "private",
		"sh", "-c", mountScript, "sh",
		"NetworkManager", "--debug",
		"--config=" + filepath.Join(l.dir, "NetworkManager.conf"),
		"--config-dir=" + filepath.Join(l.dir, "conf.d"),
		"--system-config-dir=" + filepath.Join(l.dir, "system-conf.d"),
		"--intern-config=" + filepath.Join(l.dir, "intern.conf"),
		"--state-file=" + filepath.Join(l.dir, "NetworkManager.state"),
		"--pid-file=" + filepath.Join(l.dir, "NetworkManager.pid"),
	}
	cmd := exec.Command("ip", argv...)
	cmd.Env = cLocale(l.Env())
	log, err := os.Create(l.nmLog)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := reap.Start(cmd); err != nil {
		return fmt.Errorf("NetworkManager: %w", err)
	}
	l.nm = cmd
	l.nmDone = make(chan struct{})
	go func() {
		cmd.Wait()
		close(l.nmDone)
	}()
	return nil
}

// waitRunning polls `nmcli -t -f RUNNING general` until it prints
// "running", NetworkManager exits, or readyTimeout passes.
func (l *Lab) waitRunning() error {
	deadline := time.Now().Add(readyTimeout)
	var last Result
	for time.Now().Before(deadline) {
		select {
		case <-l.nmDone:
			return fmt.Errorf("NetworkManager exited: %v", l.nm.ProcessState)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := l.Run(ctx, []string{"nmcli", "-t", "-f", "RUNNING", "general"})
		cancel()
		if err == nil && r.Exit == 0 && strings.TrimSpace(string(r.Stdout)) == "running" {
			return nil
		}
		last = r
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("NetworkManager not running after %s (last nmcli: exit %d, %s)", readyTimeout, last.Exit, bytes.TrimSpace(last.Stderr))
}

// Bus is the D-Bus address of the lab's private system bus.
func (l *Lab) Bus() string { return "unix:path=" + l.bus }

// StopNetworkManager ends NetworkManager (SIGTERM, by PID) and leaves the
// bus running: what a host with NetworkManager stopped looks like.
func (l *Lab) StopNetworkManager() {
	l.t.Helper()
	l.endNM()
	l.nm = nil
}

// endNM sends NetworkManager SIGTERM (by PID), and SIGKILL after 5 s.
func (l *Lab) endNM() {
	if l.nm == nil || l.nm.Process == nil {
		return
	}
	l.nm.Process.Signal(syscall.SIGTERM)
	select {
	case <-l.nmDone:
	case <-time.After(5 * time.Second):
		l.nm.Process.Kill()
		<-l.nmDone
	}
}

// stop ends NetworkManager, then the bus (only the PIDs this lab started),
// then removes the namespace.
func (l *Lab) stop() {
	if l.t.Failed() && l.nm != nil {
		l.t.Logf("nmlab: NetworkManager log (%s):\n%s", l.nmLog, l.logTail())
	}
	l.endNM()
	if l.dbus != nil && l.dbus.Process != nil {
		l.dbus.Process.Kill()
		l.dbus.Wait()
	}
	if l.ns != "" {
		if err := l.ip("netns", "del", l.ns); err != nil {
			l.t.Errorf("nmlab: %v", err)
		} else if l.releaseNS != nil {
			l.releaseNS()
		}
	}
}

// PIDs are the processes the lab started and still runs, by name:
// "dbus-daemon" and "NetworkManager".
func (l *Lab) PIDs() map[string]int {
	pids := map[string]int{}
	if l.dbus != nil && l.dbus.Process != nil {
		pids["dbus-daemon"] = l.dbus.Process.Pid
	}
	if l.nm != nil && l.nm.Process != nil {
		pids["NetworkManager"] = l.nm.Process.Pid
	}
	return pids
}

// logTail is the end of NetworkManager's log, for failure messages.
func (l *Lab) logTail() string {
	b, err := os.ReadFile(l.nmLog)
	if err != nil {
		return ""
	}
	const max = 4000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}
