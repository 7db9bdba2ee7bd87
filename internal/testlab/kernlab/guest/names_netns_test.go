//go:build kernlab

package guest

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// leaveNoRxe unloads rdma_rxe when the test ends, once its links are
// gone: later guest tests expect a guest that starts clean.
func leaveNoRxe(t *testing.T, links ...string) {
	t.Cleanup(func() {
		for _, l := range links {
			_, _ = tryRun("/sbin/rdma", "link", "delete", l)
		}
		if out, err := tryRun("/sbin/modprobe", "-r", "rdma_rxe"); err != nil {
			t.Errorf("modprobe -r rdma_rxe: %v\n%s", err, out)
		}
	})
}

// rxeOnVeth makes an rxe device rxe on a veth pair (a, b), both up, and
// removes them at the end under either name (rxe or rdmaName, a or
// netdevName) with the names rules; it returns the rxe device's node GUID.
func rxeOnVeth(t *testing.T, rxe, a, b, rdmaName, netdevName string) string {
	t.Helper()
	run(t, "/sbin/modprobe", "rdma_rxe")
	leaveNoRxe(t)
	run(t, "/sbin/modprobe", "veth")
	run(t, "/sbin/ip", "link", "add", a, "type", "veth", "peer", "name", b)
	run(t, "/sbin/ip", "link", "set", a, "up")
	run(t, "/sbin/ip", "link", "set", b, "up")
	run(t, "/sbin/rdma", "link", "add", rxe, "type", "rxe", "netdev", a)
	t.Cleanup(func() {
		for _, d := range []string{rxe, rdmaName} {
			_, _ = tryRun("/sbin/rdma", "link", "delete", d)
		}
		for _, n := range []string{a, netdevName} {
			_, _ = tryRun("/sbin/ip", "link", "del", n)
		}
		_ = os.Remove("/etc/udev/rules.d/59-rdmaform-names.rules")
	})
	return strings.TrimSpace(readFile(t, "/sys/class/infiniband/"+rxe+"/node_guid"))
}

// TestRenameRxeAndVeth: devices[].names on the real kernel: an rxe device
// (selected by its node GUID, which a rename keeps) and its veth are
// renamed, the veth taken down for it and brought back up; the next plan
// is empty.
func TestRenameRxeAndVeth(t *testing.T) {
	guid := rxeOnVeth(t, "knrxe0", "kna", "knb", "knrail0", "knrail0e")
	spec := writeSpec(t, "version: 1\ndevices:\n  - node_guid: "+guid+"\n    names: {rdma: knrail0, netdev: knrail0e}\n")
	out, _ := mustCode(t, 2, "plan", "-f", spec)
	for _, w := range []string{"name: knrxe0 -> knrail0", "name: kna -> knrail0e", "link: up -> down while renamed, then up"} {
		if !strings.Contains(out, w) {
			t.Fatalf("plan lacks %q:\n%s", w, out)
		}
	}
	mustCode(t, 0, "apply", "--yes", "-f", spec)
	if out, _ := mustCode(t, 0, "plan", "-f", spec); !strings.Contains(out, "No changes") {
		t.Fatalf("plan after apply is not empty:\n%s", out)
	}
	if got := strings.TrimSpace(readFile(t, "/sys/class/infiniband/knrail0/parent")); got != "knrail0e" {
		t.Fatalf("knrail0's parent reads %q", got)
	}
	if !strings.Contains(run(t, "/sbin/ip", "-br", "link", "show", "knrail0e"), "UP") {
		t.Fatal("knrail0e is not up again")
	}
	if exists("/sys/class/infiniband/knrxe0") || exists("/sys/class/net/kna") {
		t.Fatal("an old name is still there")
	}
	rules := readFile(t, "/etc/udev/rules.d/59-rdmaform-names.rules")
	if !strings.Contains(rules, `NAME="knrail0e"`) || strings.Contains(rules, "infiniband") {
		t.Fatalf("rules (a netdev rule by MAC, no rule for a software device):\n%s", rules)
	}
}

