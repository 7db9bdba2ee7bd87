package ethtool_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/ethtool"
	"github.com/rdmaform/rdmaform/schema"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// TestSetsOnlyWhatDiffers: apply runs one ethtool -G with the values that
// still differ (the rx ring here, not the tx ring already at its size)
// and no -L when the channels are as wanted, then reads both back.
func TestSetsOnlyWhatDiffers(t *testing.T) {
	s, h := simtest.New(t, "cx5-roce", 0, nil)
	spec, rep := schema.Parse("host.yaml", []byte("version: 1\ninterfaces:\n  - name: ens1f0np0\n    ethtool: {rings: {rx: 4096, tx: 1024}, channels: {combined: 16}}\n"))
	if len(rep) > 0 {
		t.Fatal(rep)
	}
	ctx := context.Background()
	res, err := plan.Build(ctx, h, spec, []plan.Provider{ethtool.New()})
	if err != nil || len(res.Plan.Changes) != 1 {
		t.Fatalf("plan: %v %+v", err, res.Plan)
	}
	before := len(s.Calls())
	if out := apply.Run(ctx, h, res.Plan, []plan.Provider{ethtool.New()}, apply.Options{}); out.Err != nil {
		t.Fatal(out.Err)
	}
	// The reads (-g, -l) may run at once; the sets are what matters.
	var sets []string
	for _, c := range s.Calls()[before:] {
		if strings.HasPrefix(c, "ethtool -G") || strings.HasPrefix(c, "ethtool -L") {
			sets = append(sets, c)
		}
	}
	if diff := cmp.Diff([]string{"ethtool -G ens1f0np0 rx 4096"}, sets); diff != "" {
		t.Errorf("sets (-want +got):\n%s", diff)
	}
	res, err = plan.Build(ctx, h, spec, []plan.Provider{ethtool.New()})
	if err != nil || len(res.Plan.Changes) != 0 {
		t.Fatalf("plan after apply: %v %+v", err, res.Plan.Changes)
	}
}
