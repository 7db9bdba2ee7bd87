//go:build kernlab

package guest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
)

const (
	confFile  = "/etc/modules-load.d/rdmaform.conf"
	configfs  = "/sys/kernel/config"
	rdmaCMDir = "/sys/kernel/config/rdma_cm"
)

// listed returns the modules rdmaform.conf lists.
func listed(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(readFile(t, confFile), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

// TestModules loads modules for real with modprobe and lists them in
// modules-load.d; dropping one from the spec drops it from the file.
func TestModules(t *testing.T) {
	for _, m := range []string{"rdma_rxe", "rdma_ucm", "ib_ipoib"} {
		if loaded(t, m) {
			t.Fatalf("%s is loaded before the test: the guest must start clean", m)
		}
	}
	spec := writeSpec(t, "version: 1\nmodules: [rdma_rxe, rdma_ucm, ib_ipoib]\n")
	out, _ := mustCode(t, 2, "plan", "-f", spec)
	for _, m := range []string{"module[rdma_rxe]", "module[rdma_ucm]", "module[ib_ipoib]"} {
		if !strings.Contains(out, m) {
			t.Errorf("plan does not name %s:\n%s", m, out)
		}
	}
	converge(t, spec)
	for _, m := range []string{"rdma_rxe", "rdma_ucm", "ib_ipoib", "ib_core", "rdma_cm"} {
		if !loaded(t, m) {
			t.Errorf("%s is not loaded after apply", m)
		}
	}
	if got, want := strings.Join(listed(t), " "), "ib_ipoib rdma_rxe rdma_ucm"; got != want {
		t.Errorf("%s lists %q, want %q", confFile, got, want)
	}

	// Removal: the file follows the spec; loaded modules stay loaded
	// (unloading could cut a running RDMA job off).
	spec2 := writeSpec(t, "version: 1\nmodules: [rdma_rxe, rdma_ucm]\n")
	converge(t, spec2)
	if got, want := strings.Join(listed(t), " "), "rdma_rxe rdma_ucm"; got != want {
		t.Errorf("after removal %s lists %q, want %q", confFile, got, want)
	}

	// A module the kernel does not have: modprobe's own answer.
	bad := writeSpec(t, "version: 1\nmodules: [no_such_rdma_module]\n")
	code, out, errs := rdmaform(t, "apply", "--yes", "-f", bad)
	if code == 0 || !strings.Contains(out+errs, "no_such_rdma_module") {
		t.Errorf("apply of a missing module: exit %d, output does not name it:\n%s%s", code, out, errs)
	}
}

// TestRxe creates a Soft-RoCE link over a veth through RDMA netlink,
// discovers it from sysfs, and removes it with a spec that names no netdev.
func TestRxe(t *testing.T) {
	veth(t, "kla", "klb")
	spec := writeSpec(t, `version: 1
modules: [rdma_rxe]
rxe:
  - {name: rxe0, netdev: kla}
`)
	converge(t, spec)
	if !exists("/sys/class/infiniband/rxe0") {
		t.Fatal("/sys/class/infiniband/rxe0 does not exist after apply")
	}
	h, err := host.NewLive(os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	inv, err := inventory.Discover(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	d := inv.Device("rxe0")
	if d == nil {
		t.Fatalf("inventory has no rxe0: %+v", inv.Devices)
	}
	if want := strings.TrimSpace(readFile(t, "/sys/class/infiniband/rxe0/node_guid")); d.NodeGUID != want || want == "" {
		t.Errorf("node GUID %q, sysfs says %q", d.NodeGUID, want)
	}
	if d.PCI != "" {
		t.Errorf("rxe0 has PCI %q; a software device has none", d.PCI)
	}
	p := d.Port(1)
	if p == nil {
		t.Fatal("rxe0 has no port 1")
	}
	if p.State != "ACTIVE" || p.PhysState != "LinkUp" || p.LinkLayer != "Ethernet" {
		t.Errorf("port 1: state %q phys_state %q link_layer %q, want ACTIVE LinkUp Ethernet", p.State, p.PhysState, p.LinkLayer)
	}
	if strings.Join(p.Netdevs, ",") != "kla" {
		t.Errorf("port 1 netdevs %v, want [kla]", p.Netdevs)
	}
	if len(p.GIDs) == 0 {
		t.Fatal("port 1 has no GIDs")
	}
	for _, g := range p.GIDs {
		if g.Type != inventory.GIDRoCEv2 || g.Netdev != "kla" {
			t.Errorf("GID %d %s: type %q netdev %q, want RoCE v2 on kla", g.Index, g.GID, g.Type, g.Netdev)
		}
	}
	if !p.Supports(inventory.GIDRoCEv2) || p.Supports(inventory.GIDRoCEv1) {
		t.Errorf("port 1 supports v2=%v v1=%v, want only v2", p.Supports(inventory.GIDRoCEv2), p.Supports(inventory.GIDRoCEv1))
	}

	// The kernel's own answers to bad input.
	missing := writeSpec(t, "version: 1\nrxe:\n  - {name: rxe7, netdev: nosuch0}\n")
	code, out, errs := rdmaform(t, "plan", "-f", missing)
	if code != 1 || !strings.Contains(out+errs, "nosuch0") || !strings.Contains(out+errs, "host.yaml:3:") {
		t.Errorf("plan of rxe on a missing netdev: exit %d (want 1, a finding at the spec line naming nosuch0):\n%s%s", code, out, errs)
	}
	run(t, "/sbin/rdma", "link", "add", "rxe9", "type", "rxe", "netdev", "klb")
	out2, err := tryRun("/sbin/rdma", "link", "add", "rxe8", "type", "rxe", "netdev", "klb")
	if err == nil || !strings.Contains(out2, "File exists") {
		t.Errorf("a second rxe link on klb: %v %q, want the kernel's File exists", err, out2)
	}
	// rdmaform knows that rule before the kernel has to say it: a spec
	// asking for a second link on klb is a plan error at its line.
	dup := writeSpec(t, "version: 1\nrxe:\n  - {name: rxe8, netdev: klb}\n")
	code, out, errs = rdmaform(t, "plan", "-f", dup)
	if code != 1 || !strings.Contains(out+errs, "host.yaml:3:") || !strings.Contains(out+errs, "already carries Soft-RoCE link rxe9") {
		t.Errorf("plan of a second rxe link on klb: exit %d (want 1, a finding at host.yaml:3 naming rxe9):\n%s%s", code, out, errs)
	}
	run(t, "/sbin/rdma", "link", "delete", "rxe9")

	// Removal needs no netdev.
	gone := writeSpec(t, "version: 1\nrxe:\n  - {name: rxe0, state: absent}\n")
	converge(t, gone)
	if exists("/sys/class/infiniband/rxe0") {
		t.Error("rxe0 still exists after state: absent")
	}
}

// TestRdmaCM sets the default RoCE version and ToS through configfs on a
// real kernel: configfs mounted and rdma_cm loaded by apply, values read
// back byte for byte, and no group left behind.
func TestRdmaCM(t *testing.T) {
	veth(t, "kmc", "kmcp")
	run(t, "/sbin/modprobe", "rdma_rxe")
	run(t, "/sbin/rdma", "link", "add", "rxe3", "type", "rxe", "netdev", "kmc")
	t.Cleanup(func() { _, _ = tryRun("/sbin/rdma", "link", "delete", "rxe3") })

	spec := writeSpec(t, `version: 1
devices:
  - name: rxe3
    ports:
      - port: 1
        roce: {mode: v2, tos: 106}
`)
	converge(t, spec)
	if !exists(rdmaCMDir) {
		t.Fatalf("%s does not exist after apply (configfs mounted, rdma_cm loaded?)", rdmaCMDir)
	}
	if exists(filepath.Join(rdmaCMDir, "rxe3")) {
		t.Errorf("apply left the configfs group %s/rxe3 behind", rdmaCMDir)
	}
	// Read the kernel's values back through a group of the test's own.
	g := filepath.Join(rdmaCMDir, "rxe3")
	if err := os.Mkdir(g, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(g)
	if got := readFile(t, g+"/ports/1/default_roce_mode"); got != "RoCE v2\n" {
		t.Errorf("default_roce_mode %q, want %q", got, "RoCE v2\n")
	}
	if got := readFile(t, g+"/ports/1/default_roce_tos"); got != "106\n" {
		t.Errorf("default_roce_tos %q, want %q", got, "106\n")
	}
	// The kernel's errno for bad values, as rdmaform's host door reports it.
	h, err := host.NewLive(os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file, value string
		errno       syscall.Errno
	}{
		{"default_roce_tos", "256", syscall.ERANGE},
		{"default_roce_tos", "-1", syscall.EINVAL},
		{"default_roce_mode", "RoCE v1", syscall.EINVAL},    // the seeds' string
		{"default_roce_mode", "IB/RoCE v1", syscall.EINVAL}, // rxe has no RoCE v1 GIDs
		{"default_roce_mode", "RoCE v3", syscall.EINVAL},
	} {
		err := h.FS.WriteAttr(g+"/ports/1/"+c.file, []byte(c.value))
		if !errors.Is(err, c.errno) {
			t.Errorf("write %q to %s: %v, want %v", c.value, c.file, err, c.errno)
		} else if !strings.Contains(err.Error(), c.file) {
			t.Errorf("write %q: error %q does not name the file", c.value, err)
		}
	}
	if err := os.Remove(g); err != nil {
		t.Fatal(err)
	}

	// RoCE v1 on a port whose GIDs are all RoCE v2 is a plan error at the
	// spec line, not an EINVAL at apply.
	v1 := writeSpec(t, `version: 1
devices:
  - name: rxe3
    ports:
      - port: 1
        roce: {mode: v1}
`)
	code, out, errs := rdmaform(t, "plan", "-f", v1)
	if code != 1 || !strings.Contains(errs+out, "host.yaml:6:") || !strings.Contains(errs+out, "RoCE v2") {
		t.Errorf("plan of mode v1 on rxe3: exit %d, want 1 with a finding at host.yaml:6 naming the port's RoCE v2 GIDs:\n%s%s", code, out, errs)
	}
}

// TestShowAuditBootUnit captures the guest with show (plan of the capture
// is empty), audits it (pass, then fail after breaking one thing), and
// restores the runtime state with the boot unit's command after a
// simulated reboot.
func TestShowAuditBootUnit(t *testing.T) {
	veth(t, "ksa", "ksb")
	spec := writeSpec(t, `version: 1
modules: [rdma_rxe, rdma_ucm]
rxe:
  - {name: rxe5, netdev: ksa}
devices:
  - name: rxe5
    ports:
      - port: 1
        roce: {mode: v2, tos: 72}
persistence: boot-unit
`)
	converge(t, spec)

	capture, _ := mustCode(t, 0, "show")
	capFile := writeSpec(t, capture)
	mustCode(t, 0, "validate", "-f", capFile)
	out, _ := mustCode(t, 0, "plan", "-f", capFile)
	if !strings.Contains(out, "No changes") {
		t.Errorf("plan of show's capture is not empty:\n%s", out)
	}
	mustCode(t, 0, "audit", "-f", spec)

	// Break one thing: ToS by hand.
	g := filepath.Join(rdmaCMDir, "rxe5")
	if err := os.Mkdir(g, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(g+"/ports/1/default_roce_tos", []byte("0"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(g)
	out, _ = mustCode(t, 2, "audit", "-f", spec)
	if !strings.Contains(out, "rdma_cm[rxe5/1]") || !strings.Contains(out, "tos") {
		t.Errorf("audit after a ToS change does not report drift on rdma_cm[rxe5/1] tos:\n%s", out)
	}
	mustCode(t, 0, "apply", "--yes", "-f", spec)

	// Another: the rxe link removed.
	run(t, "/sbin/rdma", "link", "delete", "rxe5")
	out, _ = mustCode(t, 2, "audit", "-f", spec)
	if !strings.Contains(out, "rxe[rxe5]") {
		t.Errorf("audit after removing rxe5 does not name rxe[rxe5]:\n%s", out)
	}

	// A "reboot": rxe gone, configfs unmounted, RDMA modules unloaded.
	// The boot unit's ExecStart brings the runtime state back.
	unit := readFile(t, "/etc/systemd/system/rdmaform.service")
	var exec []string
	for _, l := range strings.Split(unit, "\n") {
		if v, ok := strings.CutPrefix(l, "ExecStart="); ok {
			exec = strings.Fields(v)
		}
	}
	if len(exec) < 2 {
		t.Fatalf("no ExecStart in the boot unit:\n%s", unit)
	}
	for _, l := range rdmaLinksOn("ksa", "ksb") {
		run(t, "/sbin/rdma", "link", "delete", l)
	}
	_, _ = tryRun("/bin/umount", configfs)
	for _, m := range []string{"rdma_ucm", "rdma_rxe"} {
		_, _ = tryRun("/sbin/modprobe", "-r", m)
	}
	if loaded(t, "rdma_rxe") {
		t.Log("rdma_rxe could not be unloaded; the reboot is partial")
	}
	// systemd-modules-load runs before the unit at boot: load what
	// modules-load.d lists, as it does.
	for _, m := range listed(t) {
		run(t, "/sbin/modprobe", m)
	}
	args := exec[1:]
	mustCode(t, 0, args...)
	out, _ = mustCode(t, 0, "plan", "-f", spec)
	if !strings.Contains(out, "No changes") {
		t.Errorf("plan after the boot unit's run is not empty:\n%s", out)
	}
	mustCode(t, 0, "audit", "-f", spec)
	converge(t, writeSpec(t, "version: 1\nrxe:\n  - {name: rxe5, state: absent}\npersistence: none\n"))
}
