package names

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/need"
)

// udevChildEnv marks the copy of the test binary that runs in namespaces
// of its own.
const udevChildEnv = "RDMAFORM_NAMES_UDEV_CHILD"

// TestUdevRuleByMACMatchesOnlyTheNetdev: the rule by MAC (an rxe
// device's netdev, which has no PCI function) on the real udev: in
// private mount and network namespaces (a copy of the test binary, with
// its own sysfs, and tmpfs over udev's rules directories and /run, so
// that only rdmaform's file is read and nothing of this machine is
// touched), a veth, and a bridge and a VXLAN given the veth's MAC.
// udevadm test replays each one's add event with the rules file as
// rdmaform renders it from what it reads of the veth (udevadm test
// renames, as the real event would): the bridge and the VXLAN, whose
// DEVTYPE is not the veth's, keep their names though their MAC matches,
// and the veth is renamed. A MAC alone renamed the bridge, the first add
// event replayed. The rule of a netdev with a driver (DRIVERS=="?*")
// renames no virtual netdev, whatever its MAC: udev finds no driver
// above one. What the lab cannot show: a netdev with a driver being
// renamed (none can be moved into a namespace here), and that a macvlan
// given the veth's MAC would still match (a macvlan has no DEVTYPE).
func TestUdevRuleByMACMatchesOnlyTheNetdev(t *testing.T) {
	if os.Getenv(udevChildEnv) != "" {
		udevChild(t)
		return
	}
	need.Root(t, "private mount and network namespaces")
	need.Tool(t, "udevadm", "apt-get install udev")
	need.Tool(t, "ip", "apt-get install iproute2")
	cmd := exec.Command(os.Args[0], "-test.run=^TestUdevRuleByMACMatchesOnlyTheNetdev$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), udevChildEnv+"=1")
	// Go makes the new mount namespace's mounts private before the exec.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWNET}
	out, err := cmd.CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "--- SKIP") || strings.Contains(err.Error(), "operation not permitted") {
			need.Skip(t, "the namespaces could not be made: %v\n%s", err, out)
		}
		t.Fatalf("the child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("the child did not pass:\n%s", out)
	}
	t.Logf("the child:\n%s", out)
}

// udevChild runs in the child's namespaces.
func udevChild(t *testing.T) {
	if err := unix.Mount("sysfs", "/sys", "sysfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		need.Skip(t, "mounting this namespace's sysfs: %v", err)
	}
	// Only rdmaform's rules file: tmpfs over every rules directory udev
	// reads (systemd's src/udev/udev-rules.c, RULES_DIRS) that exists, and
	// over /run, where udevadm test keeps its database.
	for _, d := range []string{"/etc/udev/rules.d", "/usr/local/lib/udev/rules.d", "/usr/lib/udev/rules.d", "/lib/udev/rules.d", "/run"} {
		if _, err := os.Stat(d); err != nil {
			continue
		}
		if err := unix.Mount("tmpfs", d, "tmpfs", 0, "mode=0755"); err != nil {
			t.Fatalf("tmpfs over %s: %v", d, err)
		}
	}
	if err := os.MkdirAll("/run/udev/rules.d", 0o755); err != nil {
		t.Fatal(err)
	}
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	ip("link", "add", "rfu0", "type", "veth", "peer", "name", "rfu1")
	fsys, err := host.NewRootFS("/")
	if err != nil {
		t.Fatal(err)
	}
	h := &host.Host{FS: fsys, Net: host.NewNetlink(nil)}
	nd := readNetdev(h, "rfu0")
	ip("link", "add", "rfubr0", "address", nd.MAC, "type", "bridge")
	ip("link", "add", "rfuvx0", "address", nd.MAC, "type", "vxlan", "id", "5", "dstport", "4789")
	if nd.Driver || nd.DevType != "" || nd.MAC == "" {
		t.Fatalf("rfu0 read as %+v: want a MAC, no driver, no DEVTYPE", nd)
	}
	if br := readNetdev(h, "rfubr0"); br.DevType != "bridge" || br.MAC != nd.MAC {
		t.Fatalf("rfubr0 read as %+v: want DEVTYPE bridge and rfu0's MAC", br)
	}
	write := func(nd Netdev) string {
		t.Helper()
		rules := renderRules([]rule{netdevRule("", nd, "rfrenamed0")})
		if err := os.WriteFile(filepath.Join("/etc/udev/rules.d", rulesName), rules, 0o644); err != nil {
			t.Fatal(err)
		}
		return string(rules)
	}
	// replay is udevadm test's add event of a netdev: whether a rule of
	// the file gave it a NAME, and its name after.
	replay := func(name string) (named bool, out string) {
		t.Helper()
		b, err := exec.Command("udevadm", "test", "--action=add", "/sys/class/net/"+name).CombinedOutput()
		out = string(b)
		if err != nil {
			t.Fatalf("udevadm test %s: %v\n%s", name, err, out)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, rulesName) && (strings.Contains(strings.ToLower(l), "invalid") || strings.Contains(l, "error")) {
				t.Fatalf("udev refuses the rule: %s\n%s", l, out)
			}
		}
		return strings.Contains(out, rulesName+":2 NAME 'rfrenamed0'"), out
	}
	exists := func(name string) bool {
		_, err := os.Lstat("/sys/class/net/" + name)
		return err == nil
	}

	rules := write(nd)
	for _, other := range []string{"rfubr0", "rfuvx0"} {
		if named, out := replay(other); named || !exists(other) {
			t.Errorf("%s, which has rfu0's MAC, was matched by rfu0's rule:\n%s\n%s", other, rules, out)
		}
	}
	named, out := replay("rfu0")
	if !named || !exists("rfrenamed0") || exists("rfu0") {
		t.Fatalf("rfu0 was not renamed by its rule:\n%s\n%s", rules, out)
	}
	t.Logf("rules:\n%sudevadm test of rfu0:\n%s", rules, out)

	// The form of a netdev with a driver leaves every virtual one alone.
	ip("link", "add", "link", "rfrenamed0", "name", "rfumv0", "address", nd.MAC, "type", "macvlan")
	withDriver := nd
	withDriver.Driver = true
	rules = write(withDriver)
	if !strings.Contains(rules, `DRIVERS=="?*"`) {
		t.Fatalf("the rule of a netdev with a driver has no DRIVERS:\n%s", rules)
	}
	ip("link", "set", "rfrenamed0", "name", "rfu0")
	for _, other := range []string{"rfubr0", "rfuvx0", "rfumv0", "rfu0"} {
		if named, out := replay(other); named || !exists(other) {
			t.Errorf("%s, a virtual netdev with the MAC, was matched by the rule of a netdev with a driver:\n%s\n%s", other, rules, out)
		}
	}
}
