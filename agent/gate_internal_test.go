package agent

import (
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/api/v1alpha1"
	"github.com/rdmaform/rdmaform/schema"
)

// TestGateProbes: policy.gates.probes names the hostSpec's probes, in the
// policy's order; a name the hostSpec lacks, or one given twice, is
// refused with the probes the hostSpec has (the agent's BadPolicy, before
// any slot is taken); no gates, no probes.
func TestGateProbes(t *testing.T) {
	spec, rep := schema.Parse("spec.yaml", []byte(`version: 1
probes:
  - name: ping-peer
    ping: {to: 192.0.2.12}
  - name: bw
    bandwidth: {to: 192.0.2.12, netdev: ib1, floor: 90%}
`))
	if len(rep) > 0 {
		t.Fatal(rep)
	}
	cfg := func(g *v1alpha1.Gates) *v1alpha1.RDMAHostConfig {
		return &v1alpha1.RDMAHostConfig{Spec: v1alpha1.RDMAHostConfigSpec{Policy: v1alpha1.Policy{Gates: g}}}
	}
	if ps, err := gateProbes(cfg(nil), spec); err != nil || ps != nil {
		t.Errorf("no gates: %v, %v", ps, err)
	}
	ps, err := gateProbes(cfg(&v1alpha1.Gates{Probes: []string{"bw", "ping-peer"}}), spec)
	if err != nil || len(ps) != 2 || ps[0].Name != "bw" || ps[1].Name != "ping-peer" {
		t.Errorf("bw, ping-peer: %+v, %v", ps, err)
	}
	for _, c := range []struct {
		probes []string
		want   string
	}{
		{[]string{"bw", "lat"}, `the hostSpec has no probe "lat" (its probes: ping-peer, bw)`},
		{[]string{"bw", "bw"}, `"bw" twice`},
		{[]string{}, "name at least one"},
	} {
		if _, err := gateProbes(cfg(&v1alpha1.Gates{Probes: c.probes}), spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.probes, err, c.want)
		}
	}
}

// TestMaintenanceName: rdmaform-NODE up to the 253 characters of an
// object name, and at 254 a digest of the node's name.
func TestMaintenanceName(t *testing.T) {
	at := strings.Repeat("n", 253-len("rdmaform-"))
	if got := MaintenanceName(at); got != "rdmaform-"+at {
		t.Errorf("%d characters: %q", len(got), got)
	}
	past := at + "n"
	got := MaintenanceName(past)
	if len(got) > 253 || !strings.HasPrefix(got, "rdmaform-") || got == MaintenanceName(past+"n") {
		t.Errorf("past the limit: %q", got)
	}
}
