package sriov_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/sim"
)

// planFails plans spec and wants exit 1 with every one of wants in the
// output.
func planFails(t *testing.T, dir, spec string, wants ...string) {
	t.Helper()
	code, out, errs := clitest.Run(t, "--sim", dir, "plan", "-f", spec)
	if code != 1 {
		t.Fatalf("plan: exit %d, want 1\n%s%s", code, out, errs)
	}
	for _, w := range wants {
		if !strings.Contains(out+errs, w) {
			t.Errorf("plan lacks %q:\n%s%s", w, out, errs)
		}
	}
}

// TestVFGivenPFMACOnHost: the PF's MAC as the simulated host has it at
// plan time is refused for a VF at the VF's mac line; a MAC of its own
// applies, and the plan is then empty.
func TestVFGivenPFMACOnHost(t *testing.T) {
	dir := newSim(t, 8, 2)
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	pfMAC := s.State().Netdev("ens1f0np0").MAC
	taken := spec(t, "    sriov:\n      num_vfs: 2\n      vfs:\n        - {vf: 1, mac: \""+strings.ToUpper(pfMAC)+"\"}\n")
	planFails(t, dir, taken, "host.yaml:7:24", "$.devices[0].sriov.vfs[0].mac", pfMAC+" is the MAC of the PF ens1f0np0")
	own := spec(t, "    sriov:\n      num_vfs: 2\n      vfs:\n        - {vf: 1, mac: \"02:00:00:00:00:11\"}\n")
	applyThenEmpty(t, dir, own)
}

// TestVFGivenPFGUIDOnHost: the same for an InfiniBand PF's node GUID,
// which sysfs spells b859:9f03:0022:626e and ip link b8:59:9f:03:....
func TestVFGivenPFGUIDOnHost(t *testing.T) {
	dir := newSRIOVHost(t, "cx6-vpi-ib", 8, nil)
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	hex := strings.ReplaceAll(s.State().DeviceByPCI(ibPF).NodeGUID, ":", "")
	var parts []string
	for i := 0; i < len(hex); i += 2 {
		parts = append(parts, hex[i:i+2])
	}
	guid := strings.Join(parts, ":")
	body := func(g string) string {
		return clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \""+ibPF+"\"\n    sriov:\n      num_vfs: 2\n      vfs:\n        - {vf: 0, port_guid: \""+g+"\"}\n")
	}
	planFails(t, dir, body(guid), "host.yaml:7:30", "$.devices[0].sriov.vfs[0].port_guid", guid+" is a GUID of the PF ib0")
	applyThenEmpty(t, dir, body("02:00:00:00:00:00:01:01"))
}

// TestVFSettingsFollowTheLinkAtBoot: a VPI card switched by firmware
// LINK_TYPE in the same spec. To Ethernet: a VF MAC waits for the reboot
// (the InfiniBand PF cannot take it now), then applies. Back to
// InfiniBand: the MAC is an error at the first plan, not after the
// reboot, and GUIDs wait for it.
func TestVFSettingsFollowTheLinkAtBoot(t *testing.T) {
	dir := newSRIOVHost(t, "cx6-vpi-ib", 8, nil)
	card := func(lt, vf string) string {
		return clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \""+ibPF+"\"\n    firmware: {params: {LINK_TYPE_P1: "+lt+"}}\n    sriov:\n      num_vfs: 2\n      vfs:\n        - "+vf+"\n")
	}
	mac := "{vf: 0, mac: \"02:00:00:00:00:21\"}"
	guid := "{vf: 0, node_guid: \"02:00:00:00:00:00:00:21\"}"

	planFails(t, dir, card("ETH", guid), "host.yaml:8:11", "becomes an Ethernet PF at the next boot (LINK_TYPE_P1=ETH)")
	toEth := card("ETH", mac)
	got, _ := planLines(t, dir, toEth, 2)
	want := []string{
		"firmware[0000:3b:00.0] next-boot LINK_TYPE_P1:IB->ETH disrupts:ib0",
		"sriov[0000:3b:00.0] runtime num_vfs:0->2",
		"deferred sriov_vf[0000:3b:00.0/0]: waits for LINK_TYPE_P1=ETH on 0000:3b:00.0 (reboot)",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("plan (-want +got):\n%s", d)
	}
	rebootApplied(t, dir, toEth)

	planFails(t, dir, card("IB", mac), "host.yaml:8:11", "becomes an InfiniBand PF at the next boot (LINK_TYPE_P1=IB)")
	rebootApplied(t, dir, card("IB", guid))
}

// rebootApplied applies a spec that stages firmware (exit 3), reboots
// the simulated host, and applies it again until the plan is empty.
func rebootApplied(t *testing.T, dir, spec string) {
	t.Helper()
	if code, out, errs := clitest.Run(t, "--sim", dir, "apply", "-f", spec, "--yes"); code != 3 {
		t.Fatalf("apply: exit %d, want 3 (reboot needed)\n%s%s", code, out, errs)
	}
	if code, out, errs := clitest.Run(t, "sim", "reboot", dir); code != 0 {
		t.Fatalf("sim reboot: %d\n%s%s", code, out, errs)
	}
	applyThenEmpty(t, dir, spec)
}

// TestVFsOfADeviceSelectedByName: a PF selected by its RDMA name gets its
// VF settings under its PCI address, as one selected by PCI address.
func TestVFsOfADeviceSelectedByName(t *testing.T) {
	dir := newSim(t, 8, 2)
	f := clitest.WriteSpec(t, "version: 1\ndevices:\n  - name: mlx5_0\n    sriov:\n      num_vfs: 2\n      vfs:\n        - {vf: 1, mac: \"02:00:00:00:00:31\", trust: true}\n")
	got, _ := planLines(t, dir, f, 2)
	if d := cmp.Diff([]string{"sriov_vf[" + pf0 + "/1] runtime mac:00:00:00:00:00:00->02:00:00:00:00:31 trust:false->true"}, got); d != "" {
		t.Fatalf("plan (-want +got):\n%s", d)
	}
	applyThenEmpty(t, dir, f)
}
