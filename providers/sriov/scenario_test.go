package sriov_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/sim"
)

const pf0 = "0000:5e:00.0"

// newSim is a ConnectX-5 RoCE host whose firmware has SR-IOV enabled
// with NUM_OF_VFS=total (current and next boot), and numVFs VFs enabled.
func newSim(t *testing.T, total, numVFs int, mutate ...func(st *sim.State)) string {
	t.Helper()
	dir := newSRIOVHost(t, "cx5-roce", total, func(st *sim.State) {
		for _, m := range mutate {
			m(st)
		}
	})
	if numVFs > 0 {
		s, err := sim.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		h, err := s.Host()
		if err != nil {
			t.Fatal(err)
		}
		if err := h.FS.WriteAttr("/sys/bus/pci/devices/"+pf0+"/sriov_numvfs", []byte(fmt.Sprintf("%d\n", numVFs))); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func spec(t *testing.T, body string) string {
	t.Helper()
	return clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \""+pf0+"\"\n"+body)
}

// planLines plans and returns "address name:before->after ..." per change.
func planLines(t *testing.T, dir, specFile string, wantCode int) ([]string, string) {
	t.Helper()
	code, out, errs := clitest.Run(t, "--sim", dir, "plan", "-f", specFile, "-o", "json")
	if code != wantCode {
		t.Fatalf("plan: exit %d, want %d\n%s%s", code, wantCode, out, errs)
	}
	var p struct {
		Changes []struct {
			Address    string      `json:"address"`
			Activation string      `json:"activation"`
			Attributes []plan.Attr `json:"attributes"`
			Disrupts   []string    `json:"disrupts"`
		} `json:"changes"`
		Deferred []plan.Deferred `json:"deferred"`
	}
	if code == 1 {
		return nil, out + errs
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("plan JSON: %v\n%s", err, out)
	}
	var lines []string
	for _, c := range p.Changes {
		s := c.Address + " " + c.Activation
		for _, a := range c.Attributes {
			s += " " + a.Name + ":" + a.Before + "->" + a.After
		}
		if len(c.Disrupts) > 0 {
			s += " disrupts:" + strings.Join(c.Disrupts, ",")
		}
		lines = append(lines, s)
	}
	for _, d := range p.Deferred {
		lines = append(lines, "deferred "+d.Address.String()+": "+d.Reason)
	}
	return lines, out
}

func applyThenEmpty(t *testing.T, dir, specFile string, extra ...string) {
	t.Helper()
	args := append([]string{"--sim", dir, "apply", "-f", specFile, "--yes"}, extra...)
	if code, out, errs := clitest.Run(t, args...); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := clitest.Run(t, "--sim", dir, "plan", "-f", specFile); code != 0 || !strings.Contains(out, "No changes.") {
		t.Fatalf("plan after apply: exit %d, want 0 and no changes\n%s%s", code, out, errs)
	}
}

// vfs returns what the simulated kernel has: sriov_numvfs, the virtfn
// links and the VF netdevs of pf0.
func vfs(t *testing.T, dir string) (num int, links, netdevs []string) {
	t.Helper()
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "sys/bus/pci/devices", pf0, "sriov_numvfs"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Sscanf(string(b), "%d", &num)
	m, _ := filepath.Glob(filepath.Join(dir, "sys/bus/pci/devices", pf0, "virtfn*"))
	for _, l := range m {
		target, err := os.Readlink(l)
		if err != nil {
			t.Fatal(err)
		}
		links = append(links, filepath.Base(l)+"->"+filepath.Base(target))
	}
	for _, n := range s.State().Netdevs {
		if n.VFOf == pf0 {
			netdevs = append(netdevs, n.Name)
		}
	}
	return num, links, netdevs
}

func TestEnableZeroToEight(t *testing.T) {
	dir := newSim(t, 8, 0)
	f := spec(t, "    sriov: {num_vfs: 8, drivers_autoprobe: true}\n")
	got, _ := planLines(t, dir, f, 2)
	want := []string{"sriov[0000:5e:00.0] runtime num_vfs:0->8"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("plan (-want +got):\n%s", diff)
	}
	applyThenEmpty(t, dir, f)
	num, links, netdevs := vfs(t, dir)
	if num != 8 || len(links) != 8 || len(netdevs) != 8 {
		t.Fatalf("after apply: numvfs %d, links %v, netdevs %v; want 8 of each", num, links, netdevs)
	}
	if links[0] != "virtfn0->0000:5e:00.2" {
		t.Errorf("virtfn0 = %s, want the VF at First VF Offset 2", links[0])
	}
}

// TestChangeEightToFourTwoWrites: the kernel refuses 4 while 8 VFs are
// enabled (EBUSY); the change writes 0 first and destroys every VF netdev.
func TestChangeEightToFourTwoWrites(t *testing.T) {
	dir := newSim(t, 8, 8)
	f := spec(t, "    sriov: {num_vfs: 4}\n")
	got, _ := planLines(t, dir, f, 2)
	want := []string{"sriov[0000:5e:00.0] runtime num_vfs:8->4 disrupts:ens1f0v0,ens1f0v1,ens1f0v2,ens1f0v3,ens1f0v4,ens1f0v5,ens1f0v6,ens1f0v7"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("plan (-want +got):\n%s", diff)
	}
	applyThenEmpty(t, dir, f)
	num, links, netdevs := vfs(t, dir)
	if num != 4 || len(links) != 4 || len(netdevs) != 4 {
		t.Fatalf("after apply: numvfs %d, links %v, netdevs %v; want 4 of each", num, links, netdevs)
	}
	s, _ := sim.Open(dir)
	for _, d := range s.State().Devices {
		if d.SRIOV != nil && len(d.SRIOV.Dmesg) > 0 {
			t.Errorf("the kernel logged %q: a write met EBUSY", d.SRIOV.Dmesg)
		}
	}
}

func TestSameCountNoWrite(t *testing.T) {
	dir := newSim(t, 8, 8)
	f := spec(t, "    sriov: {num_vfs: 8}\n")
	if got, _ := planLines(t, dir, f, 0); len(got) != 0 {
		t.Fatalf("plan for 8 VFs with 8 enabled: %v, want nothing", got)
	}
	applyThenEmpty(t, dir, f)
}

// TestAboveMaximum: at the limit it plans; one past it is an error at the
// spec line naming the firmware parameter to raise.
func TestAboveMaximum(t *testing.T) {
	dir := newSim(t, 8, 0)
	at := spec(t, "    sriov: {num_vfs: 8}\n")
	if got, _ := planLines(t, dir, at, 2); len(got) != 1 {
		t.Fatalf("num_vfs 8 of 8: %v", got)
	}
	past := spec(t, "    sriov:\n      num_vfs: 9\n")
	code, stdout, stderr := clitest.Run(t, "--sim", dir, "plan", "-f", past)
	out := stdout + stderr
	if code != 1 {
		t.Fatalf("plan for 9 VFs: exit %d, want 1\n%s", code, out)
	}
	for _, w := range []string{"host.yaml:5:16", "$.devices[0].sriov.num_vfs", "at most 8 VFs", "NUM_OF_VFS to at least 9"} {
		if !strings.Contains(out, w) {
			t.Errorf("error for 9 VFs lacks %q:\n%s", w, out)
		}
	}
}

// TestAboveMaximumStagedDefers: NUM_OF_VFS raised in the same spec is a
// firmware change for the next boot; the VFs wait for it, then come.
func TestAboveMaximumStagedDefers(t *testing.T) {
	dir := newSim(t, 8, 0)
	f := spec(t, "    firmware: {params: {NUM_OF_VFS: 16}}\n    sriov: {num_vfs: 12}\n")
	got, _ := planLines(t, dir, f, 2)
	want := []string{"firmware[0000:5e:00.0] next-boot NUM_OF_VFS:8->16",
		"deferred sriov[0000:5e:00.0]: waits for NUM_OF_VFS=16 on 0000:5e:00.0 (reboot); sriov_totalvfs is 8 now"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("plan (-want +got):\n%s", diff)
	}
	if code, out, errs := clitest.Run(t, "--sim", dir, "apply", "-f", f, "--yes"); code != 3 {
		t.Fatalf("apply: exit %d, want 3 (reboot needed)\n%s%s", code, out, errs)
	}
	if code, out, errs := clitest.Run(t, "sim", "reboot", dir); code != 0 {
		t.Fatalf("sim reboot: %d\n%s%s", code, out, errs)
	}
	got, _ = planLines(t, dir, f, 2)
	if diff := cmp.Diff([]string{"sriov[0000:5e:00.0] runtime num_vfs:0->12"}, got); diff != "" {
		t.Fatalf("plan after reboot (-want +got):\n%s", diff)
	}
	applyThenEmpty(t, dir, f)
}

func TestNoCapability(t *testing.T) {
	// The profile's firmware has SRIOV_EN=False: no sriov_* files.
	st, _ := sim.NewState("cx5-roce", "node1", 0)
	d2 := filepath.Join(t.TempDir(), "host")
	if _, err := sim.Create(d2, st); err != nil {
		t.Fatal(err)
	}
	f := spec(t, "    sriov: {num_vfs: 2}\n")
	_, out := planLines(t, d2, f, 1)
	if !strings.Contains(out, "no SR-IOV capability") || !strings.Contains(out, "SRIOV_EN: true") {
		t.Errorf("plan on a PF without SR-IOV:\n%s", out)
	}
	zero := spec(t, "    sriov: {num_vfs: 0}\n")
	if got, _ := planLines(t, d2, zero, 0); len(got) != 0 {
		t.Errorf("num_vfs 0 without SR-IOV plans %v, want nothing", got)
	}
}

// TestSimNumVFsRules checks the simulator against drivers/pci/iov.c
// sriov_numvfs_store: ERANGE above totalvfs, EBUSY for a second non-zero
// count, success without change for the same value, EINVAL for text.
func TestSimNumVFsRules(t *testing.T) {
	dir := newSim(t, 8, 0)
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := s.Host()
	name := "/sys/bus/pci/devices/" + pf0 + "/sriov_numvfs"
	for _, c := range []struct {
		write string
		errno syscall.Errno
		num   int
	}{
		{"9\n", syscall.ERANGE, 0},
		{"65536\n", syscall.ERANGE, 0},
		{"eight\n", syscall.EINVAL, 0},
		{"8\n", 0, 8},
		{"8\n", 0, 8},
		{"4\n", syscall.EBUSY, 8},
		{"0\n", 0, 0},
		{"0x4\n", 0, 4},
	} {
		err := h.FS.WriteAttr(name, []byte(c.write))
		if c.errno == 0 && err != nil || c.errno != 0 && !errors.Is(err, c.errno) {
			t.Fatalf("write %q: %v, want errno %v", c.write, err, c.errno)
		}
		if num, _, _ := vfs(t, dir); num != c.num {
			t.Fatalf("after %q: sriov_numvfs %d, want %d", c.write, num, c.num)
		}
	}
}

// TestManagementVFGuarded: a VF netdev carrying the default route goes
// away with a count change, so apply refuses it without --allow-mgmt
// (or --confirm-timeout), and the VFs stay as they were.
func TestManagementVFGuarded(t *testing.T) {
	dir := newSim(t, 8, 8, func(st *sim.State) { st.DefaultRoute = "ens1f0v3" })
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := s.Host()
	if err := h.Net.LinkSetUp("ens1f0v3", true); err != nil {
		t.Fatal(err)
	}
	f := spec(t, "    sriov: {num_vfs: 4}\n")
	code, out, errs := clitest.Run(t, "--sim", dir, "apply", "-f", f, "--yes")
	if code != 1 || !strings.Contains(out+errs, "ens1f0v3") {
		t.Fatalf("apply over the management VF: exit %d, want 1 naming ens1f0v3\n%s%s", code, out, errs)
	}
	if num, _, _ := vfs(t, dir); num != 8 {
		t.Fatalf("refused apply changed sriov_numvfs to %d", num)
	}
	applyThenEmpty(t, dir, f, "--allow-mgmt")
}
