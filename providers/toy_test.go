package providers_test

import (
	"context"
	"errors"
	"io/fs"
	"testing"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/audit"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers"
	"github.com/rdmaform/rdmaform/schema"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// motd is a provider defined only here, in the shape every provider has
// (plan.TypedProvider: its observation and payload are its own types): it
// keeps /etc/motd saying the spec's hostname.
type motd struct{}

const motdFile = "/etc/motd"

func (motd) Name() string { return "motd" }

func (motd) Observe(_ context.Context, h *host.Host, req *plan.Request) (string, error) {
	if req.Spec.Host == nil {
		return "", nil
	}
	b, err := h.FS.ReadFile(motdFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return string(b), err
}

func (motd) Plan(req *plan.Request, have string, _ *plan.Facts) plan.Proposal {
	var p plan.Proposal
	if req.Spec.Host == nil {
		return p
	}
	addr, path := plan.Addr("motd", motdFile), "$.host.hostname"
	p.Managed = []plan.Managed{{Address: addr, Path: path}}
	want := req.Spec.Host.Hostname + "\n"
	if have != want {
		p.Changes = []*plan.Change{{Address: addr, Action: plan.Update, Activation: plan.Now, Source: req.Pos(path),
			Attributes: []plan.Attr{{Name: "text", Before: have, After: want}}, Payload: want}}
	}
	return p
}

func (motd) Make(_ context.Context, h *host.Host, _ *plan.Change, text string) error {
	return h.FS.WriteFile(motdFile, []byte(text), 0o644)
}

// TestToyProvider: adding a provider is one package and one entry in
// providers.All(): with motd appended, plan puts its change last, apply
// makes it and plans nothing after, and audit checks the resource it
// declares (in sync, then drifted) with no change to the audit.
func TestToyProvider(t *testing.T) {
	ctx := context.Background()
	_, h := simtest.New(t, "vm-soft", 0, nil)
	all := append(providers.All(), plan.Adapt[string, string](motd{}))
	spec, rep := schema.Parse("host.yaml", []byte("version: 1\nhost: {hostname: node1}\nmodules: [rdma_rxe]\n"))
	if len(rep) > 0 {
		t.Fatal(rep)
	}
	res, err := plan.Build(ctx, h, spec, all)
	if err != nil {
		t.Fatal(err)
	}
	cs := res.Plan.Changes
	if len(cs) < 2 || cs[len(cs)-1].Address != plan.Addr("motd", "/etc/motd") || cs[len(cs)-1].Provider != "motd" {
		t.Fatalf("changes %v: want motd[/etc/motd] last, after the modules stage", addrs(cs))
	}
	if out := apply.Run(ctx, h, res.Plan, all, apply.Options{}); out.Err != nil {
		t.Fatal(out.Err)
	}
	if res, err = plan.Build(ctx, h, spec, all); err != nil || len(res.Plan.Changes) != 0 {
		t.Fatalf("after apply: %v, %v; want nothing to change", addrs(res.Plan.Changes), err)
	}
	check := func(want audit.Status) {
		t.Helper()
		r, err := audit.Run(ctx, h, spec, all, audit.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range r.Checks {
			if c.Resource == "motd[/etc/motd]" && c.Check == audit.CheckDrift {
				if c.Status != want || c.Source == nil || c.Source.Line != 2 {
					t.Errorf("motd drift: %s at %v (%s), want %s at line 2", c.Status, c.Source, c.Message, want)
				}
				return
			}
		}
		t.Errorf("the audit has no drift check of motd[/etc/motd]: %+v", r.Checks)
	}
	check(audit.Pass)
	if err := h.FS.WriteFile(motdFile, []byte("someone else\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check(audit.Fail)
}

func addrs(cs []*plan.Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Address.String())
	}
	return out
}
