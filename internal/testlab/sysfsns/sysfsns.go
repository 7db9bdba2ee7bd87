// Package sysfsns runs one test, in a child copy of the test binary, on a
// "real host" whose /sys is a fixture: the child lives in private mount,
// network and UTS namespaces, mounts a fresh sysfs for its own network
// namespace, overlays the fixture read-only on top of it and creates veth
// links named like the fixture's netdevs, so code that reads fixed sysfs
// paths and asks netlink (rdmamap) sees the fixture as the machine.
//
// The recipe, as commands (everything after unshare happens in the child's
// namespaces only, and vanishes when it exits):
//
//	unshare --mount --net --uts --propagation private TESTBINARY -test.run='^TestX$'
//	mount --make-rprivate /
//	hostname HOSTNAME
//	mount -t sysfs -o nosuid,nodev,noexec sysfs /sys
//	ip link add NAME address MAC type veth peer name PEER; ip link set NAME up; ...
//	mount -t overlay overlay -o ro,lowerdir=FIXTURE/class:/sys/class /sys/class
//	mount -t overlay overlay -o ro,lowerdir=FIXTURE/devices:/sys/devices /sys/devices
//	mount -t overlay overlay -o ro,lowerdir=FIXTURE/bus:/sys/bus /sys/bus
//
// The overlays have no upper layer, so they are read-only and the fixture
// cannot be changed through them. The parent checks that its own mount
// table under /sys is the same before and after.
//
// Tests skip (with the reason) when not root or when the kernel or the
// machine refuses namespaces, sysfs, overlayfs or veth, unless
// RDMAFORM_REQUIRE_LAB=1, in which case they fail.
//
// Use, in one test function:
//
//	func TestX(t *testing.T) {
//		if sysfsns.InChild() {
//			sysfsns.Child(t, func(ctx context.Context) (any, error) { ... })
//			return
//		}
//		out := sysfsns.Run(t, sysfsns.Config{Fixture: dir, ...})
//		...
//	}
package sysfsns

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/rdmaform/rdmaform/internal/testlab/need"
	"github.com/rdmaform/rdmaform/internal/testlab/reap"
)

// RequireEnv turns a skip into a failure, for machines that must run the
// real-kernel tests.
const RequireEnv = need.RequireEnv

// childEnv carries the child's instructions (JSON of childConfig).
const childEnv = "RDMAFORM_SYSFSNS_CHILD"

// childTimeout bounds the child test binary; it takes well under a second.
const childTimeout = 60 * time.Second

// Config is the host the child sees.
type Config struct {
	// Fixture is a directory shaped like /sys. Each of its top-level
	// directories (class, devices, bus, ...) is overlaid read-only on the
	// /sys directory of the same name, above the child's fresh sysfs:
	// fixture entries win, the rest of the real sysfs shows through.
	Fixture string
	// Veths are veth pairs created in the child's network namespace, so
	// netlink (and /sys/class/net) knows the fixture's netdevs by name.
	Veths []Veth
	// Hostname is set in the child's UTS namespace; "" keeps the machine's.
	Hostname string
}

// Veth is one veth pair, both ends up.
type Veth struct {
	Name, Peer   string
	MAC, PeerMAC string // "" leaves the kernel's random address
}

// childConfig is what Run hands the child through childEnv.
type childConfig struct {
	Config
	Test string // the test the child must be running
	Out  string // where the child writes its childResult
	// ParentMnt/ParentNet are the parent's namespaces (readlink of
	// /proc/self/ns/{mnt,net}); the child refuses to mount anything
	// unless its own differ.
	ParentMnt, ParentNet string
}

// childResult is what the child writes to Out.
type childResult struct {
	// Unavailable says why the machine cannot host the child's namespace
	// (a skip); Error is a failure of the harness or of fn.
	Unavailable string          `json:",omitempty"`
	Error       string          `json:",omitempty"`
	Result      json.RawMessage `json:",omitempty"`
}

// InChild reports whether this process is a child started by Run.
func InChild() bool { return os.Getenv(childEnv) != "" }

// skip skips the test, or fails it when the lab is required.
func skip(t testing.TB, format string, args ...any) {
	t.Helper()
	need.Skip(t, "sysfsns: "+format, args...)
}

// unavailable says why this machine cannot host the child, or "".
func unavailable() string {
	if os.Geteuid() != 0 {
		return "not root (private mount and network namespaces need root)"
	}
	fss, err := os.ReadFile("/proc/filesystems")
	if err != nil {
		return fmt.Sprintf("cannot read /proc/filesystems: %v", err)
	}
	for _, want := range []string{"sysfs", "overlay"} {
		found := false
		for _, l := range strings.Split(string(fss), "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[len(f)-1] == want {
				found = true
			}
		}
		if !found {
			return fmt.Sprintf("the kernel has no %s (not in /proc/filesystems)", want)
		}
	}
	return ""
}

