package apply

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/plan"
)

// reverter is a recorder that can undo: the undo of a change is a change
// of the same address with "undo " before its key; a key in failRevert
// has no undo (its Revert fails).
type reverter struct {
	recorder
	failRevert map[string]bool
}

func (r *reverter) Name() string { return "rev" }
func (r *reverter) Revert(c *plan.Change) (*plan.Change, error) {
	if r.failRevert[c.Address.Key] {
		return nil, errors.New("no undo known")
	}
	return &plan.Change{Address: plan.Addr(c.Address.Kind, "undo "+c.Address.Key)}, nil
}

// TestRevert: applied changes are undone last first, each by its own
// provider; a change whose provider cannot revert, and one whose undo
// cannot be made, are reported, and the others are still undone.
func TestRevert(t *testing.T) {
	rev := &reverter{failRevert: map[string]bool{"d": true}}
	plain := &recorder{}
	done := []*plan.Change{
		{Address: plan.Addr("t", "a"), Provider: "rev"},
		{Address: plan.Addr("t", "b"), Provider: "rec"},
		{Address: plan.Addr("t", "c"), Provider: "rev"},
		{Address: plan.Addr("t", "d"), Provider: "rev"},
	}
	out := Revert(context.Background(), nil, done, []plan.Provider{rev, plain}, Options{})
	if d := cmp.Diff([]string{"t[undo c]", "t[undo a]"}, rev.applied); d != "" {
		t.Errorf("undone (-want +got):\n%s", d)
	}
	if len(plain.applied) != 0 {
		t.Errorf("the provider that cannot revert applied %v", plain.applied)
	}
	if out.Err == nil {
		t.Fatal("no error for the changes that could not be reverted")
	}
	for _, want := range []string{"t[b]: cannot be reverted", "t[d]: revert: no undo known"} {
		if !strings.Contains(out.Err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, out.Err)
		}
	}
}
