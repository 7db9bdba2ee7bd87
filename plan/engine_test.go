package plan_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// toy is a provider defined here: it proposes one change per address it
// is given, and records what earlier stages published.
type toy struct {
	name  string
	addrs []string
}

func (t *toy) Name() string { return t.name }
func (t *toy) Discover(context.Context, *host.Host, *plan.Request) (any, error) {
	return len(t.addrs), nil
}
func (t *toy) Diff(_ *plan.Request, obs any, _ *plan.Facts) plan.Proposal {
	var p plan.Proposal
	for _, a := range t.addrs[:obs.(int)] {
		p.Changes = append(p.Changes, &plan.Change{Address: plan.Addr(t.name, a), Action: plan.Create})
	}
	return p
}
func (t *toy) Apply(context.Context, *host.Host, *plan.Change) error { return nil }

// TestBuildOrdersByPosition: a provider's stage is its position in the
// list Build gets, whatever its addresses: the later provider's changes
// come after the earlier one's even where their addresses sort first;
// within a stage, changes are in address order; each change names the
// provider that proposed it.
func TestBuildOrdersByPosition(t *testing.T) {
	fs, err := host.NewRootFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := &host.Host{FS: fs, Name: "empty tree"}
	spec, rep := schema.Parse("host.yaml", []byte("version: 1\n"))
	if len(rep) > 0 {
		t.Fatal(rep)
	}
	first := &toy{name: "zeta", addrs: []string{"b", "a"}}
	second := &toy{name: "alpha", addrs: []string{"y", "x"}}
	res, err := plan.Build(context.Background(), h, spec, []plan.Provider{first, second})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range res.Plan.Changes {
		got = append(got, c.Provider+" "+c.Address.String())
	}
	want := []string{"zeta zeta[a]", "zeta zeta[b]", "alpha alpha[x]", "alpha alpha[y]"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	res, err = plan.Build(context.Background(), h, spec, []plan.Provider{second, first})
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, c := range res.Plan.Changes {
		got = append(got, c.Provider+" "+c.Address.String())
	}
	want = []string{"alpha alpha[x]", "alpha alpha[y]", "zeta zeta[a]", "zeta zeta[b]"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order with the list swapped (-want +got):\n%s", diff)
	}
}

// shower is a typed provider whose part of show comes from what Observe
// read: it records the scope it was asked for.
type shower struct{ full []bool }

func (s *shower) Name() string { return "shower" }
func (s *shower) Observe(_ context.Context, _ *host.Host, req *plan.Request) (string, error) {
	s.full = append(s.full, req.Full)
	if !req.Full {
		return "", nil
	}
	return "rdma_ucm", nil
}
func (s *shower) Plan(*plan.Request, string, *plan.Facts) plan.Proposal { return plan.Proposal{} }
func (s *shower) Make(context.Context, *host.Host, *plan.Change, string) error {
	return nil
}
func (s *shower) CaptureFrom(obs string, _ *plan.Request, spec *schema.Spec, _ plan.CaptureOptions) error {
	spec.Modules = []string{obs}
	return nil
}

// TestCaptureFromObserve: show asks a typed capturer's Observe for the
// full scope once and builds its part from that observation alone; plan
// asks for the spec's scope.
func TestCaptureFromObserve(t *testing.T) {
	fs, err := host.NewRootFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := &host.Host{FS: fs, Name: "empty tree"}
	s := &shower{}
	c, err := plan.Capture(context.Background(), h, []plan.Provider{plan.Adapt[string, string](s)}, plan.CaptureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"rdma_ucm"}, c.Spec.Modules); diff != "" {
		t.Errorf("captured (-want +got):\n%s", diff)
	}
	spec, _ := schema.Parse("host.yaml", []byte("version: 1\n"))
	if _, err := plan.Build(context.Background(), h, spec, []plan.Provider{plan.Adapt[string, string](s)}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]bool{true, false}, s.full); diff != "" {
		t.Errorf("scopes asked (show, then plan) (-want +got):\n%s", diff)
	}
}