// testPattern is a -test.run pattern that matches exactly the test name
// (subtests included: each level anchored on its own).
func testPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// Run re-executes the test binary, running only t, in private mount,
// network and UTS namespaces set up from cfg, and returns the JSON of what
// the child's function returned. It skips t when the machine cannot host
// the child and fails t when the child fails.
//
// Equivalent to: unshare --mount --net --uts --propagation private TESTBINARY -test.run='^T$'
//
// t must be a top-level test: the child runs the test function from the
// top, and it is there that InChild must be checked.
func Run(t *testing.T, cfg Config) []byte {
	t.Helper()
	if strings.Contains(t.Name(), "/") {
		t.Fatalf("sysfsns: Run from a top-level test, not the subtest %s", t.Name())
	}
	if reason := unavailable(); reason != "" {
		skip(t, "%s", reason)
	}
	if cfg.Fixture == "" || !filepath.IsAbs(cfg.Fixture) {
		t.Fatalf("sysfsns: Config.Fixture must be an absolute directory, not %q", cfg.Fixture)
	}
	mntNS, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Fatalf("sysfsns: %v", err)
	}
	netNS, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatalf("sysfsns: %v", err)
	}
	out := filepath.Join(t.TempDir(), "child.json")
	cc, err := json.Marshal(childConfig{Config: cfg, Test: t.Name(), Out: out, ParentMnt: mntNS, ParentNet: netNS})
	if err != nil {
		t.Fatalf("sysfsns: %v", err)
	}
	before, err := sysMounts()
	if err != nil {
		t.Fatalf("sysfsns: %v", err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), childTimeout)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("sysfsns: %v", err)
	}
	cmd := exec.CommandContext(ctx, exe, "-test.run="+testPattern(t.Name()), "-test.count=1", "-test.v",
		"-test.timeout="+childTimeout.String())
	cmd.Env = append(os.Environ(), childEnv+"="+string(cc))
	var output bytes.Buffer
	cmd.Stdout = &output
	cmd.Stderr = &output
	// Go remounts / MS_REC|MS_PRIVATE in the child when it unshares the
	// mount namespace, before exec; the child does it again itself.
	// reap.Start adds the parent-death SIGKILL, from a thread that lives
	// as long as this binary (a signal tied to any other thread could
	// come when that thread ends, as one locked to a namespace does).
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Unshareflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWNET | syscall.CLONE_NEWUTS,
	}
	start := time.Now()
	if err := reap.Start(cmd); err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EUSERS) {
			skip(t, "cannot unshare mount/network/UTS namespaces: %v", err)
		}
		t.Fatalf("sysfsns: start child: %v", err)
	}
	waitErr := cmd.Wait()
	t.Logf("sysfsns: child ran in %v", time.Since(start).Round(time.Millisecond))

	// Whatever the child did, the parent's /sys must be as it was.
	after, err := sysMounts()
	if err != nil {
		t.Fatalf("sysfsns: %v", err)
	}
	if strings.Join(before, "\n") != strings.Join(after, "\n") {
		t.Errorf("sysfsns: the machine's mounts under /sys changed:\nbefore:\n%s\nafter:\n%s",
			strings.Join(before, "\n"), strings.Join(after, "\n"))
	}

	data, readErr := os.ReadFile(out)
	var res childResult
	if readErr == nil {
		readErr = json.Unmarshal(data, &res)
	}
	switch {
	case readErr != nil:
		t.Fatalf("sysfsns: child wrote no result (%v; exit: %v):\n%s", readErr, waitErr, output.String())
	case res.Unavailable != "":
		skip(t, "%s", res.Unavailable)
	case res.Error != "":
		t.Fatalf("sysfsns: child: %s\n%s", res.Error, output.String())
	case waitErr != nil:
		t.Fatalf("sysfsns: child: %v\n%s", waitErr, output.String())
	}
	return res.Result
}

// sysMounts returns this mount namespace's mounts at or under /sys, as
// "mountpoint fstype source options" lines, sorted. Only /sys is compared:
// other tests running at the same time legitimately mount elsewhere (ip
// netns add bind-mounts under /run/netns).
func sysMounts() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := fields[4]
		if mp != "/sys" && !strings.HasPrefix(mp, "/sys/") {
			continue
		}
		_, tail, _ := strings.Cut(sc.Text(), " - ")
		lines = append(lines, mp+" "+tail)
	}
	sort.Strings(lines)
	return lines, sc.Err()
}

// Child sets up the namespace Run asked for, calls fn and hands its result
// (marshalled to JSON) back to Run. Call it first in the test when
// InChild() is true, and return afterwards.
func Child(t *testing.T, fn func(ctx context.Context) (any, error)) {
	t.Helper()
	var cc childConfig
	if err := json.Unmarshal([]byte(os.Getenv(childEnv)), &cc); err != nil {
		t.Fatalf("sysfsns: bad %s: %v", childEnv, err)
	}
	if cc.Test != t.Name() {
		t.Fatalf("sysfsns: child for %q is running %q", cc.Test, t.Name())
	}
	var res childResult
	if err := setup(cc); err != nil {
		var u unavailableError
		if errors.As(err, &u) {
			res.Unavailable = err.Error()
		} else {
			res.Error = err.Error()
		}
	} else if v, err := fn(t.Context()); err != nil {
		res.Error = err.Error()
	} else if res.Result, err = json.Marshal(v); err != nil {
		res.Error = err.Error()
	}
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatalf("sysfsns: %v", err)
	}
	if err := os.WriteFile(cc.Out, data, 0o600); err != nil {
		t.Fatalf("sysfsns: %v", err)
	}
}

