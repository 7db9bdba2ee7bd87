package schema

import (
	"strings"
	"testing"
)

// TestRoceDSCP: dscp/ecn is the readable form of the ToS byte rdma_cm
// takes (DSCP<<2 | ECN bits), at both ends of the DSCP range and one past.
func TestRoceDSCP(t *testing.T) {
	for _, c := range []struct {
		roce string
		tos  int
		err  string
	}{
		{"{mode: v2, dscp: 26, ecn: true}", 106, ""},
		{"{dscp: 26}", 104, ""},
		{"{dscp: 26, ecn: false}", 104, ""},
		{"{dscp: 0}", 0, ""},
		{"{dscp: 63, ecn: true}", 254, ""},
		{"{dscp: 64}", 0, "64 is above the maximum 63"},
		{"{dscp: -1}", 0, "-1 is below the minimum 0"},
		{"{tos: 106, dscp: 26}", 0, "give tos or dscp, not both"},
		{"{tos: 104, ecn: true}", 0, "ecn goes with dscp"},
	} {
		data := "version: 1\ndevices:\n  - name: mlx5_0\n    ports:\n      - port: 1\n        roce: " + c.roce + "\n"
		spec, rep := Parse("t.yaml", []byte(data))
		if c.err != "" {
			if len(rep) == 0 || !strings.Contains(rep.Error(), c.err) {
				t.Errorf("%s: findings %v, want %q", c.roce, rep, c.err)
			}
			continue
		}
		if len(rep) > 0 {
			t.Errorf("%s: %v", c.roce, rep)
			continue
		}
		if got := spec.Devices[0].Ports[0].Roce.Tos; got == nil || *got != c.tos {
			t.Errorf("%s: tos %v, want %d", c.roce, got, c.tos)
		}
	}
}
