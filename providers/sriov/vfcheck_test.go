package sriov

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// vfPlan plans spec's sriov block (num_vfs 2, both VFs enabled) on one PF
// at 0000:3b:00.0 and returns its changes, deferrals and findings in
// comparable form ("line:col path: message" for a finding).
func vfPlan(t *testing.T, vfs string, pf *PF, facts *plan.Facts) []string {
	t.Helper()
	req := pfRequest(t, "sriov:\n      num_vfs: 2\n      vfs:\n"+vfs, pf.IB)
	if facts == nil {
		facts = plan.NewFacts()
	}
	prop := (&Provider{}).Plan(req, &Observed{PFs: map[int]*PF{0: pf}}, facts)
	var out []string
	for _, c := range prop.Changes {
		s := c.Address.String()
		for _, a := range c.Attributes {
			s += " " + a.Name + ":" + a.Before + "->" + a.After
		}
		out = append(out, s)
	}
	for _, d := range prop.Deferred {
		out = append(out, "deferred "+d.Address.String()+": "+d.Reason)
	}
	for _, e := range prop.Errors {
		out = append(out, e.String())
	}
	return out
}

// pfRequest is the request of a spec whose one device, the PF mlx5_0 at
// 0000:3b:00.0, has body under it ("sriov: ..."); ib says its port is
// InfiniBand.
func pfRequest(t *testing.T, body string, ib bool) *plan.Request {
	t.Helper()
	spec, rep := schema.Parse("host.yaml", []byte("version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    "+body))
	if len(rep) > 0 {
		t.Fatalf("spec: %v", rep)
	}
	port := inventory.Port{Num: 1, LinkLayer: "Ethernet"}
	if ib {
		port.LinkLayer = "InfiniBand"
	}
	dev := &inventory.Device{Name: "mlx5_0", PCI: "0000:3b:00.0", Ports: []*inventory.Port{&port}}
	return &plan.Request{Spec: spec, Inv: &inventory.Inventory{Devices: []*inventory.Device{dev}}, Devices: []*inventory.Device{dev}}
}

// ethPF and ibPF have 2 VFs, all unset, and the PF's own addresses.
func ethPF() *PF {
	return &PF{TotalVFs: 8, NumVFs: 2, Autoprobe: true, Netdev: "ens1f0np0", Port: 1, MAC: "0e:42:a1:65:1d:2a",
		VFInfo: map[int]VFInfo{0: {MAC: zeroMAC, State: "auto", Spoofchk: true}, 1: {MAC: zeroMAC, State: "auto", Spoofchk: true}}}
}

func ibPF() *PF {
	unset := VFInfo{MAC: zeroMAC, State: "auto", NodeGUID: zeroGUID, PortGUID: zeroGUID}
	return &PF{TotalVFs: 8, NumVFs: 2, Autoprobe: true, Netdev: "ib0", IB: true, Port: 1,
		GUIDs: []string{"b8:59:9f:03:00:22:62:6e", "b8:59:9f:03:00:22:62:6f"}, VFInfo: map[int]VFInfo{0: unset, 1: unset}}
}

