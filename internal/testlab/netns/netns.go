// Package netns gives rdmaform's tests a real kernel network stack that
// cannot touch the machine they run on: a named network namespace of the
// test's own with a veth pair in it, and a host.Host whose netlink works
// in that namespace only and whose files live in a temporary tree.
//
// The recipe, as commands:
//
//	ip netns add rdmaform-nl-PID-N
//	ip -n rdmaform-nl-PID-N link add rfa0 type veth peer name rfa1
//	...                                   # the test
//	ip netns del rdmaform-nl-PID-N
//
// The namespace is made on a thread locked for that purpose and thrown
// away afterwards, so no goroutine of the test process ever runs in it and
// the root namespace's links, addresses and routes are never touched.
// Tests skip (with the reason) when not root, unless RDMAFORM_REQUIRE_LAB=1,
// in which case they fail.
package netns

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/need"
	"github.com/rdmaform/rdmaform/internal/testlab/reap"
)

// RequireEnv turns a skip into a failure, for machines that must run the
// real-kernel tests.
const RequireEnv = need.RequireEnv

// Veth names of the pair inside the namespace.
const (
	Veth0 = "rfa0"
	Veth1 = "rfa1"
)

var seq atomic.Int64

// Lab is one network namespace with a veth pair.
type Lab struct {
	// Name is the namespace's name (ip -n NAME ...).
	Name string
	// Handle is netlink inside the namespace.
	Handle *netlink.Handle
	// Host is a host whose Net is netlink in the namespace, whose FS is a
	// rooted temporary tree and whose Kernel is nil (nothing is mounted or
	// loaded).
	Host *host.Host
	// Root is the directory the host's FS maps "/" to.
	Root string

	ns      netns.NsHandle
	release func() // the guardian's hold on the namespace
}

// skip skips the test, or fails it when the lab is required.
func skip(t testing.TB, format string, args ...any) {
	t.Helper()
	need.Skip(t, format, args...)
}

// New creates the namespace with the veth pair (both ends down) and
// registers its removal with t.Cleanup.
func New(t testing.TB) *Lab {
	t.Helper()
	if os.Geteuid() != 0 {
		skip(t, "needs root to create a network namespace")
	}
	name := fmt.Sprintf("rdmaform-nl-%d-%d", os.Getpid(), seq.Add(1))
	ns, err := newNamed(name)
	if err != nil {
		skip(t, "cannot create network namespace %s: %v", name, err)
	}
	l := &Lab{Name: name, ns: ns}
	// A test binary killed before its cleanup leaves the namespace to
	// the guardian.
	if l.release, err = reap.Guard(reap.Netns, name); err != nil {
		l.close()
		t.Fatalf("netns: %v", err)
	}
	t.Cleanup(l.close)
	l.Handle, err = netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatalf("netlink handle in %s: %v", name, err)
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: Veth0}, PeerName: Veth1}
	if err := l.Handle.LinkAdd(veth); err != nil {
		t.Fatalf("ip -n %s link add %s type veth peer name %s: %v", name, Veth0, Veth1, err)
	}
	l.Root = t.TempDir()
	fsys, err := host.NewRootFS(l.Root)
	if err != nil {
		t.Fatal(err)
	}
	l.Host = &host.Host{
		FS:     fsys,
		Runner: &host.ExecRunner{Env: os.Environ()},
		Net:    host.NewNetlinkSysfs(l.Handle, fsys),
		Name:   "netns " + name,
	}
	return l
}

// newNamed creates a named namespace (bind-mounted under /var/run/netns,
// so `ip -n NAME` sees it) from a thread that is locked for it and never
// unlocked: when the goroutine ends, Go ends that thread, and with it the
// only thread that ever entered the namespace.
func newNamed(name string) (netns.NsHandle, error) {
	type result struct {
		ns  netns.NsHandle
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		ns, err := netns.NewNamed(name)
		ch <- result{ns, err}
	}()
	r := <-ch
	return r.ns, r.err
}

// close removes the namespace; its veth pair goes with it.
func (l *Lab) close() {
	if l.Handle != nil {
		l.Handle.Close()
	}
	if l.ns.IsOpen() {
		l.ns.Close()
	}
	if netns.DeleteNamed(l.Name) == nil && l.release != nil {
		l.release()
	}
}

// IP runs `ip -n NAME ARGS...` and returns what it printed.
func (l *Lab) IP(t testing.TB, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("ip")
	if err != nil {
		skip(t, "iproute2's ip is not installed")
	}
	cmd := exec.Command(path, append([]string{"-n", l.Name}, args...)...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("ip -n %s %s: exit %d: %s", l.Name, strings.Join(args, " "), ee.ExitCode(), out)
		}
		t.Fatalf("ip -n %s %s: %v", l.Name, strings.Join(args, " "), err)
	}
	return string(out)
}

// Runner runs commands inside the lab's namespace, as
// `ip netns exec NAME PROGRAM ARGS...`: dcb and ethtool then see the
// namespace's links. Errors name the command as the caller gave it.
func (l *Lab) Runner() host.Runner { return &nsRunner{name: l.Name} }

type nsRunner struct{ name string }

func (r *nsRunner) Run(ctx context.Context, c host.Cmd) (host.Result, error) {
	inner := c
	inner.Args = append([]string{"ip", "netns", "exec", r.name}, c.Args...)
	res, err := (&host.ExecRunner{Env: os.Environ()}).Run(ctx, inner)
	var ee *host.ExitError
	if errors.As(err, &ee) {
		ee.Cmd = c
	}
	return res, err
}
