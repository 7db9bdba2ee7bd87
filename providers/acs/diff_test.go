package acs

import (
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// TestPlanSharedBridge: two functions below one switch share its
// upstream port and their GPU's downstream port (PHB-free PIX paths):
// peer_to_peer from both plans each bridge once; an explicit value on a
// shared bridge wins over the other device's peer_to_peer; two explicit
// values that differ are a finding at the second naming the first.
func TestPlanSharedBridge(t *testing.T) {
	aff := inventory.Affinity{GPU: "0000:05:00.0", Relation: inventory.RelationPIX, Bridges: []string{"0000:03:00.0", "0000:02:00.0", "0000:03:02.0"}}
	aff1 := inventory.Affinity{GPU: "0000:05:00.0", Relation: inventory.RelationPIX, Bridges: []string{"0000:03:01.0", "0000:02:00.0", "0000:03:02.0"}}
	a := &inventory.Device{Name: "mlx5_0", PCI: "0000:04:00.0", Bridges: []string{"0000:03:00.0", "0000:02:00.0", "0000:01:00.0"}, GPUAffinity: []inventory.Affinity{aff}}
	b := &inventory.Device{Name: "mlx5_1", PCI: "0000:06:00.0", Bridges: []string{"0000:03:01.0", "0000:02:00.0", "0000:01:00.0"}, GPUAffinity: []inventory.Affinity{aff1}}
	obs := &Observed{Bridges: map[string]Cap{
		"0000:01:00.0": {Offset: 0x148, Bits: 0x7f, Control: 0x1d},
		"0000:02:00.0": {},
		"0000:03:00.0": {Offset: 0x148, Bits: 0x7f, Control: 0x1d},
		"0000:03:01.0": {Offset: 0x148, Bits: 0x7f, Control: 0x1d},
		"0000:03:02.0": {Offset: 0x148, Bits: 0x7f, Control: 0x3d},
	}}
	yes := true
	ctl := func(v int) *int { return &v }
	run := func(acsA, acsB *schema.ACS) plan.Proposal {
		spec := &schema.Spec{Devices: []schema.Device{{PCI: a.PCI, ACS: acsA}, {PCI: b.PCI, ACS: acsB}}}
		req := &plan.Request{Spec: spec, Inv: &inventory.Inventory{Devices: []*inventory.Device{a, b}}, Devices: []*inventory.Device{a, b}}
		return (&Provider{}).Plan(req, obs, nil)
	}
	changes := func(p plan.Proposal) map[string]string {
		out := map[string]string{}
		for _, c := range p.Changes {
			out[c.Address.Key] = c.Attributes[0].After
		}
		return out
	}
	p := run(&schema.ACS{PeerToPeer: &yes}, &schema.ACS{PeerToPeer: &yes})
	if len(p.Errors) != 0 || len(p.Changes) != 3 || changes(p)["0000:03:02.0"] != "0x0011 (SrcValid UpstreamFwd)" {
		t.Errorf("peer_to_peer twice: %v %v", changes(p), p.Errors)
	}
	p = run(&schema.ACS{PeerToPeer: &yes}, &schema.ACS{Bridges: []schema.ACSBridge{{PCI: "0000:03:02.0", Control: ctl(0x19)}}})
	if len(p.Errors) != 0 || changes(p)["0000:03:02.0"] != "0x0019 (SrcValid CmpltRedir UpstreamFwd)" {
		t.Errorf("explicit over peer_to_peer: %v %v", changes(p), p.Errors)
	}
	p = run(&schema.ACS{Bridges: []schema.ACSBridge{{PCI: "0000:01:00.0", Control: ctl(0x11)}}}, &schema.ACS{Bridges: []schema.ACSBridge{{PCI: "01:00.0", Control: ctl(0x01)}}})
	if len(p.Errors) != 1 || !strings.Contains(p.Errors[0].Message, "bridge 0000:01:00.0 is also given ACS Control 0x0011 (SrcValid UpstreamFwd) at $.devices[0].acs.bridges[0].control") || p.Errors[0].Path != "$.devices[1].acs.bridges[0].control" {
		t.Errorf("two values: %v", p.Errors)
	}
}
