package plan_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/version"
)

// savedHost is a host tree with a hostname, a machine-id and a boot_id;
// write changes one of its files.
type savedHost struct {
	t   *testing.T
	dir string
	h   *host.Host
}

func newSavedHost(t *testing.T) *savedHost {
	t.Helper()
	s := &savedHost{t: t, dir: t.TempDir()}
	s.write("proc/sys/kernel/hostname", "node7")
	s.write("etc/machine-id", "4f1e0c2a9b7d4e3f8a6b5c4d3e2f1a0b")
	s.write("proc/sys/kernel/random/boot_id", "b5fa3303-b8dd-4d55-8b5f-b8ddb5fa3303")
	h, err := host.NewRooted(s.dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.h = h
	return s
}

func (s *savedHost) write(name, value string) {
	s.t.Helper()
	p := filepath.Join(s.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(value+"\n"), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// savedResult is a plan as Build returns it: one rdma_cm change of two
// attributes with a dependency, a disrupted netdev and a source, and one
// pending firmware value, on a host of two adapters.
func savedResult() *plan.Result {
	src := &plan.Source{File: "spec.yaml", Line: 6, Col: 15}
	p := &plan.Plan{FormatVersion: plan.FormatVersion,
		Changes: []*plan.Change{
			{Address: plan.Addr("modules", "rdma_cm"), Action: plan.Create, Activation: plan.Now, Source: src,
				Attributes: []plan.Attr{{Name: "loaded", Before: "false", After: "true"}}},
			{Address: plan.Addr("rdma_cm", "mlx5_0/1"), Action: plan.Update, Activation: plan.Runtime, Source: src,
				Attributes: []plan.Attr{{Name: "tos", Before: "0", After: "106"}, {Name: "default_roce_mode", Before: "IB/RoCE v1", After: "RoCE v2"}},
				DependsOn:  []plan.Address{plan.Addr("modules", "rdma_cm")}, Disrupts: []string{"ens1f0np0"}},
		},
		Pending:  []plan.Pending{{Address: plan.Addr("firmware", "mlx5_0"), Attribute: "LINK_TYPE_P1", Current: "IB", NextBoot: "ETH", Source: src}},
		Deferred: []plan.Deferred{},
	}
	p.Finish()
	inv := &inventory.Inventory{Devices: []*inventory.Device{
		{Name: "mlx5_0", PCI: "0000:5e:00.0", FWVer: "16.35.2000"},
		{Name: "mlx5_1", PCI: "0000:5e:00.1", FWVer: "16.35.2000"},
	}}
	return &plan.Result{Plan: p, Request: &plan.Request{Inv: inv}, Observed: map[string]any{"rdmacm": map[string]string{"tos": "0"}}}
}

// saveAndLoad saves res as plan --out does and reads it back as apply does.
func saveAndLoad(t *testing.T, h *host.Host, res *plan.Result) *plan.Saved {
	t.Helper()
	s := plan.NewSaved(h, res, "spec.yaml", []byte("version: 1\n"))
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := plan.LoadSaved(data)
	if !ok || err != nil {
		t.Fatalf("LoadSaved of a fresh plan: ok %v, %v", ok, err)
	}
	return got
}

// staleReasons is what Check says: nil when the plan is accepted.
func staleReasons(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var se *plan.StaleError
	if !errors.As(err, &se) {
		t.Fatalf("Check: %v is not a *plan.StaleError", err)
	}
	if !strings.HasPrefix(err.Error(), "saved plan is stale, nothing was changed: ") || !strings.HasSuffix(err.Error(), "; run plan again") {
		t.Errorf("Check: %q does not say it is stale, that nothing was changed and what to do", err)
	}
	return se.Reasons
}

// TestSavedPlanCheckIdentity: a saved plan is refused on another host
// (hostname, or machine-id alone), after a reboot (boot_id), when an
// adapter's firmware version, PCI address or presence changed, and when
// another rdmaform build (version, or commit alone) applies it; each
// refusal names what differs, and only that. The host it was made on, as
// it was, accepts it.
func TestSavedPlanCheckIdentity(t *testing.T) {
	cases := []struct {
		name string
		// change changes the host (its files, the fresh result, the
		// running build) and returns what undoes it.
		change func(sh *savedHost, res *plan.Result) func()
		want   []string
	}{
		{"the same host", func(*savedHost, *plan.Result) func() { return func() {} }, nil},
		{"another hostname", func(sh *savedHost, _ *plan.Result) func() {
			sh.write("proc/sys/kernel/hostname", "node8")
			return func() { sh.write("proc/sys/kernel/hostname", "node7") }
		}, []string{`different host: the plan was made on "node7", this is "node8"`}},
		{"another machine of the same name", func(sh *savedHost, _ *plan.Result) func() {
			sh.write("etc/machine-id", "0b1a2f3e4d5c6b7a8f3e4d7b9a2c0e1f")
			return func() { sh.write("etc/machine-id", "4f1e0c2a9b7d4e3f8a6b5c4d3e2f1a0b") }
		}, []string{`different machine: the plan was made on machine-id "4f1e0c2a9b7d4e3f8a6b5c4d3e2f1a0b", this is "0b1a2f3e4d5c6b7a8f3e4d7b9a2c0e1f"`}},
		{"a reboot", func(sh *savedHost, _ *plan.Result) func() {
			sh.write("proc/sys/kernel/random/boot_id", "0d6c3c1e-7e55-4f43-9d0c-2a1f9e3b7c11")
			return func() { sh.write("proc/sys/kernel/random/boot_id", "b5fa3303-b8dd-4d55-8b5f-b8ddb5fa3303") }
		}, []string{"the host rebooted since the plan was made (boot_id b5fa3303-b8dd-4d55-8b5f-b8ddb5fa3303, now 0d6c3c1e-7e55-4f43-9d0c-2a1f9e3b7c11)"}},
		{"another firmware version", func(_ *savedHost, res *plan.Result) func() {
			res.Request.Inv.Devices[1].FWVer = "16.35.3000"
			return func() {}
		}, []string{"adapters changed: mlx5_1 firmware 16.35.2000, now 16.35.3000"}},
		{"an adapter moved", func(_ *savedHost, res *plan.Result) func() {
			res.Request.Inv.Devices[0].PCI = "0000:3b:00.0"
			return func() {}
		}, []string{"adapters changed: mlx5_0 moved from 0000:5e:00.0 to 0000:3b:00.0"}},
		{"an adapter gone, another new", func(_ *savedHost, res *plan.Result) func() {
			res.Request.Inv.Devices[1] = &inventory.Device{Name: "mlx5_2", PCI: "0000:5e:00.1", FWVer: "16.35.2000"}
			return func() {}
		}, []string{"adapters changed: mlx5_1 is gone, mlx5_2 is new"}},
		{"another rdmaform version", func(*savedHost, *plan.Result) func() {
			was := version.Version
			version.Version = "9.9.9"
			return func() { version.Version = was }
		}, []string{"the plan was made by rdmaform " + version.Get().Version + " (" + version.Get().Commit + "), this is 9.9.9 (" + version.Get().Commit + ")"}},
		{"another rdmaform commit of the same version", func(*savedHost, *plan.Result) func() {
			was := version.Commit
			version.Commit = "0123456789ab"
			return func() { version.Commit = was }
		}, []string{"the plan was made by rdmaform " + version.Get().Version + " (" + version.Get().Commit + "), this is " + version.Get().Version + " (0123456789ab)"}},
		{"another machine, rebooted, its changes different too", func(sh *savedHost, res *plan.Result) func() {
			sh.write("etc/machine-id", "0b1a2f3e4d5c6b7a8f3e4d7b9a2c0e1f")
			sh.write("proc/sys/kernel/random/boot_id", "0d6c3c1e-7e55-4f43-9d0c-2a1f9e3b7c11")
			res.Plan.Changes[1].Attributes[0].After = "107"
			return func() {
				sh.write("etc/machine-id", "4f1e0c2a9b7d4e3f8a6b5c4d3e2f1a0b")
				sh.write("proc/sys/kernel/random/boot_id", "b5fa3303-b8dd-4d55-8b5f-b8ddb5fa3303")
			}
		}, []string{`different machine: the plan was made on machine-id "4f1e0c2a9b7d4e3f8a6b5c4d3e2f1a0b", this is "0b1a2f3e4d5c6b7a8f3e4d7b9a2c0e1f"`,
			"the host rebooted since the plan was made (boot_id b5fa3303-b8dd-4d55-8b5f-b8ddb5fa3303, now 0d6c3c1e-7e55-4f43-9d0c-2a1f9e3b7c11)"}}, // the changes are not compared on another host
	}
	sh := newSavedHost(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			saved := saveAndLoad(t, sh.h, savedResult())
			now := savedResult()
			undo := c.change(sh, now)
			defer undo()
			got := staleReasons(t, saved.Check(sh.h, now))
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSavedPlanCheckChanges: on the host it was made on, a saved plan is
// refused when what its spec gives now differs from the changes or
// pending items it records in any part that apply uses or shows, and the
// refusal names the first difference in address order and every
// differing address. A partial apply (--only runtime) compares the
// recorded changes of its activation.
func TestSavedPlanCheckChanges(t *testing.T) {
	const pre = "the spec in the plan no longer gives the changes it records on this host (the host changed since the plan was made, or the plan was edited); first difference: "
	cases := []struct {
		name string
		edit func(p *plan.Plan)
		want string // "" accepted
	}{
		{"the same changes", func(*plan.Plan) {}, ""},
		{"a value", func(p *plan.Plan) { p.Changes[1].Attributes[0].After = "107" },
			"rdma_cm[mlx5_0/1] tos: the plan records 0 -> 106, the spec gives 0 -> 107 (differing: rdma_cm[mlx5_0/1])"},
		{"a before value", func(p *plan.Plan) { p.Changes[1].Attributes[1].Before = "RoCE v2" },
			"rdma_cm[mlx5_0/1] default_roce_mode: the plan records IB/RoCE v1 -> RoCE v2, the spec gives RoCE v2 -> RoCE v2 (differing: rdma_cm[mlx5_0/1])"},
		{"two resources, the first named", func(p *plan.Plan) {
			p.Changes[1].Attributes[0].After = "107"
			p.Changes[0].Attributes[0].Before = ""
		}, `modules[rdma_cm] loaded: the plan records false -> true, the spec gives "" -> true (differing: modules[rdma_cm], rdma_cm[mlx5_0/1])`},
		{"an attribute more", func(p *plan.Plan) {
			p.Changes[0].Attributes = append(p.Changes[0].Attributes, plan.Attr{Name: "options", After: "x=1"})
		}, `modules[rdma_cm] options: the plan records no change of it, the spec gives "" -> x=1 (differing: modules[rdma_cm])`},
		{"an attribute less", func(p *plan.Plan) { p.Changes[1].Attributes = p.Changes[1].Attributes[1:] },
			"rdma_cm[mlx5_0/1] tos: the plan records 0 -> 106, the spec gives no change of it (differing: rdma_cm[mlx5_0/1])"},
		{"attributes reordered", func(p *plan.Plan) {
			a := p.Changes[1].Attributes
			a[0], a[1] = a[1], a[0]
		}, "rdma_cm[mlx5_0/1] attributes: the plan records tos, default_roce_mode, the spec gives default_roce_mode, tos (differing: rdma_cm[mlx5_0/1])"},
		{"the action", func(p *plan.Plan) { p.Changes[0].Action = plan.Update },
			"modules[rdma_cm] action: the plan records create, the spec gives update (differing: modules[rdma_cm])"},
		{"the activation", func(p *plan.Plan) { p.Changes[1].Activation = plan.Now },
			"rdma_cm[mlx5_0/1] activation: the plan records runtime, the spec gives now (differing: rdma_cm[mlx5_0/1])"},
		{"a dependency", func(p *plan.Plan) { p.Changes[1].DependsOn = nil },
			"rdma_cm[mlx5_0/1] depends on: the plan records [modules[rdma_cm]], the spec gives [] (differing: rdma_cm[mlx5_0/1])"},
		{"a disrupted netdev", func(p *plan.Plan) { p.Changes[1].Disrupts = []string{"ens1f1np1"} },
			"rdma_cm[mlx5_0/1] disrupts: the plan records [ens1f0np0], the spec gives [ens1f1np1] (differing: rdma_cm[mlx5_0/1])"},
		{"the source", func(p *plan.Plan) { p.Changes[1].Source = &plan.Source{File: "spec.yaml", Line: 7, Col: 15} },
			"rdma_cm[mlx5_0/1] source: the plan records spec.yaml:6:15, the spec gives spec.yaml:7:15 (differing: rdma_cm[mlx5_0/1])"},
		{"a change gone", func(p *plan.Plan) { p.Changes = p.Changes[1:] },
			"modules[rdma_cm]: the plan records create, the spec gives no change (differing: modules[rdma_cm])"},
		{"a change more", func(p *plan.Plan) {
			p.Changes = append(p.Changes, &plan.Change{Address: plan.Addr("netdev", "ens1f0np0"), Action: plan.Update, Activation: plan.Now})
		}, "netdev[ens1f0np0]: the plan records no change, the spec gives update (differing: netdev[ens1f0np0])"},
		{"a change twice", func(p *plan.Plan) { p.Changes = append(p.Changes, p.Changes[0]) },
			"the plan records 2 changes, the spec gives 3 (differing: changes)"},
		{"a pending value", func(p *plan.Plan) { p.Pending[0].NextBoot = "IB" },
			"pending firmware[mlx5_0] LINK_TYPE_P1: the plan records ETH (current IB) from spec.yaml:6:15, the spec gives IB (current IB) from spec.yaml:6:15 (differing: pending reboot items)"},
		{"a pending current value", func(p *plan.Plan) { p.Pending[0].Current = "ETH" },
			"pending firmware[mlx5_0] LINK_TYPE_P1: the plan records ETH (current IB) from spec.yaml:6:15, the spec gives ETH (current ETH) from spec.yaml:6:15 (differing: pending reboot items)"},
		{"no pending item", func(p *plan.Plan) { p.Pending = nil },
			"pending firmware[mlx5_0] LINK_TYPE_P1: the plan records ETH (current IB) from spec.yaml:6:15, the spec gives nothing pending (differing: pending reboot items)"},
		{"a pending item more", func(p *plan.Plan) {
			p.Pending = append(p.Pending, plan.Pending{Address: plan.Addr("firmware", "mlx5_1"), Attribute: "SRIOV_EN", Current: "False", NextBoot: "True"})
		}, "pending firmware[mlx5_1] SRIOV_EN: the plan records nothing pending, the spec gives True (current False) from none (differing: pending reboot items)"},
		{"a pending item twice", func(p *plan.Plan) { p.Pending = append(p.Pending, p.Pending[0]) },
			"the plan records 1 pending items, the spec gives 2 (differing: pending reboot items)"},
		{"a partial plan (apply --only runtime)", func(p *plan.Plan) { p.Restrict(plan.Runtime) }, ""},
		{"a partial plan of nothing", func(p *plan.Plan) { p.Restrict(plan.NextBoot) }, ""},
		{"a partial plan, a value", func(p *plan.Plan) {
			p.Restrict(plan.Runtime)
			p.Changes[0].Attributes[0].After = "107"
		}, "rdma_cm[mlx5_0/1] tos: the plan records 0 -> 106, the spec gives 0 -> 107 (differing: rdma_cm[mlx5_0/1])"},
		{"a partial plan, a pending value", func(p *plan.Plan) {
			p.Restrict(plan.Now)
			p.Pending[0].NextBoot = "IB"
		}, "pending firmware[mlx5_0] LINK_TYPE_P1: the plan records ETH (current IB) from spec.yaml:6:15, the spec gives IB (current IB) from spec.yaml:6:15 (differing: pending reboot items)"},
		{"a change and a pending item", func(p *plan.Plan) {
			p.Changes[1].Attributes[0].After = "107"
			p.Pending[0].NextBoot = "IB"
		}, "rdma_cm[mlx5_0/1] tos: the plan records 0 -> 106, the spec gives 0 -> 107 (differing: rdma_cm[mlx5_0/1], pending reboot items)"},
	}
	sh := newSavedHost(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			saved := saveAndLoad(t, sh.h, savedResult())
			now := savedResult()
			c.edit(now.Plan)
			var want []string
			if c.want != "" {
				want = []string{pre + c.want}
			}
			if diff := cmp.Diff(want, staleReasons(t, saved.Check(sh.h, now))); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLoadSaved: what LoadSaved takes for a spec (not a saved plan), and
// the saved plans it refuses, each with its reason: another format
// version, a damaged spec, a body changed or cut short after it was made,
// no digest, no identity. A plan with a hostname and either a machine-id
// or a boot_id has an identity.
func TestLoadSaved(t *testing.T) {
	sh := newSavedHost(t)
	fresh := func() map[string]any {
		b, err := json.Marshal(plan.NewSaved(sh.h, savedResult(), "spec.yaml", []byte("version: 1\n")))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	encode := func(m map[string]any) []byte {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// resign recomputes the body digest, as anyone can.
	resign := func(m map[string]any) []byte {
		m["digest"] = ""
		var s plan.Saved
		if err := json.Unmarshal(encode(m), &s); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(&s)
		if err != nil {
			t.Fatal(err)
		}
		m["digest"] = plan.Digest(b)
		return encode(m)
	}
	identity := func(hostname, machineID, bootID string) func(map[string]any) []byte {
		return func(m map[string]any) []byte {
			hs := m["host"].(map[string]any)
			hs["hostname"], hs["machine_id"], hs["boot_id"] = hostname, machineID, bootID
			return resign(m)
		}
	}
	const noIdentity = "saved plan records no host identity"
	const changed = "saved plan was changed after it was made (its digest does not match its content); nothing was changed: make it again with plan --out"
	cases := []struct {
		name   string
		data   func(m map[string]any) []byte
		isPlan bool
		err    string // a prefix; "" none
	}{
		{"the plan as made", encode, true, ""},
		{"a spec", func(map[string]any) []byte { return []byte("version: 1\n") }, false, ""},
		{"a JSON spec", func(map[string]any) []byte { return []byte(`{"version": 1}`) }, false, ""},
		{"not JSON", func(map[string]any) []byte { return []byte("{version: 1") }, false, ""},
		{"empty", func(map[string]any) []byte { return []byte(" \n") }, false, ""},
		{"another kind", func(m map[string]any) []byte { m["kind"] = "rdmaform-audit"; return encode(m) }, false, ""},
		{"another format version", func(m map[string]any) []byte { m["format_version"] = 2; return resign(m) }, true,
			"saved plan has format version 2; this rdmaform reads 1"},
		{"the spec damaged", func(m map[string]any) []byte {
			m["spec"].(map[string]any)["content"] = "version: 2\n"
			return resign(m)
		}, true, "saved plan is damaged: its spec does not match its digest"},
		{"a change edited", func(m map[string]any) []byte {
			m["plan"].(map[string]any)["changes"].([]any)[1].(map[string]any)["attributes"].([]any)[0].(map[string]any)["after"] = 107
			return encode(m)
		}, true, changed},
		{"the digest removed", func(m map[string]any) []byte { m["digest"] = ""; return encode(m) }, true, changed},
		{"cut short", func(m map[string]any) []byte { b := encode(m); return b[:len(b)-40] }, true, "saved plan is damaged (cut short?): it is not valid JSON"},
		{"cut short, indented", func(m map[string]any) []byte {
			b, err := json.MarshalIndent(m, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			return b[:len(b)/2]
		}, true, "saved plan is damaged (cut short?)"},
		{"a JSON spec cut short", func(map[string]any) []byte { return []byte(`{"version": 1, "modules": [`) }, false, ""},
		{"no hostname", identity("", "4f1e0c2a9b7d4e3f8a6b5c4d3e2f1a0b", "b5fa3303-b8dd-4d55-8b5f-b8ddb5fa3303"), true, noIdentity},
		{"no machine-id and no boot_id", identity("node7", "", ""), true, noIdentity},
		{"no identity at all", identity("", "", ""), true, noIdentity},
		{"a hostname and a machine-id", identity("node7", "4f1e0c2a9b7d4e3f8a6b5c4d3e2f1a0b", ""), true, ""},
		{"a hostname and a boot_id", identity("node7", "", "b5fa3303-b8dd-4d55-8b5f-b8ddb5fa3303"), true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, ok, err := plan.LoadSaved(c.data(fresh()))
			if ok != c.isPlan {
				t.Errorf("ok = %v, want %v", ok, c.isPlan)
			}
			switch {
			case c.err == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.err == "" && ok && s == nil:
				t.Errorf("no plan returned")
			case c.err != "" && (err == nil || !strings.HasPrefix(err.Error(), c.err)):
				t.Errorf("err = %v, want it to start with %q", err, c.err)
			case c.err != "" && s != nil:
				t.Errorf("a refused plan was returned")
			}
			if c.err == noIdentity && err != nil && !strings.Contains(err.Error(), "nothing was changed") {
				t.Errorf("err = %v, want it to say nothing was changed", err)
			}
		})
	}
}

// TestSavedPlanRecords: NewSaved records the host's identity (hostname,
// else /etc/hostname; machine-id; boot_id; the adapters in name order with
// their PCI addresses and firmware versions), this build, the spec, and a
// digest over the observation that changes with it.
func TestSavedPlanRecords(t *testing.T) {
	sh := newSavedHost(t)
	res := savedResult()
	res.Request.Inv.Devices[0], res.Request.Inv.Devices[1] = res.Request.Inv.Devices[1], res.Request.Inv.Devices[0]
	s := plan.NewSaved(sh.h, res, "spec.yaml", []byte("version: 1\n"))
	want := plan.Identity{Hostname: "node7", MachineID: "4f1e0c2a9b7d4e3f8a6b5c4d3e2f1a0b", BootID: "b5fa3303-b8dd-4d55-8b5f-b8ddb5fa3303",
		Adapters: []plan.AdapterID{{Name: "mlx5_0", PCI: "0000:5e:00.0", FWVer: "16.35.2000"}, {Name: "mlx5_1", PCI: "0000:5e:00.1", FWVer: "16.35.2000"}}}
	if diff := cmp.Diff(want, s.Host); diff != "" {
		t.Errorf("identity (-want +got):\n%s", diff)
	}
	if s.Kind != plan.SavedKind || s.FormatVersion != plan.FormatVersion || s.Rdmaform != version.Get() {
		t.Errorf("kind %q, format %d, rdmaform %+v", s.Kind, s.FormatVersion, s.Rdmaform)
	}
	if s.Spec.File != "spec.yaml" || s.Spec.Content != "version: 1\n" || s.Spec.Digest != plan.Digest([]byte("version: 1\n")) {
		t.Errorf("spec %+v", s.Spec)
	}
	if s.ObservedDigest != plan.ObservedDigest(res) {
		t.Errorf("observed digest %s, want %s", s.ObservedDigest, plan.ObservedDigest(res))
	}
	res.Observed["rdmacm"] = map[string]string{"tos": "106"}
	if plan.ObservedDigest(res) == s.ObservedDigest {
		t.Errorf("the observed digest does not change with the observation")
	}
	was := plan.ObservedDigest(res)
	res.Request.Inv.Devices[0].FWVer = "16.35.3000"
	if plan.ObservedDigest(res) == was {
		t.Errorf("the observed digest does not change with the inventory")
	}
	// An offline tree without /proc names itself in /etc/hostname.
	if err := os.Remove(filepath.Join(sh.dir, "proc/sys/kernel/hostname")); err != nil {
		t.Fatal(err)
	}
	sh.write("etc/hostname", "node9")
	if got := plan.Identify(sh.h, res.Request.Inv).Hostname; got != "node9" {
		t.Errorf("hostname from /etc/hostname: %q", got)
	}
}
