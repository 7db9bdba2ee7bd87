package ipoib

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/ipoib/nmcli"
)

// TestDisruptsAndRevert: which changes name the interface in Disrupts, and
// what Revert does (nmcli steps, by payload).
func TestDisruptsAndRevert(t *testing.T) {
	inactive := storage()
	inactive.Active, inactive.Device = false, ""
	tests := []struct {
		name     string
		spec     string
		have     []nmcli.Profile
		disrupts []string
		revert   *payload
	}{{
		name:     "modify and re-activate: disrupts the child",
		spec:     replace(storageSpec, "mtu: 2000", "mtu: 1500"),
		have:     []nmcli.Profile{storage()},
		disrupts: []string{"ib0.8002"},
		revert:   &payload{Op: opUpdate, Name: "ib0-storage", UUID: "u-1", Settings: []nmcli.Setting{{Name: "infiniband.mtu", Value: "2000"}}, Up: true},
	}, {
		name:     "down",
		spec:     storageSpec + "    state: down\n",
		have:     []nmcli.Profile{storage()},
		disrupts: []string{"ib0.8002"},
		revert:   &payload{Op: opUpdate, Name: "ib0-storage", UUID: "u-1", Settings: []nmcli.Setting{{Name: "connection.autoconnect", Value: "yes"}}, Up: true},
	}, {
		name:     "absent: disrupts an active profile",
		spec:     storageSpec + "    state: absent\n",
		have:     []nmcli.Profile{storage()},
		disrupts: []string{"ib0.8002"},
		revert: &payload{Op: opCreate, Name: "ib0-storage", Up: true, Profile: func() nmcli.Profile {
			p := storage().Normalized()
			p.UUID, p.Active, p.Device = "", false, ""
			return p
		}()},
	}, {
		name:   "brought up with new addresses: nothing ran on it",
		spec:   replace(storageSpec, "192.0.2.1/24", "192.0.2.9/24"),
		have:   []nmcli.Profile{inactive},
		revert: &payload{Op: opUpdate, Name: "ib0-storage", UUID: "u-1", Settings: []nmcli.Setting{{Name: "ipv4.addresses", Value: "192.0.2.1/24"}}, Down: true},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &plan.Request{Spec: parseSpec(t, tt.spec), Inv: testInv()}
			prop := (&Provider{}).Plan(req, testObs(tt.have...), plan.NewFacts())
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
			if diff := cmp.Diff(tt.revert, r.Payload); diff != "" {
				t.Errorf("revert payload (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRevertCreate: a created profile is deleted by the UUID its add
// returned; without one (never applied) Revert refuses.
func TestRevertCreate(t *testing.T) {
	c := &plan.Change{Address: Address("x"), Payload: &payload{Op: opCreate, Name: "x", UUID: "u-9"}}
	r, err := (&Provider{}).Revert(c)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&payload{Op: opDelete, Name: "x", UUID: "u-9", Was: &nmcli.Profile{}}, r.Payload); diff != "" {
		t.Errorf("revert payload (-want +got):\n%s", diff)
	}
	c.Payload = &payload{Op: opCreate, Name: "x"}
	if _, err := (&Provider{}).Revert(c); err == nil {
		t.Error("Revert of a create without a UUID: no error")
	}
}
