package apply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// recorder is a provider that records applies and fails chosen addresses.
type recorder struct {
	fail    map[string]error
	applied []string
}

func (r *recorder) Name() string { return "rec" }
func (r *recorder) Discover(context.Context, *host.Host, *plan.Request) (any, error) {
	return nil, nil
}
func (r *recorder) Diff(*plan.Request, any, *plan.Facts) plan.Proposal { return plan.Proposal{} }
func (r *recorder) Apply(_ context.Context, _ *host.Host, c *plan.Change) error {
	if err := r.fail[c.Address.String()]; err != nil {
		return err
	}
	r.applied = append(r.applied, c.Address.String())
	return nil
}

func change(addr plan.Address, deps ...plan.Address) *plan.Change {
	return &plan.Change{Address: addr, Provider: "rec", DependsOn: deps}
}

func TestRunSkipsDependentsAndKeepsGoing(t *testing.T) {
	rec := &recorder{fail: map[string]error{"rxe[rxe0]": errors.New("no such device")}}
	p := &plan.Plan{Changes: []*plan.Change{
		change(plan.Addr("module", "rdma_rxe")),
		change(plan.Addr("rxe", "rxe0"), plan.Addr("module", "rdma_rxe")),
		change(plan.Addr("rdma_cm", "rxe0/1"), plan.Addr("rxe", "rxe0")),
		change(plan.Addr("interface", "ens3")),
		change(plan.Addr("ipoib", "x"), plan.Addr("rdma_cm", "rxe0/1")), // transitively skipped
	}}
	var progress bytes.Buffer
	out := Run(context.Background(), &host.Host{}, p, []plan.Provider{rec}, Options{Progress: &progress})
	if diff := cmp.Diff([]string{"module[rdma_rxe]", "interface[ens3]"}, rec.applied); diff != "" {
		t.Errorf("applied (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]plan.Address{plan.Addr("rxe", "rxe0")}, out.Failed); diff != "" {
		t.Errorf("failed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]plan.Address{plan.Addr("rdma_cm", "rxe0/1"), plan.Addr("ipoib", "x")}, out.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	msg := out.Err.Error()
	for _, want := range []string{"rxe[rxe0]: no such device", "rdma_cm[rxe0/1]: skipped: depends on rxe[rxe0], which failed"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	if !errors.Is(out.Err, ErrSkipped) {
		t.Error("errors.Is(err, ErrSkipped) must hold")
	}
	if !strings.Contains(progress.String(), "interface[ens3]: updating...") && !strings.Contains(progress.String(), "interface[ens3]: creating...") {
		t.Errorf("no progress line for interface[ens3]:\n%s", progress.String())
	}
}

func TestRunStopsWhenInterrupted(t *testing.T) {
	rec := &recorder{}
	p := &plan.Plan{Changes: []*plan.Change{change(plan.Addr("t", "a")), change(plan.Addr("t", "b")), change(plan.Addr("t", "c"))}}
	n := 0
	out := Run(context.Background(), &host.Host{}, p, []plan.Provider{rec}, Options{Before: func(c *plan.Change) error {
		n++
		if n == 2 {
			return errors.New("killed")
		}
		return nil
	}})
	if diff := cmp.Diff([]string{"t[a]"}, rec.applied); diff != "" {
		t.Errorf("applied (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]plan.Address{plan.Addr("t", "b"), plan.Addr("t", "c")}, out.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
}

func TestVerify(t *testing.T) {
	after := &plan.Plan{Changes: []*plan.Change{
		{Address: plan.Addr("rdma_cm", "mlx5_0/1"), Attributes: []plan.Attr{{Name: "tos", Before: "0", After: "106"}}},
		{Address: plan.Addr("rxe", "rxe0")},
	}}
	err := Verify(after, Outcome{Failed: []plan.Address{plan.Addr("rxe", "rxe0")}})
	var ve *VerifyError
	if !errors.As(err, &ve) || len(ve.Remaining) != 1 {
		t.Fatalf("err = %v, want one remaining change (the failed one is already reported)", err)
	}
	if want := `rdma_cm[mlx5_0/1]: tos is still "0" after apply, want "106"`; !strings.Contains(err.Error(), want) {
		t.Errorf("err = %q, want it to contain %q", err, want)
	}
	if err := Verify(&plan.Plan{}, Outcome{}); err != nil {
		t.Errorf("empty re-plan: err = %v", err)
	}
}

// parallelRec is a Parallel provider: changes keyed "" run alone, others
// by their key; it records the most changes in flight at once, the order
// each key's changes ran in, and fails chosen addresses.
type parallelRec struct {
	mu       sync.Mutex
	inFlight int
	maxIn    int
	byKey    map[string][]string
	fail     map[string]bool
	// The first gate changes wait for each other (at most 5s): run at
	// once, all of them are in flight together.
	gate    int
	started int
	open    chan struct{}
}

func (r *parallelRec) Name() string { return "par" }
func (r *parallelRec) Discover(context.Context, *host.Host, *plan.Request) (any, error) {
	return nil, nil
}
func (r *parallelRec) Diff(*plan.Request, any, *plan.Facts) plan.Proposal { return plan.Proposal{} }
func (r *parallelRec) ParallelKey(c *plan.Change) string {
	k, _, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(c.Address.String(), "fw["), "]"), ".")
	if k == "solo" {
		return ""
	}
	return k
}
func (r *parallelRec) Apply(_ context.Context, _ *host.Host, c *plan.Change) error {
	r.mu.Lock()
	r.inFlight++
	r.maxIn = max(r.maxIn, r.inFlight)
	r.byKey[r.ParallelKey(c)] = append(r.byKey[r.ParallelKey(c)], c.Address.String())
	if r.started++; r.started == r.gate {
		close(r.open)
	}
	r.mu.Unlock()
	select {
	case <-r.open:
	case <-time.After(5 * time.Second):
	}
	r.mu.Lock()
	r.inFlight--
	r.mu.Unlock()
	if r.fail[c.Address.String()] {
		return errors.New("Applying... Failed!")
	}
	return nil
}

// TestRunParallel: consecutive changes of a Parallel provider with
// different keys run at once (all of them in flight together, bounded by
// MaxParallel), changes of one key one after another in plan order, a
// failure fails only its change, and outcome and output stay in plan
// order; a change depending on one of the batch waits for the batch.
func TestRunParallel(t *testing.T) {
	par := &parallelRec{byKey: map[string][]string{}, fail: map[string]bool{"fw[b.0]": true}, gate: 4, open: make(chan struct{})}
	pc := func(addr plan.Address, deps ...plan.Address) *plan.Change {
		return &plan.Change{Address: addr, Provider: "par", Action: plan.Update, DependsOn: deps}
	}
	p := &plan.Plan{Changes: []*plan.Change{
		pc(plan.Addr("fw", "a.0")), pc(plan.Addr("fw", "a.1")), pc(plan.Addr("fw", "b.0")), pc(plan.Addr("fw", "c.0")), pc(plan.Addr("fw", "d.0")),
		pc(plan.Addr("fw", "e.0"), plan.Addr("fw", "a.0")), // after the batch
		pc(plan.Addr("fw", "solo.0")),
	}}
	var progress bytes.Buffer
	out := Run(context.Background(), &host.Host{}, p, []plan.Provider{par}, Options{Progress: &progress})
	if par.maxIn != 4 {
		t.Errorf("at most %d changes in flight, want 4 (a, b, c, d; a.1 after a.0)", par.maxIn)
	}
	if diff := cmp.Diff([]string{"fw[a.0]", "fw[a.1]"}, par.byKey["a"]); diff != "" {
		t.Errorf("one key in plan order (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]plan.Address{plan.Addr("fw", "a.0"), plan.Addr("fw", "a.1"), plan.Addr("fw", "c.0"), plan.Addr("fw", "d.0"), plan.Addr("fw", "e.0"), plan.Addr("fw", "solo.0")}, out.Applied); diff != "" {
		t.Errorf("applied (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]plan.Address{plan.Addr("fw", "b.0")}, out.Failed); diff != "" {
		t.Errorf("failed (-want +got):\n%s", diff)
	}
	var starts []string
	for _, l := range strings.Split(progress.String(), "\n") {
		if a, ok := strings.CutSuffix(l, ": updating..."); ok {
			starts = append(starts, a)
		}
	}
	if diff := cmp.Diff([]string{"fw[a.0]", "fw[a.1]", "fw[b.0]", "fw[c.0]", "fw[d.0]", "fw[e.0]", "fw[solo.0]"}, starts); diff != "" {
		t.Errorf("progress in plan order (-want +got):\n%s", diff)
	}
}

// TestRunParallelBound: MaxParallel changes run at once, one more waits
// for a free slot.
func TestRunParallelBound(t *testing.T) {
	par := &parallelRec{byKey: map[string][]string{}, gate: MaxParallel, open: make(chan struct{})}
	p := &plan.Plan{}
	for i := 0; i <= MaxParallel; i++ {
		p.Changes = append(p.Changes, &plan.Change{Address: plan.Addr("fw", fmt.Sprintf("k%d.0", i)), Provider: "par", Action: plan.Update})
	}
	out := Run(context.Background(), &host.Host{}, p, []plan.Provider{par}, Options{})
	if out.Err != nil || len(out.Applied) != MaxParallel+1 {
		t.Fatalf("applied %d, err %v", len(out.Applied), out.Err)
	}
	if par.maxIn != MaxParallel {
		t.Errorf("%d changes in flight at most, want MaxParallel = %d", par.maxIn, MaxParallel)
	}
}

// batchRec is a parallelRec that is also a plan.Batcher: it records the
// groups ApplyBatch got and fails chosen addresses within them.
type batchRec struct {
	parallelRec
	groups [][]string
}

func (r *batchRec) ApplyBatch(ctx context.Context, h *host.Host, cs []*plan.Change) []error {
	var g []string
	errs := make([]error, len(cs))
	for i, c := range cs {
		g = append(g, c.Address.String())
		if r.fail[c.Address.String()] {
			errs[i] = errors.New("Applying... Failed!")
		}
	}
	r.mu.Lock()
	r.groups = append(r.groups, g)
	r.mu.Unlock()
	return errs
}

// TestRunBatch: a Batcher gets the changes of one key in one ApplyBatch,
// in plan order; a key with one change goes through Apply; each change
// keeps its own outcome.
func TestRunBatch(t *testing.T) {
	b := &batchRec{parallelRec: parallelRec{byKey: map[string][]string{}, fail: map[string]bool{"fw[a.1]": true}, gate: 1, open: make(chan struct{})}}
	pc := func(addr plan.Address) *plan.Change {
		return &plan.Change{Address: addr, Provider: "par", Action: plan.Update}
	}
	p := &plan.Plan{Changes: []*plan.Change{pc(plan.Addr("fw", "a.0")), pc(plan.Addr("fw", "b.0")), pc(plan.Addr("fw", "a.1"))}}
	out := Run(context.Background(), &host.Host{}, p, []plan.Provider{b}, Options{})
	if diff := cmp.Diff([][]string{{"fw[a.0]", "fw[a.1]"}}, b.groups); diff != "" {
		t.Errorf("batches (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"fw[b.0]"}, b.byKey["b"]); diff != "" {
		t.Errorf("a lone change goes through Apply (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]plan.Address{plan.Addr("fw", "a.0"), plan.Addr("fw", "b.0")}, out.Applied); diff != "" {
		t.Errorf("applied (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]plan.Address{plan.Addr("fw", "a.1")}, out.Failed); diff != "" {
		t.Errorf("failed (-want +got):\n%s", diff)
	}
}

// TestAfterDeps: undo changes keep their order, except that one waits for
// the undo changes it depends on; dependencies outside the list, and a
// cycle, change nothing.
func TestAfterDeps(t *testing.T) {
	a, b, c, x := plan.Addr("t", "a"), plan.Addr("t", "b"), plan.Addr("t", "c"), plan.Addr("t", "x")
	order := func(cs []*plan.Change) []string {
		var out []string
		for _, c := range afterDeps(cs) {
			out = append(out, c.Address.Key)
		}
		return out
	}
	for _, tt := range []struct {
		name string
		in   []*plan.Change
		want []string
	}{
		{"no dependencies", []*plan.Change{change(a), change(b), change(c)}, []string{"a", "b", "c"}},
		{"first waits for the last", []*plan.Change{change(a, c), change(b), change(c)}, []string{"b", "c", "a"}},
		{"outside the list", []*plan.Change{change(a, x), change(b)}, []string{"a", "b"}},
		{"a cycle", []*plan.Change{change(a, b), change(b, a), change(c)}, []string{"c", "a", "b"}},
	} {
		if d := cmp.Diff(tt.want, order(tt.in)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}
}
