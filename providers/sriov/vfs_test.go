package sriov_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

const ibPF = "0000:3b:00.0"

// newSRIOVHost is a host of profile with SR-IOV on in the firmware of
// every function (NUM_OF_VFS=total), and mutate applied.
func newSRIOVHost(t *testing.T, profile string, total int, mutate func(st *sim.State)) string {
	t.Helper()
	return simtest.Dir(t, profile, func(st *sim.State) {
		for _, a := range st.Firmware {
			for _, n := range []struct {
				name string
				v    int64
			}{{"SRIOV_EN", 1}, {"NUM_OF_VFS", int64(total)}} {
				p := a.Param(n.name)
				p.Current, p.Next = n.v, n.v
			}
		}
		if mutate != nil {
			mutate(st)
		}
	})
}

func pfState(t *testing.T, dir, pci string) *sim.SRIOVState {
	t.Helper()
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s.State().DeviceByPCI(pci).SRIOV
}

// TestIBVFGUIDs: on an InfiniBand PF, VF GUIDs are set through netlink
// and the VF driver is bound again so the VF takes them; the plan reads
// them back (ip -j link show, "node guid"), so apply then plan is empty.
// VFs created in the same plan get their GUIDs after the count.
func TestIBVFGUIDs(t *testing.T) {
	dir := newSRIOVHost(t, "cx6-vpi-ib", 8, nil)
	spec := clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \""+ibPF+"\"\n    sriov:\n      num_vfs: 2\n      vfs:\n"+
		"        - {vf: 0, node_guid: \"02:00:00:00:00:00:00:01\", port_guid: \"02:00:00:00:00:00:01:01\"}\n"+
		"        - {vf: 1, node_guid: \"02:00:00:00:00:00:00:02\", port_guid: \"02:00:00:00:00:00:01:02\", state: enable}\n")
	lines, _ := planLines(t, dir, spec, 2)
	want := []string{
		"sriov[0000:3b:00.0] runtime num_vfs:0->2",
		"sriov_vf[0000:3b:00.0/0] runtime node_guid:00:00:00:00:00:00:00:00->02:00:00:00:00:00:00:01 port_guid:00:00:00:00:00:00:00:00->02:00:00:00:00:00:01:01",
		"sriov_vf[0000:3b:00.0/1] runtime node_guid:00:00:00:00:00:00:00:00->02:00:00:00:00:00:00:02 port_guid:00:00:00:00:00:00:00:00->02:00:00:00:00:00:01:02 state:auto->enable",
	}
	if d := cmp.Diff(want, lines); d != "" {
		t.Fatalf("plan (-want +got):\n%s", d)
	}
	applyThenEmpty(t, dir, spec)
	st := pfState(t, dir, ibPF)
	if st.VFs[1].NodeGUID != "02:00:00:00:00:00:00:02" || st.VFs[1].LinkState != "enable" || st.Rebinds != 2 {
		t.Fatalf("VF 1 %+v after %d rebinds", st.VFs[1], st.Rebinds)
	}

	// A new GUID for an existing VF: one change, one more rebind, which
	// takes the VF's netdev away and back (disrupts).
	spec2 := clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \""+ibPF+"\"\n    sriov:\n      num_vfs: 2\n      vfs:\n"+
		"        - {vf: 0, node_guid: \"02:00:00:00:00:00:00:11\"}\n")
	lines, _ = planLines(t, dir, spec2, 2)
	if d := cmp.Diff([]string{"sriov_vf[0000:3b:00.0/0] runtime node_guid:02:00:00:00:00:00:00:01->02:00:00:00:00:00:00:11 disrupts:ib0v0"}, lines); d != "" {
		t.Fatalf("plan (-want +got):\n%s", d)
	}
	applyThenEmpty(t, dir, spec2)
	if st := pfState(t, dir, ibPF); st.Rebinds != 3 {
		t.Fatalf("%d rebinds, want 3", st.Rebinds)
	}
	showPlansNothing(t, dir, `vfs:
          - vf: 0
            node_guid: 02:00:00:00:00:00:00:11
            port_guid: 02:00:00:00:00:00:01:01
          - vf: 1
            node_guid: 02:00:00:00:00:00:00:02
            port_guid: 02:00:00:00:00:00:01:02
            state: enable`)
}