// TestVFTakesPFAddress: a VF given its PF's MAC, node GUID or port GUID
// is an error at that setting's line; another address plans.
func TestVFTakesPFAddress(t *testing.T) {
	for _, tc := range []struct {
		name, vfs string
		pf        *PF
		want      []string
	}{
		{name: "PF's MAC", pf: ethPF(), vfs: "        - {vf: 0, mac: \"0E:42:A1:65:1D:2A\"}\n",
			want: []string{"host.yaml:7:24: error: $.devices[0].sriov.vfs[0].mac: 0e:42:a1:65:1d:2a is the MAC of the PF ens1f0np0; a VF needs a MAC of its own"}},
		{name: "a MAC of its own", pf: ethPF(), vfs: "        - {vf: 0, mac: \"0e:42:a1:65:1d:2b\"}\n",
			want: []string{"sriov_vf[0000:3b:00.0/0] mac:00:00:00:00:00:00->0e:42:a1:65:1d:2b"}},
		{name: "PF's node GUID", pf: ibPF(), vfs: "        - {vf: 1, node_guid: \"b8:59:9f:03:00:22:62:6e\", port_guid: \"02:00:00:00:00:00:01:02\"}\n",
			want: []string{"host.yaml:7:30: error: $.devices[0].sriov.vfs[0].node_guid: b8:59:9f:03:00:22:62:6e is a GUID of the PF ib0 (its node or port GUID); a VF needs a GUID of its own"}},
		{name: "PF's port GUID as a port GUID", pf: ibPF(), vfs: "        - {vf: 1, port_guid: \"b8:59:9f:03:00:22:62:6f\"}\n",
			want: []string{"host.yaml:7:30: error: $.devices[0].sriov.vfs[0].port_guid: b8:59:9f:03:00:22:62:6f is a GUID of the PF ib0 (its node or port GUID); a VF needs a GUID of its own"}},
		{name: "GUIDs of its own", pf: ibPF(), vfs: "        - {vf: 1, node_guid: \"b8:59:9f:03:00:22:62:70\", port_guid: \"b8:59:9f:03:00:22:62:70\"}\n",
			want: []string{"sriov_vf[0000:3b:00.0/1] node_guid:00:00:00:00:00:00:00:00->b8:59:9f:03:00:22:62:70 port_guid:00:00:00:00:00:00:00:00->b8:59:9f:03:00:22:62:70"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, vfPlan(t, tc.vfs, tc.pf, nil)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestVFSettingsForTheLinkAtBoot: a firmware LINK_TYPE that changes the
// PF's link layer at the next boot decides what its VFs can take. What
// the PF will not take then is an error now (not after the reboot); what
// it takes only then waits for the reboot; state fits both.
func TestVFSettingsForTheLinkAtBoot(t *testing.T) {
	toIB := plan.LinkChange{Device: "0000:3b:00.0", Port: 1, To: "InfiniBand", When: plan.NextBoot, Setting: "LINK_TYPE_P1=IB"}
	toEth := plan.LinkChange{Device: "0000:3b:00.0", Port: 1, To: "Ethernet", When: plan.NextBoot, Setting: "LINK_TYPE_P1=ETH"}
	otherPort := plan.LinkChange{Device: "0000:3b:00.1", Port: 1, To: "InfiniBand", When: plan.NextBoot, Setting: "LINK_TYPE_P2=IB"}
	mac := "        - {vf: 0, mac: \"02:00:00:00:00:01\"}\n"
	guid := "        - {vf: 0, node_guid: \"02:00:00:00:00:00:00:01\"}\n"
	state := "        - {vf: 0, state: enable}\n"
	waits := func(l plan.LinkChange) []string {
		return []string{"deferred sriov_vf[0000:3b:00.0/0]: waits for " + l.Setting + " on 0000:3b:00.0 (reboot)"}
	}
	for _, tc := range []struct {
		name, vfs string
		pf        *PF
		boot      *plan.LinkChange
		want      []string
	}{
		{name: "Ethernet now, InfiniBand at boot: mac", pf: ethPF(), boot: &toIB, vfs: mac,
			want: []string{"host.yaml:7:11: error: $.devices[0].sriov.vfs[0]: 0000:3b:00.0 becomes an InfiniBand PF at the next boot (LINK_TYPE_P1=IB): its VFs take node_guid, port_guid and state then, not mac, trust or spoofchk (IPoIB has no such VF operations)"}},
		{name: "Ethernet now, InfiniBand at boot: GUID", pf: ethPF(), boot: &toIB, vfs: guid, want: waits(toIB)},
		{name: "Ethernet now, InfiniBand at boot: state", pf: ethPF(), boot: &toIB, vfs: state, want: waits(toIB)},
		{name: "InfiniBand now, Ethernet at boot: GUID", pf: ibPF(), boot: &toEth, vfs: guid,
			want: []string{"host.yaml:7:11: error: $.devices[0].sriov.vfs[0]: 0000:3b:00.0 becomes an Ethernet PF at the next boot (LINK_TYPE_P1=ETH): VF GUIDs are InfiniBand; use mac"}},
		{name: "InfiniBand now, Ethernet at boot: mac", pf: ibPF(), boot: &toEth, vfs: mac, want: waits(toEth)},
		{name: "InfiniBand now and at boot: mac", pf: ibPF(), vfs: mac,
			want: []string{"host.yaml:7:11: error: $.devices[0].sriov.vfs[0]: 0000:3b:00.0 is an InfiniBand PF (ib0): its VFs take node_guid, port_guid and state, not mac, trust or spoofchk (IPoIB has no such VF operations)"}},
		{name: "Ethernet now and at boot: GUID", pf: ethPF(), vfs: guid,
			want: []string{"host.yaml:7:11: error: $.devices[0].sriov.vfs[0]: 0000:3b:00.0 is an Ethernet PF (ens1f0np0): VF GUIDs are InfiniBand; use mac"}},
		{name: "the card's other port changes", pf: ethPF(), boot: &otherPort, vfs: mac,
			want: []string{"sriov_vf[0000:3b:00.0/0] mac:00:00:00:00:00:00->02:00:00:00:00:01"}},
		{name: "staged to what it is", pf: ethPF(), boot: &toEth, vfs: mac,
			want: []string{"sriov_vf[0000:3b:00.0/0] mac:00:00:00:00:00:00->02:00:00:00:00:01"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			facts := plan.NewFacts()
			if tc.boot != nil {
				facts.ChangeLink(*tc.boot)
			}
			got := vfPlan(t, tc.vfs, tc.pf, facts)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestGUIDOf: sysfs's GUID form becomes ip link's; anything else is not
// a GUID.
func TestGUIDOf(t *testing.T) {
	for in, want := range map[string]string{
		"b859:9f03:0022:626e":   "b8:59:9f:03:00:22:62:6e",
		"B859:9F03:0022:626E":   "b8:59:9f:03:00:22:62:6e",
		"b8599f030022626e":      "",
		"b859:9f03:0022:626":    "",
		"b859:9f03:0022:626e:0": "",
		"":                      "",
	} {
		if got := guidOf(in); got != want {
			t.Errorf("guidOf(%q) = %q, want %q", in, got, want)
		}
	}
	if !strings.Contains(guidOf("0002:c903:000c:c89a"), "c9:03") {
		t.Errorf("guidOf keeps the bytes in order")
	}
}
