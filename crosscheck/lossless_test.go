package crosscheck

import (
	"fmt"
	"strings"
	"testing"
)

// TestLintLosslessChain: each spec's lossless chain, on its own: one host
// per link, each on a network of its own (no cross-host comparison), the
// first broken link reported at its key, an error where the NIC breaks
// it, a warning where only the switches could make it fine. The good
// host has no finding; the CNP priority stays cnpClass's one finding.
func TestLintLosslessChain(t *testing.T) {
	const (
		roce       = "{mode: v2, dscp: 26, ecn: true}"
		etsNoShare = "ets: {prio_tc: [0, 0, 0, 1, 0, 0, 2, 0], tsa: [ets, ets, strict, ets, ets, ets, ets, ets], bw: [100, 0, 0, 0, 0, 0, 0, 0]}"
		etsLossy   = "ets: {prio_tc: [0, 0, 0, 1, 0, 0, 0, 0], tsa: [ets, ets, ets, ets, ets, ets, ets, ets], bw: [50, 50, 0, 0, 0, 0, 0, 0]}"
	)
	cases := []struct {
		file, roce, qos string
		path            string // "" for no finding
		warning         bool
		want            string
	}{
		{"good.yaml", roce, "{trust: dscp, dscp_map: {26: 3, 48: 6}, pfc: [3], ecn: [3], cnp: {dscp: 26, priority: 3}}", "", false, ""},
		{"tos.yaml", "{mode: v2, tos: 26}", "{trust: dscp, dscp_map: {26: 3}, pfc: [3]}", ".roce.tos", false,
			"the lossless path breaks: rdma_cm ToS 26 (the spec) → DSCP 6 → priority 0, but the dscp_map puts DSCP 26 on lossless priority 3"},
		{"map.yaml", roce, "{trust: dscp, dscp_map: {26: 2}, pfc: [3]}", ".qos.dscp_map", false,
			"rdma_cm ToS 106 (the spec) → DSCP 26 → priority 2 (dscp map), but PFC is on priority 3"},
		{"pfc.yaml", roce, "{trust: dscp, pfc: []}", ".qos.pfc", false,
			"→ priority 3 (dscp map) → PFC is off on priority 3 (off on every priority)"},
		{"ecn.yaml", roce, "{trust: dscp, pfc: [3], ecn: [4]}", ".qos.ecn", false,
			"→ PFC on, but ECN (DCQCN) is off on priority 3"},
		{"ets.yaml", roce, "{trust: dscp, pfc: [3], ecn: [3], " + etsNoShare + "}", ".qos.ets", false,
			"→ traffic class 1 has no ETS share (tsa ets, 0% bandwidth)"},
		{"cnp.yaml", roce, "{trust: dscp, pfc: [3], cnp: {dscp: 8, priority: 3}}", ".qos.cnp.dscp", true,
			"CNPs carry DSCP 8 → priority 1 (this port's dscp map), which is neither in pfc (3) nor on a strict class"},
		{"cnpprio.yaml", roce, "{trust: dscp, pfc: [3], cnp: {priority: 6}, " + etsLossy + "}", ".qos.cnp.priority", false,
			"sends CNPs on priority 6, which is neither in pfc nor on a strict ETS class"},
		{"pcp.yaml", roce, "{trust: pcp, pfc: [3]}", ".qos.trust", true,
			"the lossless path: rdma_cm ToS 106 (the spec) → DSCP 26, but the port trusts pcp"},
	}
	files := map[string]string{}
	var order []string
	for i, c := range cases {
		files[c.file] = fmt.Sprintf("version: 1\ndevices:\n  - name: mlx5_0\n    ports:\n      - port: 1\n        roce: %s\n        qos: %s\ninterfaces:\n  - {name: ens1, addresses: [10.%d.0.1/24]}\n", c.roce, c.qos, i)
		order = append(order, c.file)
	}
	rep := Lint(hosts(t, files, order...))
	for _, c := range cases {
		var got []string
		for _, f := range rep {
			if f.Pos.File != c.file {
				continue
			}
			got = append(got, f.String())
			if f.Path != "$.devices[0].ports[0]"+c.path || f.Warning != c.warning || !strings.Contains(f.Message, c.want) {
				t.Errorf("%s: %s (warning %v); want at %s (warning %v) with %q", c.file, f, f.Warning, c.path, c.warning, c.want)
			}
		}
		if n := len(got); (c.path == "" && n != 0) || (c.path != "" && n != 1) {
			t.Errorf("%s: %d findings %q", c.file, n, got)
		}
	}
}