// showPlansNothing: show captures the VFs as want says, and the capture
// plans nothing on the same host.
func showPlansNothing(t *testing.T, dir, want string) {
	t.Helper()
	code, out, errs := clitest.Run(t, "--sim", dir, "show")
	trim := func(s string) string {
		var ls []string
		for _, l := range strings.Split(s, "\n") {
			ls = append(ls, strings.TrimSpace(l))
		}
		return strings.Join(ls, "\n")
	}
	if code != 0 || !strings.Contains(trim(out), trim(want)) {
		t.Fatalf("show: exit %d, want it to contain\n%s\n%s%s", code, want, out, errs)
	}
	captured := clitest.WriteSpec(t, out)
	if code, out, errs := clitest.Run(t, "--sim", dir, "plan", "-f", captured); code != 0 || !strings.Contains(out, "No changes.") {
		t.Fatalf("plan of the capture: exit %d\n%s%s", code, out, errs)
	}
}

// TestEthernetVFSettings: on an Ethernet PF, mac, trust, spoofchk and
// state; upper-case MACs are the same MAC.
func TestEthernetVFSettings(t *testing.T) {
	dir := newSRIOVHost(t, "cx5-roce", 8, nil)
	spec := clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \""+pf0+"\"\n    sriov:\n      num_vfs: 4\n      vfs:\n"+
		"        - {vf: 3, mac: \"02:AA:00:00:00:03\", trust: true, spoofchk: false}\n")
	applyThenEmpty(t, dir, spec)
	v := pfState(t, dir, pf0).VFs[3]
	if v.MAC != "02:aa:00:00:00:03" || !v.Trust || v.Spoofchk {
		t.Fatalf("VF 3: %+v", v)
	}
	if st := pfState(t, dir, pf0); st.Rebinds != 0 {
		t.Errorf("an Ethernet VF was rebound %d times", st.Rebinds)
	}
	showPlansNothing(t, dir, `vfs:
          - vf: 0
            spoofchk: true
          - vf: 1
            spoofchk: true
          - vf: 2
            spoofchk: true
          - vf: 3
            mac: 02:aa:00:00:00:03
            trust: true
            spoofchk: false`)
}

// TestVFFindings: what the PF's driver cannot do, or rdmaform cannot
// verify, is a finding at the VF's spec line and nothing is applied.
func TestVFFindings(t *testing.T) {
	for _, c := range []struct {
		name, profile, pci, vf string
		mutate                 func(st *sim.State)
		want                   string
	}{
		{"mac on InfiniBand", "cx6-vpi-ib", ibPF, "{vf: 0, mac: \"02:00:00:00:00:01\"}", nil,
			"0000:3b:00.0 is an InfiniBand PF (ib0): its VFs take node_guid, port_guid and state, not mac, trust or spoofchk"},
		{"GUID on Ethernet", "cx5-roce", pf0, "{vf: 0, node_guid: \"02:00:00:00:00:00:00:01\"}", nil,
			"0000:5e:00.0 is an Ethernet PF (ens1f0np0): VF GUIDs are InfiniBand; use mac"},
		{"GUIDs not reported", "cx6-vpi-ib", ibPF, "{vf: 0, node_guid: \"02:00:00:00:00:00:00:01\"}", func(st *sim.State) {
			st.DeviceByPCI(ibPF).SRIOV = &sim.SRIOVState{NoGUIDReadback: true}
		}, "this kernel does not report VF GUIDs (before 5.5, or ib0's driver lacks ndo_get_vf_guid), so rdmaform cannot verify them"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := newSRIOVHost(t, c.profile, 8, c.mutate)
			// VFs exist already (the GUID case needs them read).
			enable := clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \""+c.pci+"\"\n    sriov: {num_vfs: 2}\n")
			applyThenEmpty(t, dir, enable)
			spec := clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \""+c.pci+"\"\n    sriov:\n      num_vfs: 2\n      vfs:\n        - "+c.vf+"\n")
			_, out := planLines(t, dir, spec, 1)
			if !strings.Contains(out, c.want) || !strings.Contains(out, ".sriov.vfs[0]") {
				t.Fatalf("want a finding at vfs[0] containing %q:\n%s", c.want, out)
			}
		})
	}
}

// TestVFRevert: an unconfirmed apply puts a VF's settings back.
func TestVFRevert(t *testing.T) {
	dir := newSRIOVHost(t, "cx5-roce", 8, nil)
	applyThenEmpty(t, dir, clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \""+pf0+"\"\n    sriov: {num_vfs: 2}\n"))
	before := *pfState(t, dir, pf0).VFs[1]
	spec := clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \""+pf0+"\"\n    sriov:\n      num_vfs: 2\n      vfs: [{vf: 1, mac: \"02:00:00:00:00:09\", trust: true, state: disable}]\n")
	code, out, errs := clitest.Run(t, "--sim", dir, "apply", "--yes", "--confirm-timeout", "1s", "-f", spec)
	if code != 1 || !strings.Contains(out+errs, "Reverted 1 changes: sriov_vf[0000:5e:00.0/1]") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if d := cmp.Diff(before, *pfState(t, dir, pf0).VFs[1]); d != "" {
		t.Fatalf("VF 1 after the rollback (-before +after):\n%s", d)
	}
}

