package rxe

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// TestRevert: created ↔ deleted, moved back; a link this plan put on the
// old netdev is evicted first.
func TestRevert(t *testing.T) {
	links := map[string]host.RdmaLink{"rxe0": {Name: "rxe0", Netdev: "eth0"}, "rxe1": {Name: "rxe1", Netdev: "eth1"}}
	netdevs := map[string]host.Link{"eth0": {Name: "eth0"}, "eth1": {Name: "eth1"}, "eth2": {Name: "eth2"}}
	tests := []struct {
		name string
		spec string
		want map[string]*payload // by address: the revert's payload
	}{{
		name: "created",
		spec: "  - {name: rxe2, netdev: eth2}\n",
		want: map[string]*payload{"rxe[rxe2]": {name: "rxe2", was: "eth2"}},
	}, {
		name: "deleted",
		spec: "  - {name: rxe0, netdev: eth0, state: absent}\n",
		want: map[string]*payload{"rxe[rxe0]": {name: "rxe0", netdev: "eth0"}},
	}, {
		name: "swapped: each back, evicting the other",
		spec: "  - {name: rxe0, netdev: eth1}\n  - {name: rxe1, netdev: eth0}\n",
		want: map[string]*payload{
			"rxe[rxe0]": {name: "rxe0", netdev: "eth0", deleteFirst: true, was: "eth1", evict: []string{"rxe1"}},
			"rxe[rxe1]": {name: "rxe1", netdev: "eth1", deleteFirst: true, was: "eth0", evict: []string{"rxe0"}},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, rep := schema.Parse("host.yaml", []byte("version: 1\nrxe:\n"+tt.spec))
			if len(rep) > 0 {
				t.Fatal(rep)
			}
			req := &plan.Request{Spec: spec, Inv: &inventory.Inventory{}}
			prop := diff(req, &Observed{Links: links, Netdevs: netdevs}, plan.NewFacts())
			got := map[string]*payload{}
			for _, c := range prop.Changes {
				r, err := (&Provider{}).Revert(c)
				if err != nil {
					t.Fatal(err)
				}
				got[c.Address.String()] = r.Payload.(*payload)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(payload{})); diff != "" {
				t.Errorf("revert payloads (-want +got):\n%s", diff)
			}
		})
	}
}
