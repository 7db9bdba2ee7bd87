package netdev

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// TestDisruptsAndRevert: which changes name the netdev in Disrupts, and
// what Revert plans back.
func TestDisruptsAndRevert(t *testing.T) {
	have := &Iface{Link: host.Link{Name: "ens3", MTU: 1500, AdminUp: true},
		Addrs: []host.Addr{addr("192.0.2.1/24", true, false), addr("192.168.122.50/24", true, true)}}
	tests := []struct {
		name     string
		spec     string
		disrupts []string
		revert   []plan.Attr
	}{{
		name:     "down",
		spec:     "  - {name: ens3, state: down}\n",
		disrupts: []string{"ens3"},
		revert:   []plan.Attr{{Name: "state", Before: "down", After: "up"}},
	}, {
		name:     "MTU only",
		spec:     "  - {name: ens3, mtu: 9000}\n",
		disrupts: []string{"ens3"},
		revert:   []plan.Attr{{Name: "mtu", Before: "9000", After: "1500"}},
	}, {
		name:   "an address added",
		spec:   "  - {name: ens3, addresses: [192.0.2.1/24, 192.0.2.2/24]}\n",
		revert: []plan.Attr{{Name: "addresses", Before: "192.0.2.1/24, 192.0.2.2/24", After: "192.0.2.1/24"}},
	}, {
		name:     "the static address replaced",
		spec:     "  - {name: ens3, addresses: [192.0.2.9/24]}\n",
		disrupts: []string{"ens3"},
		revert:   []plan.Attr{{Name: "addresses", Before: "192.0.2.9/24", After: "192.0.2.1/24"}},
	}, {
		name:     "every static address removed, MTU set",
		spec:     "  - {name: ens3, mtu: 4000, addresses: []}\n",
		disrupts: []string{"ens3"},
		revert:   []plan.Attr{{Name: "mtu", Before: "4000", After: "1500"}, {Name: "addresses", Before: "", After: "192.0.2.1/24"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, rep := schema.Parse("host.yaml", []byte("version: 1\ninterfaces:\n"+tt.spec))
			if len(rep) > 0 {
				t.Fatal(rep)
			}
			req := &plan.Request{Spec: spec, Inv: &inventory.Inventory{}}
			prop := diff(req, &Observed{Ifaces: map[string]*Iface{"ens3": have}}, plan.NewFacts())
			if len(prop.Changes) != 1 {
				t.Fatalf("want one change, got %+v", summarize(prop))
			}
			c := prop.Changes[0]
			if diff := cmp.Diff(tt.disrupts, c.Disrupts); diff != "" {
				t.Errorf("Disrupts (-want +got):\n%s", diff)
			}
			r, err := (&Provider{}).Revert(c)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.revert, r.Attributes); diff != "" {
				t.Errorf("revert attributes (-want +got):\n%s", diff)
			}
			// The revert of the revert is the change again.
			rr, err := (&Provider{}).Revert(r)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.Attributes, rr.Attributes); diff != "" {
				t.Errorf("revert of the revert (-change +got):\n%s", diff)
			}
		})
	}
}