// TestNetworkManagerOwnsTheVFs: a NetworkManager profile with an sriov
// setting on the PF's netdev sets the VF count whenever it activates, so
// a spec that sets it too is "two owners", an error at the sriov line;
// a profile without the setting is no owner.
func TestNetworkManagerOwnsTheVFs(t *testing.T) {
	dir := newSRIOVHost(t, "cx6-vpi-ib", 8, nil)
	for _, args := range [][]string{
		{"nmcli", "connection", "add", "type", "infiniband", "con-name", "ib1-plain", "ifname", "ib1", "connection.autoconnect", "no"},
		{"nmcli", "connection", "add", "type", "infiniband", "con-name", "ib0-vfs", "ifname", "ib0", "connection.autoconnect", "no", "sriov.total-vfs", "4"},
	} {
		if code, out, errs := clitest.Run(t, append([]string{"sim", "tool", dir, "--"}, args...)...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
	}
	spec := clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \""+ibPF+"\"\n    sriov: {num_vfs: 2}\n  - pci: \"0000:3b:00.1\"\n    sriov: {num_vfs: 2}\n")
	_, out := planLines(t, dir, spec, 1)
	if !strings.Contains(out, `"path": "$.devices[0].sriov"`) || !strings.Contains(out, `NetworkManager connection \"ib0-vfs\"`) ||
		!strings.Contains(out, "sets sriov.total-vfs=4 on ib0, the netdev of 0000:3b:00.0: two owners of one PF's VFs") {
		t.Fatalf("want the two-owners finding at devices[0].sriov:\n%s", out)
	}
	if strings.Count(out, "two owners") != 1 || !strings.Contains(out, `"address": "sriov[0000:3b:00.1]"`) {
		t.Errorf("a profile without an sriov setting is an owner:\n%s", out)
	}
}

// TestShowCapturesSpoofchk: show captures spoofchk on every VF of an
// Ethernet PF, off as well as on (the default is the driver's), so its
// capture applied to a host whose VFs check spoofing turns the check off,
// and audit of that host against the capture reports the difference.
func TestShowCapturesSpoofchk(t *testing.T) {
	dir := newSRIOVHost(t, "cx5-roce", 8, nil)
	applyThenEmpty(t, dir, spec(t, "    sriov:\n      num_vfs: 2\n      vfs:\n        - {vf: 1, spoofchk: false}\n"))
	code, captured, errs := clitest.Run(t, "--sim", dir, "show")
	if code != 0 {
		t.Fatalf("show: exit %d\n%s", code, errs)
	}
	want := "vfs:\n- vf: 0\nspoofchk: true\n- vf: 1\nspoofchk: false\n"
	var ls []string
	for _, l := range strings.Split(captured, "\n") {
		ls = append(ls, strings.TrimSpace(l))
	}
	if !strings.Contains(strings.Join(ls, "\n"), want) {
		t.Fatalf("show does not capture both VFs' spoofchk:\n%s", captured)
	}
	capFile := clitest.WriteSpec(t, captured)

	// A host like the first but with the driver's default on both VFs.
	other := newSRIOVHost(t, "cx5-roce", 8, nil)
	applyThenEmpty(t, other, spec(t, "    sriov:\n      num_vfs: 2\n"))
	if code, out, _ := clitest.Run(t, "--sim", other, "audit", "-f", capFile); code == 0 || !strings.Contains(out, "spoofchk") {
		t.Fatalf("audit against the capture: exit %d, want a spoofchk drift\n%s", code, out)
	}
	lines, _ := planLines(t, other, capFile, 2)
	var vf []string
	for _, l := range lines {
		if strings.HasPrefix(l, "sriov_vf[") {
			vf = append(vf, l)
		}
	}
	if d := cmp.Diff([]string{"sriov_vf[0000:5e:00.0/1] runtime spoofchk:true->false"}, vf); d != "" {
		t.Fatalf("plan of the capture elsewhere (-want +got):\n%s\nall: %q", d, lines)
	}
	applyThenEmpty(t, other, capFile)
	if v := pfState(t, other, pf0).VFs[1]; v.Spoofchk {
		t.Fatalf("VF 1 still checks spoofing after the capture was applied: %+v", v)
	}
}
