package sysctl_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/internal/testlab/netns"
)

// childEnv carries the root tree to the test binary re-run inside the
// lab's namespace.
const childEnv = "RDMAFORM_SYSCTL_LAB_ROOT"

// TestSysctlOnRealKernel runs plan, apply and a rollback against a real
// kernel's /proc/sys/net: that of a network namespace of the test's own,
// with a veth pair. /proc/sys/net shows the namespace of the process that
// reads it, so the test binary runs again under ip netns exec (which
// gives it a mount namespace of its own), bind-mounts /proc/sys/net into
// a --root tree and runs rdmaform there. Only net.* settings, which are
// per namespace, are written; kernel.numa_balancing is the machine's and
// is never touched here.
func TestSysctlOnRealKernel(t *testing.T) {
	if root := os.Getenv(childEnv); root != "" {
		inNamespace(t, root)
		return
	}
	l := netns.New(t)
	root := l.Root
	if err := os.MkdirAll(filepath.Join(root, "proc/sys/net"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", l.Name, os.Args[0], "-test.run=^TestSysctlOnRealKernel$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+root)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestSysctlOnRealKernel") {
		t.Fatalf("the test did not run in the namespace:\n%s", out)
	}
	t.Logf("in %s:\n%s", l.Name, out)
	// Seen from the namespace, not through the tree: what the kernel keeps.
	got, err := exec.Command("ip", "netns", "exec", l.Name, "cat", "/proc/sys/net/ipv4/conf/"+netns.Veth0+"/arp_ignore").Output()
	if err != nil || strings.TrimSpace(string(got)) != "1" {
		t.Errorf("arp_ignore of %s in the namespace: %q (%v), want 1", netns.Veth0, got, err)
	}
}

// inNamespace is the test's part inside the lab's namespace.
func inNamespace(t *testing.T, root string) {
	// The namespace has only lo and the lab's veth pair: never the
	// machine's own /proc/sys/net.
	if _, err := os.Stat("/proc/sys/net/ipv4/conf/" + netns.Veth0); err != nil {
		t.Fatalf("not in the lab's namespace: %v", err)
	}
	if err := unix.Mount("/proc/sys/net", filepath.Join(root, "proc/sys/net"), "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("mount --bind /proc/sys/net %s/proc/sys/net: %v", root, err)
	}
	read := func(key string) string {
		b, err := os.ReadFile("/proc/sys/" + key)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	v4, v6 := "net/ipv4/conf/"+netns.Veth0+"/", "net/ipv6/conf/"+netns.Veth1+"/"
	before := map[string]string{}
	for _, k := range []string{v4 + "arp_ignore", v4 + "arp_announce", v4 + "rp_filter", v4 + "accept_local", v6 + "accept_ra", v6 + "autoconf", v6 + "disable_ipv6"} {
		before[k] = read(k)
	}
	spec := clitest.WriteSpec(t, "version: 1\nsysctl:\n  interfaces:\n"+
		"    - {name: "+netns.Veth0+", arp_ignore: 1, arp_announce: 2, rp_filter: 2, accept_local: true}\n"+
		"    - {name: "+netns.Veth1+", accept_ra: 0, autoconf: false, disable_ipv6: true}\n")

	// An unconfirmed apply is rolled back: the kernel's values come back.
	out := clitest.MustRun(t, 1, "--root", root, "apply", "--yes", "--confirm-timeout", "1s", "-f", spec)
	if !strings.Contains(out, "Reverted") {
		t.Fatalf("unconfirmed apply:\n%s", out)
	}
	for k, v := range before {
		if got := read(k); got != v {
			t.Errorf("after the rollback %s = %s, want %s", k, got, v)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "etc/sysctl.d/90-rdmaform.conf")); !os.IsNotExist(err) {
		t.Errorf("after the rollback the sysctl.d file is there: %v", err)
	}

	clitest.MustRun(t, 2, "--root", root, "plan", "-f", spec)
	clitest.MustRun(t, 0, "--root", root, "apply", "--yes", "-f", spec)
	if out := clitest.MustRun(t, 0, "--root", root, "plan", "-f", spec); !strings.Contains(out, "No changes.") {
		t.Fatalf("plan after apply:\n%s", out)
	}
	for k, want := range map[string]string{v4 + "arp_ignore": "1", v4 + "arp_announce": "2", v4 + "rp_filter": "2", v4 + "accept_local": "1",
		v6 + "accept_ra": "0", v6 + "autoconf": "0", v6 + "disable_ipv6": "1"} {
		if got := read(k); got != want {
			t.Errorf("%s = %s, want %s", k, got, want)
		}
	}
	b, err := os.ReadFile(filepath.Join(root, "etc/sysctl.d/90-rdmaform.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "net.ipv6.conf."+netns.Veth1+".disable_ipv6 = 1\n") {
		t.Errorf("sysctl.d file:\n%s", b)
	}
}