// TestRenameAndSettingsOnRealKernel: one apply on the real kernel renames
// an rxe device and its veth and, under the new names, sets the veth's
// MTU and address, keeps the rxe link (rxe[] names it by its new name on
// the new netdev) and sets its port's RoCE ToS through configfs: the plan
// shows the later stages under the new names, after the renames; apply,
// then plan is empty, and the values are on the renamed devices.
func TestRenameAndSettingsOnRealKernel(t *testing.T) {
	// configfs is a module on Debian's kernel, loaded at boot by systemd's
	// sys-kernel-config.mount on a real host; this test does not depend on
	// an earlier one having loaded it.
	run(t, "/sbin/modprobe", "configfs")
	guid := rxeOnVeth(t, "knrxe1", "knc", "knd", "knrail1", "knrail1e")
	spec := writeSpec(t, `version: 1
devices:
  - node_guid: `+guid+`
    names: {rdma: knrail1, netdev: knrail1e}
    ports:
      - port: 1
        roce: {mode: v2, tos: 106}
rxe:
  - {name: knrail1, netdev: knrail1e}
interfaces:
  - {name: knrail1e, state: up, mtu: 1400, addresses: [192.0.2.77/24]}
`)
	out, _ := mustCode(t, 2, "plan", "-f", spec)
	for _, w := range []string{"name: knrxe1 -> knrail1", "name: knc -> knrail1e", "~ interface[knrail1e]", "mtu: 1500 -> 1400", "192.0.2.77/24", "rdma_cm[knrail1/1]"} {
		if !strings.Contains(out, w) {
			t.Fatalf("plan lacks %q:\n%s", w, out)
		}
	}
	if i, j := strings.Index(out, "rdma_name["), strings.Index(out, "interface[knrail1e]"); j < i {
		t.Fatalf("the interface is planned before the rename:\n%s", out)
	}
	if strings.Contains(out, "interface[knc]") || strings.Contains(out, "rxe[knrxe1]") || strings.Contains(out, "knrxe1/1") {
		t.Fatalf("a later stage planned under an old name:\n%s", out)
	}
	mustCode(t, 0, "apply", "--yes", "-f", spec)
	if out, _ := mustCode(t, 0, "plan", "-f", spec); !strings.Contains(out, "No changes") {
		t.Fatalf("plan after apply is not empty:\n%s", out)
	}
	if got := strings.TrimSpace(readFile(t, "/sys/class/net/knrail1e/mtu")); got != "1400" {
		t.Fatalf("knrail1e's mtu reads %q", got)
	}
	if a := run(t, "/sbin/ip", "-br", "addr", "show", "knrail1e"); !strings.Contains(a, "192.0.2.77/24") || !strings.Contains(a, "UP") {
		t.Fatalf("knrail1e: %s", a)
	}
	if got := strings.TrimSpace(readFile(t, "/sys/class/infiniband/knrail1/parent")); got != "knrail1e" {
		t.Fatalf("knrail1's parent reads %q", got)
	}
	if exists("/sys/class/infiniband/knrxe1") || exists("/sys/class/net/knc") {
		t.Fatal("an old name is still there")
	}
}

// TestNetnsMode: rdma.netns_mode on the real kernel: exclusive now and in
// modprobe.d; back to shared while another network namespace exists,
// which the kernel refuses (EBUSY), so the plan defers it to the reboot
// (exit 3) and apply changes only the file; a namespace the plan cannot
// see (held by one thread) makes the kernel refuse at apply, and apply
// says why.
func TestNetnsMode(t *testing.T) {
	run(t, "/sbin/modprobe", "rdma_rxe")
	leaveNoRxe(t)
	t.Cleanup(func() {
		_, _ = tryRun("/sbin/ip", "netns", "del", "knsx")
		_, _ = tryRun("/sbin/rdma", "system", "set", "netns", "shared")
		_ = os.Remove("/etc/modprobe.d/rdmaform.conf")
	})
	excl := writeSpec(t, "version: 1\nrdma: {netns_mode: exclusive}\n")
	converge(t, excl)
	if out := run(t, "/sbin/rdma", "system", "show"); !strings.Contains(out, "netns exclusive") {
		t.Fatalf("rdma system show: %s", out)
	}
	if c := readFile(t, "/etc/modprobe.d/rdmaform.conf"); !strings.HasSuffix(c, "options ib_core netns_mode=0\n") {
		t.Fatalf("modprobe.d: %q", c)
	}

	run(t, "/sbin/ip", "netns", "add", "knsx")
	shared := writeSpec(t, "version: 1\nrdma: {netns_mode: shared}\n")
	out, _ := mustCode(t, 2, "plan", "-f", shared)
	if !strings.Contains(out, "? rdma_netns[runtime]") || !strings.Contains(out, "EBUSY") || !strings.Contains(out, "/run/netns/knsx") {
		t.Fatalf("plan does not defer the refused switch:\n%s", out)
	}
	mustCode(t, 3, "apply", "--yes", "-f", shared)
	mustCode(t, 3, "plan", "-f", shared)
	if out := run(t, "/sbin/rdma", "system", "show"); !strings.Contains(out, "netns exclusive") {
		t.Fatalf("the mode changed under a namespace: %s", out)
	}
	run(t, "/sbin/ip", "netns", "del", "knsx")
	converge(t, shared)

	// A namespace only one thread of another process is in: not under
	// /run/netns nor any /proc/PID/ns/net, so the plan cannot see it; the
	// kernel refuses at apply with EBUSY and apply says why.
	// Never the process's main thread: its namespace is /proc/PID/ns/net,
	// which the plan does see (it did, now and then, in CI). A goroutine
	// that lands there keeps that thread and unshares on another.
	ready, done := make(chan error), make(chan struct{})
	var hold func()
	hold = func() {
		runtime.LockOSThread() // the thread ends with the goroutine, and its namespace with it
		if unix.Gettid() == unix.Getpid() {
			go hold()
			<-done
			runtime.UnlockOSThread()
			return
		}
		ready <- unix.Unshare(unix.CLONE_NEWNET)
		<-done
	}
	go hold()
	if err := <-ready; err != nil {
		t.Fatal(err)
	}
	defer close(done)
	mustCode(t, 2, "plan", "-f", excl)
	_, errs := mustCode(t, 1, "apply", "--yes", "-f", excl)
	if !strings.Contains(errs, "device or resource busy") || !strings.Contains(errs, "only while no network namespace but the initial one exists") {
		t.Fatalf("apply's refusal:\n%s", errs)
	}
}
