package rdmacm

import (
	"context"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/sim"
)

// configfsModuleHost is a simulated cx5-roce host whose kernel has
// configfs as a module, not loaded (nor rdma_cm, which needs it): no
// /sys/kernel/config, nothing mounted there.
func configfsModuleHost(t *testing.T) *sim.Sim {
	t.Helper()
	st, err := sim.NewState("cx5-roce", "n", 0)
	if err != nil {
		t.Fatal(err)
	}
	st.ConfigfsModule, st.ConfigfsUnmounted = true, true
	var mods []string
	for _, m := range st.Modules {
		if m != "rdma_cm" && m != "configfs" {
			mods = append(mods, m)
		}
	}
	st.Modules, st.BootModules = mods, append([]string(nil), mods...)
	s, err := sim.Create(t.TempDir(), st)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAppliesWithConfigfsNotLoaded: with configfs a module that is not
// loaded, /sys/kernel/config does not exist and mount(2) fails there
// (ENOENT); apply loads configfs (which makes its mount point), mounts
// it, loads rdma_cm and sets the values, as an operator would by hand.
// Then plan is empty.
func TestAppliesWithConfigfsNotLoaded(t *testing.T) {
	s := configfsModuleHost(t)
	h, err := s.Host()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.FS.Stat("/sys/kernel/config"); err == nil {
		t.Fatal("the host has /sys/kernel/config before configfs is loaded")
	}
	ctx := context.Background()
	spec := parse(t, v2spec)
	res, err := plan.Build(ctx, h, spec, []plan.Provider{New()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Changes) != 1 || len(res.Plan.Errors) != 0 {
		t.Fatalf("plan = %+v, errors %v; want one change", res.Plan.Changes, res.Plan.Errors)
	}
	if out := apply.Run(ctx, h, res.Plan, []plan.Provider{New()}, apply.Options{}); out.Err != nil {
		t.Fatalf("apply: %v", out.Err)
	}
	mounts, err := h.FS.ReadFile("/proc/mounts")
	if err != nil || !strings.Contains(string(mounts), "configfs /sys/kernel/config configfs") {
		t.Errorf("configfs is not mounted after apply: %s", mounts)
	}
	res, err = plan.Build(ctx, h, spec, []plan.Provider{New()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Changes) != 0 {
		t.Errorf("plan after apply: %+v", res.Plan.Changes)
	}
}
