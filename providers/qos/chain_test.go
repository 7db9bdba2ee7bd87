package qos_test

import (
	"os"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// chainSpec is a spec with rdma_cm and qos on one port.
func chainSpec(t *testing.T, pci, roce, qos string) string {
	t.Helper()
	return clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \""+pci+"\"\n    ports:\n      - port: 1\n        roce: "+roce+"\n        qos: "+qos+"\n")
}

const (
	etsNoShare  = "ets: {prio_tc: [0, 0, 0, 1, 0, 0, 2, 0], tsa: [ets, ets, strict, ets, ets, ets, ets, ets], bw: [100, 0, 0, 0, 0, 0, 0, 0]}"
	etsCNPLossy = "ets: {prio_tc: [0, 0, 0, 1, 0, 0, 0, 0], tsa: [ets, ets, ets, ets, ets, ets, ets, ets], bw: [50, 50, 0, 0, 0, 0, 0, 0]}"
)

// TestPlanNamesTheFirstBrokenLink: a spec whose lossless path, applied,
// breaks on the NIC is a plan error at the line of the broken link,
// naming the chain up to it, with nothing planned for the port: one case
// per link, on the MLNX_OFED host (cx6dx-ofed).
func TestPlanNamesTheFirstBrokenLink(t *testing.T) {
	for _, c := range []struct {
		name, roce, qos, at, want string
	}{
		{"tos", "{mode: v2, tos: 26}", "{trust: dscp, dscp_map: {26: 3}, pfc: [3], ecn: [3]}", ":6:",
			"the lossless path of mlx5_0/1 breaks: rdma_cm ToS 26 (the spec) → DSCP 6 → priority 0, but the dscp_map puts DSCP 26 on lossless priority 3: the ToS is DSCP << 2 (| 2 for ECN), so DSCP 26 is ToS 104 (106 with ECN)"},
		{"dscp map", "{mode: v2, dscp: 26, ecn: true}", "{trust: dscp, dscp_map: {26: 2}, pfc: [3], ecn: [3]}", ":7:",
			"rdma_cm ToS 106 (the spec) → DSCP 26 → priority 2 (dscp map), but PFC is on priority 3"},
		{"pfc off", "{mode: v2, dscp: 26, ecn: true}", "{trust: dscp, pfc: [], ecn: [3]}", ":7:",
			"rdma_cm ToS 106 (the spec) → DSCP 26 → priority 3 (dscp map) → PFC is off on priority 3 (off on every priority)"},
		{"ecn off", "{mode: v2, dscp: 26, ecn: true}", "{trust: dscp, pfc: [3], ecn: [4]}", ":7:",
			"→ priority 3 (dscp map) → PFC on, but ECN (DCQCN) is off on priority 3"},
		{"no ets share", "{mode: v2, dscp: 26, ecn: true}", "{trust: dscp, pfc: [3], ecn: [3], " + etsNoShare + "}", ":7:",
			"→ PFC on → ECN on → traffic class 1 has no ETS share (tsa ets, 0% bandwidth)"},
		{"cnp lossy", "{mode: v2, dscp: 26, ecn: true}", "{trust: dscp, pfc: [3], ecn: [3], cnp: {priority: 6}, " + etsCNPLossy + "}", ":7:",
			"CNPs go out on priority 6, which is neither in pfc (3) nor on a strict ETS class"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := simtest.Dir(t, "cx6dx-ofed", nil)
			spec := chainSpec(t, ofed, c.roce, c.qos)
			before, err := os.ReadFile(dir + "/sim.yaml")
			if err != nil {
				t.Fatal(err)
			}
			p := planJSON(t, dir, spec, 1)
			if len(p.Errors) != 1 || !strings.Contains(p.Errors[0].Message, c.want) {
				t.Fatalf("errors %+v\nwant one containing %q", p.Errors, c.want)
			}
			for _, ch := range p.Changes {
				if ch.Address == "qos[mlx5_0/1]" {
					t.Errorf("qos planned despite the broken chain: %+v", ch)
				}
			}
			code, out, _ := clitest.Run(t, "--sim", dir, "plan", "-f", spec)
			if code != 1 || !strings.Contains(out, spec+c.at) {
				t.Errorf("plan: exit %d, want 1 with the finding at %s%s\n%s", code, spec, c.at, out)
			}
			if code, _, _ := clitest.Run(t, "--sim", dir, "apply", "--yes", "-f", spec); code == 0 {
				t.Errorf("apply of a broken chain exited 0")
			}
			if after, _ := os.ReadFile(dir + "/sim.yaml"); string(after) != string(before) {
				t.Errorf("the host changed")
			}
		})
	}
}

// TestPlanChainHolds: the lossless example on cx6dx-ofed, and the same
// chain without per-priority ECN on the upstream cx5-roce host (ECN not
// readable there: unknown, not broken), plan, apply, then an empty plan.
func TestPlanChainHolds(t *testing.T) {
	dir := simtest.Dir(t, "cx6dx-ofed", nil)
	applyThenEmpty(t, dir, "../../examples/lossless-roce.yaml")
	dir = simtest.Dir(t, "cx5-roce", nil)
	spec := chainSpec(t, cx5, "{mode: v2, dscp: 26, ecn: true}", "{trust: dscp, dscp_map: {26: 3, 48: 6}, pfc: [3], pause: false}")
	applyThenEmpty(t, dir, spec)
	// The same host, PFC off: the upstream host's chain breaks as well.
	spec = chainSpec(t, cx5, "{mode: v2, dscp: 26, ecn: true}", "{trust: dscp, pfc: []}")
	p := planJSON(t, dir, spec, 1)
	if len(p.Errors) != 1 || !strings.Contains(p.Errors[0].Message, "→ PFC is off on priority 3") {
		t.Fatalf("errors %+v", p.Errors)
	}
}