// unavailableError is a refusal by the machine (permissions, a missing
// kernel feature), reported as a skip.
type unavailableError struct{ err error }

func (e unavailableError) Error() string { return e.err.Error() }
func (e unavailableError) Unwrap() error { return e.err }

// refused wraps err as unavailableError when it is the kernel saying no
// (EPERM, ENODEV, EOPNOTSUPP, ENOSYS) rather than a mistake of ours.
func refused(err error) error {
	for _, e := range []error{unix.EPERM, unix.EACCES, unix.ENODEV, unix.EOPNOTSUPP, unix.ENOSYS} {
		if errors.Is(err, e) {
			return unavailableError{err}
		}
	}
	return err
}

// setup builds the child's host, in order. It refuses to mount anything
// unless the process is in mount and network namespaces of its own.
func setup(cc childConfig) error {
	for _, ns := range []struct{ name, parent string }{{"mnt", cc.ParentMnt}, {"net", cc.ParentNet}} {
		mine, err := os.Readlink("/proc/self/ns/" + ns.name)
		if err != nil {
			return err
		}
		if mine == ns.parent {
			return fmt.Errorf("still in the parent's %s namespace (%s): refusing to mount", ns.name, mine)
		}
	}
	// Equivalent to: mount --make-rprivate /
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return refused(fmt.Errorf("mount --make-rprivate /: %w", err))
	}
	if cc.Hostname != "" {
		// Equivalent to: hostname HOSTNAME (in the private UTS namespace)
		if err := unix.Sethostname([]byte(cc.Hostname)); err != nil {
			return refused(fmt.Errorf("hostname %s: %w", cc.Hostname, err))
		}
	}
	// A sysfs mounted from inside the network namespace lists that
	// namespace's links under /sys/class/net (the inherited one lists the
	// parent's). Equivalent to: mount -t sysfs -o nosuid,nodev,noexec sysfs /sys
	if err := unix.Mount("sysfs", "/sys", "sysfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return refused(fmt.Errorf("mount -t sysfs sysfs /sys: %w", err))
	}
	for _, v := range cc.Veths {
		if err := addVeth(v); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(cc.Fixture)
	if err != nil {
		return err
	}
	for _, e := range entries { // sorted by name
		lower := filepath.Join(cc.Fixture, e.Name())
		target := filepath.Join("/sys", e.Name())
		if !e.IsDir() {
			return fmt.Errorf("fixture %s: only directories can be overlaid on /sys", lower)
		}
		if fi, err := os.Stat(target); err != nil || !fi.IsDir() {
			return fmt.Errorf("fixture %s: %s is not a directory of this sysfs", lower, target)
		}
		// Leftmost lowerdir is the top layer: the fixture hides what it
		// names. No upperdir: the overlay is read-only.
		opts := "lowerdir=" + escapeLayer(lower) + ":" + escapeLayer(target)
		// Equivalent to: mount -t overlay overlay -o ro,lowerdir=FIXTURE/D:/sys/D /sys/D
		if err := unix.Mount("overlay", target, "overlay", unix.MS_RDONLY, opts); err != nil {
			return refused(fmt.Errorf("mount -t overlay overlay -o ro,%s %s: %w", opts, target, err))
		}
	}
	return nil
}

// escapeLayer escapes the characters overlayfs's option parser splits on.
func escapeLayer(p string) string {
	return strings.NewReplacer(`\`, `\\`, `:`, `\:`, `,`, `\,`).Replace(p)
}

// addVeth creates a veth pair and sets both ends up.
//
// Equivalent to: ip link add NAME address MAC type veth peer name PEER address PEERMAC;
// ip link set NAME up; ip link set PEER up
func addVeth(v Veth) error {
	la := netlink.NewLinkAttrs()
	la.Name = v.Name
	veth := &netlink.Veth{LinkAttrs: la, PeerName: v.Peer}
	if v.MAC != "" {
		mac, err := net.ParseMAC(v.MAC)
		if err != nil {
			return fmt.Errorf("veth %s: %w", v.Name, err)
		}
		veth.HardwareAddr = mac
	}
	if v.PeerMAC != "" {
		mac, err := net.ParseMAC(v.PeerMAC)
		if err != nil {
			return fmt.Errorf("veth %s: %w", v.Peer, err)
		}
		veth.PeerHardwareAddr = mac
	}
	if err := netlink.LinkAdd(veth); err != nil {
		return refused(fmt.Errorf("ip link add %s type veth peer name %s: %w", v.Name, v.Peer, err))
	}
	for _, name := range []string{v.Name, v.Peer} {
		l, err := netlink.LinkByName(name)
		if err != nil {
			return fmt.Errorf("ip link show %s: %w", name, err)
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return fmt.Errorf("ip link set %s up: %w", name, err)
		}
	}
	return nil
}
