package apply

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

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
	if err := r.fail[c.Address]; err != nil {
		return err
	}
	r.applied = append(r.applied, c.Address)
	return nil
}

func change(addr string, deps ...string) *plan.Change {
	return &plan.Change{Address: addr, Provider: "rec", DependsOn: deps}
}

func TestRunSkipsDependentsAndKeepsGoing(t *testing.T) {
	rec := &recorder{fail: map[string]error{"rxe[rxe0]": errors.New("no such device")}}
	p := &plan.Plan{Changes: []*plan.Change{
		change("module[rdma_rxe]"),
		change("rxe[rxe0]", "module[rdma_rxe]"),
		change("rdma_cm[rxe0/1]", "rxe[rxe0]"),
		change("interface[ens3]"),
		change("ipoib[x]", "rdma_cm[rxe0/1]"), // transitively skipped
	}}
	var progress bytes.Buffer
	out := Run(context.Background(), &host.Host{}, p, []plan.Provider{rec}, Options{Progress: &progress})
	if diff := cmp.Diff([]string{"module[rdma_rxe]", "interface[ens3]"}, rec.applied); diff != "" {
		t.Errorf("applied (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"rxe[rxe0]"}, out.Failed); diff != "" {
		t.Errorf("failed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"rdma_cm[rxe0/1]", "ipoib[x]"}, out.Skipped); diff != "" {
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
	p := &plan.Plan{Changes: []*plan.Change{change("a"), change("b"), change("c")}}
	n := 0
	out := Run(context.Background(), &host.Host{}, p, []plan.Provider{rec}, Options{Before: func(c *plan.Change) error {
		n++
		if n == 2 {
			return errors.New("killed")
		}
		return nil
	}})
	if diff := cmp.Diff([]string{"a"}, rec.applied); diff != "" {
		t.Errorf("applied (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"b", "c"}, out.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
}

func TestVerify(t *testing.T) {
	after := &plan.Plan{Changes: []*plan.Change{
		{Address: "rdma_cm[mlx5_0/1]", Attributes: []plan.Attr{{Name: "tos", Before: "0", After: "106"}}},
		{Address: "rxe[rxe0]"},
	}}
	err := Verify(after, Outcome{Failed: []string{"rxe[rxe0]"}})
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
