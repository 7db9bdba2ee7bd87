package subnetmanager

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/services"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// readmeSpec is the README's subnet_manager example.
const readmeSpec = `version: 1
subnet_manager:
  priority: 10
  options: {part_enforce: both}
  partitions:
    - {name: Default, pkey: 0x7fff, ipoib: true, members: [{guid: all, membership: full}]}
    - name: storage
      pkey: 0x8002
      ipoib: {mtu: 4096}
      members:
        - {guid: self, membership: full}
        - {guid: 0x0002c903000a1b2c, membership: full}
        - {guid: all_cas, membership: limited}
`

// stoppedSM is a simulated InfiniBand host with opensm of a layout
// installed and not running (as after its installation on a host whose
// operator has not started it, or stopped it).
func stoppedSM(t *testing.T, layout string) *host.Host {
	t.Helper()
	_, h := simtest.New(t, "cx6-vpi-ib", 0, func(st *sim.State) {
		st.OpenSM = &sim.OpenSMState{Layout: layout}
		st.Tools = append(st.Tools, "sminfo")
	})
	return h
}

// planWith plans src with this provider and the services provider.
func planWith(t *testing.T, h *host.Host, src string) *plan.Plan {
	t.Helper()
	res, err := plan.Build(context.Background(), h, parse(t, src), []plan.Provider{New(), services.New()})
	if err != nil {
		t.Fatal(err)
	}
	return res.Plan
}

func applyPlan(t *testing.T, h *host.Host, p *plan.Plan) {
	t.Helper()
	if out := apply.Run(context.Background(), h, p, []plan.Provider{New(), services.New()}, apply.Options{}); out.Err != nil {
		t.Fatalf("apply: %v", out.Err)
	}
}

func attrsOf(p *plan.Plan) string {
	var b strings.Builder
	for _, c := range p.Changes {
		for _, a := range c.Attributes {
			b.WriteString(c.Address.String() + " " + a.Name + ": " + a.Before + " -> " + a.After + "\n")
		}
	}
	return b.String()
}

// TestStoppedOpenSMIsStarted: with opensm installed and not running, the
// plan of the README's example says opensm is started (not "restarted":
// it does not run), apply writes the files, starts it and proves the
// fabric shows the spec, and the next plan is empty; on Debian's layout
// and RHEL's.
func TestStoppedOpenSMIsStarted(t *testing.T) {
	for _, layout := range []string{"debian", "rhel"} {
		t.Run(layout, func(t *testing.T) {
			h := stoppedSM(t, layout)
			p := planWith(t, h, readmeSpec)
			if len(p.Errors) > 0 {
				t.Fatalf("plan: %v", p.Errors)
			}
			a := attrsOf(p)
			if strings.Contains(a, "restarted") || !strings.Contains(a, "opensm: stopped -> started (opensm.service") {
				t.Errorf("the plan does not say opensm is started:\n%s", a)
			}
			applyPlan(t, h, p)
			if p := planWith(t, h, readmeSpec); !p.Empty() || len(p.Errors) > 0 {
				t.Fatalf("plan after apply: %s %v", attrsOf(p), p.Errors)
			}
			if st, err := h.Systemd.Unit(context.Background(), "opensm.service"); err != nil || !st.Active() {
				t.Errorf("opensm.service after apply: %+v, %v", st, err)
			}
		})
	}
}

// TestStoppedOpenSMConverges: the state the example left a host in before
// (both files written, opensm not running, no subnet manager answering)
// converges: with the spec's services keeping opensm stopped the files
// are all there is to plan (and nothing after); with the example alone
// or with services: opensm active, the plan starts opensm, and after
// the apply plans nothing.
func TestStoppedOpenSMConverges(t *testing.T) {
	for _, tc := range []struct{ name, extra string }{
		{"example alone", ""},
		{"services active", "services: [{name: opensm, active: true}]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := stoppedSM(t, "debian")
			kept := readmeSpec + "services: [{name: opensm, active: false}]\n"
			p := planWith(t, h, kept)
			if len(p.Errors) > 0 || !strings.Contains(attrsOf(p), "opensm: stopped -> stopped (services: active: false") {
				t.Fatalf("plan with opensm kept stopped: %s %v", attrsOf(p), p.Errors)
			}
			applyPlan(t, h, p)
			if p := planWith(t, h, kept); !p.Empty() || len(p.Errors) > 0 {
				t.Fatalf("plan after the files alone: %s %v", attrsOf(p), p.Errors)
			}
			// The stranded state: files as the spec says, opensm stopped.
			spec := readmeSpec + tc.extra
			p = planWith(t, h, spec)
			if len(p.Errors) > 0 || len(p.Changes) == 0 || !strings.Contains(attrsOf(p), "subnet_manager[partitions.conf] opensm: stopped -> started") {
				t.Fatalf("plan of the stranded host: %s %v", attrsOf(p), p.Errors)
			}
			applyPlan(t, h, p)
			if p := planWith(t, h, spec); !p.Empty() || len(p.Errors) > 0 {
				t.Fatalf("plan after apply: %s %v", attrsOf(p), p.Errors)
			}
		})
	}
}

// TestStoppedOpenSMWithoutUnit: opensm installed and not running, and no
// unit of its package to start it: the plan refuses, before anything is
// written (no change planned), naming what to do; the spec's services
// keeping it stopped write the files alone.
func TestStoppedOpenSMWithoutUnit(t *testing.T) {
	const g = "0x0002c903000a1b2c"
	port := &LocalPort{Device: "mlx5_0", Port: 1, GUID: g}
	obs := &Observed{Installed: true, Layout: Debian, Port: port, FabricErr: errors.New("sminfo: exit status 255"), Stopped: true}
	prop := (&Provider{}).Plan(&plan.Request{Spec: parse(t, spec5), Inv: ibInv(g)}, obs, plan.NewFacts())
	if len(prop.Changes) != 0 || len(prop.Errors) != 1 || !strings.Contains(prop.Errors[0].String(), "no unit of the opensm package (opensm.service, opensm@"+g+".service) is installed to start it") {
		t.Errorf("plan: %v %v", prop.Changes, prop.Errors)
	}
	kept := spec5 + "services: [{name: opensm, active: false}]\n"
	prop = (&Provider{}).Plan(&plan.Request{Spec: parse(t, kept), Inv: ibInv(g)}, obs, plan.NewFacts())
	if len(prop.Errors) != 0 || len(prop.Changes) != 2 {
		t.Errorf("plan with opensm kept stopped: %v %v", prop.Changes, prop.Errors)
	}
	for _, c := range prop.Changes {
		for _, a := range c.Attributes {
			if a.Name == "opensm" && !strings.HasPrefix(a.After, "stopped (services: active: false") {
				t.Errorf("%s says %s -> %s of opensm that the spec keeps stopped", c.Address, a.Before, a.After)
			}
		}
		if pl := c.Payload.(*payload); pl.start {
			t.Errorf("%s starts opensm that the spec keeps stopped", c.Address)
		}
	}
}
