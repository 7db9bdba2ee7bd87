package modules

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/plan"
)

// TestRevert: a module the change loaded is unloaded; a line the change
// added to or removed from the conf file goes back; a module that was
// loaded before stays.
func TestRevert(t *testing.T) {
	tests := []struct {
		name   string
		change *plan.Change
		want   *payload
		action plan.Action
	}{{
		name: "loaded and listed",
		change: &plan.Change{Address: Address("rdma_ucm"), Payload: &payload{name: "rdma_ucm", load: true, listed: true},
			Attributes: []plan.Attr{{Name: attrLoaded, Before: no, After: yes}, {Name: attrAtBoot, Before: no, After: yes}}},
		want:   &payload{name: "rdma_ucm", unload: true, listed: false},
		action: plan.Delete,
	}, {
		name: "loaded, already listed",
		change: &plan.Change{Address: Address("rdma_ucm"), Payload: &payload{name: "rdma_ucm", load: true, listed: true},
			Attributes: []plan.Attr{{Name: attrLoaded, Before: no, After: yes}}},
		want:   &payload{name: "rdma_ucm", unload: true, skipFile: true},
		action: plan.Delete,
	}, {
		name: "listed only: stays loaded",
		change: &plan.Change{Address: Address("ib_ipoib"), Payload: &payload{name: "ib_ipoib", listed: true},
			Attributes: []plan.Attr{{Name: attrAtBoot, Before: no, After: yes}}},
		want:   &payload{name: "ib_ipoib", listed: false},
		action: plan.Update,
	}, {
		name: "dropped from the file: listed again",
		change: &plan.Change{Address: Address("ib_umad"), Action: plan.Delete, Payload: &payload{name: "ib_umad", listed: false},
			Attributes: []plan.Attr{{Name: attrAtBoot, Before: yes, After: no}}},
		want:   &payload{name: "ib_umad", listed: true},
		action: plan.Create,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := (&Provider{}).Revert(tt.change)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, r.Payload, cmp.AllowUnexported(payload{})); diff != "" {
				t.Errorf("revert payload (-want +got):\n%s", diff)
			}
			if r.Action != tt.action {
				t.Errorf("action %v, want %v", r.Action, tt.action)
			}
		})
	}
}
