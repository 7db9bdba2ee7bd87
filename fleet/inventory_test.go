package fleet_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/fleet"
)

func TestReadInventoryOwn(t *testing.T) {
	inv, err := fleet.ReadInventory("inv.yaml", []byte(`hosts:
  - {name: node10, domain: leaf2}
  - {name: node2, domain: 7, roles: [sm], fabric: ib0}
  - name: node1
    domain: leaf1
    roles: sm, login
    pending: false
`))
	if err != nil {
		t.Fatal(err)
	}
	want := &fleet.Inventory{Format: fleet.Own, Hosts: []fleet.Host{
		{Name: "node1", Domain: "leaf1", Roles: []string{"sm", "login"}, Pending: fleet.PendingNo, Why: "inventory: pending: false"},
		{Name: "node2", Domain: "7", Fabric: "ib0", Roles: []string{"sm"}},
		{Name: "node10", Domain: "leaf2"},
	}}
	if diff := cmp.Diff(want, inv); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestReadInventoryErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"hosts: []\n", "inv.yaml: no hosts"},
		{"{}\n", "inv.yaml:1:1: neither rdmaform's inventory"},
		{"- a\n", "inv.yaml: want a mapping"},
		{"hosts: {a: 1}\n", "inv.yaml:1:8: hosts: want a list"},
		{"hosts:\n  - {name: a}\nextra: 1\n", `inv.yaml:3:1: unknown key "extra"`},
		{"hosts:\n  - {name: a, rack: 1}\n", `inv.yaml:2:15: hosts[0]: unknown key "rack"`},
		{"hosts:\n  - {domain: x}\n", "inv.yaml:2:5: hosts[0]: no name"},
		{"hosts:\n  - {name: a}\n  - {name: a}\n", `inv.yaml:3:5: hosts[1]: host "a" is already at line 2`},
		{"hosts:\n  - {name: a, domain: [x]}\n", "inv.yaml:2:23: hosts[0].domain: want a string"},
		{"hosts:\n  - {name: a, domain: true}\n", "hosts[0].domain: want a string, not the boolean true"},
		{"hosts:\n  - {name: a, pending: maybe}\n", `inv.yaml:2:24: hosts[0].pending: want true or false, not "maybe"`},
		{"hosts:\n  - {name: a, roles: {x: 1}}\n", "hosts[0].roles: want a list of names"},
		{`{"_meta": {"hostvars": {"a": {"rdmaform_domain": ["x"]}}}}`, "host a: rdmaform_domain: want a string"},
		{`{"all": {"children": ["g"]}, "g": {"hosts": ["a"], "vars": {"rdmaform_domain": "x"}}}`, "--list --export"},
		{"hosts: [\n", "inv.yaml: yaml:"},
	} {
		_, err := fleet.ReadInventory("inv.yaml", []byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, fleet.ErrInventory) {
			t.Errorf("%q: error %v, want one with %q (ErrInventory)", tc.in, err, tc.want)
		}
	}
}

func TestNameLess(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		less bool
	}{
		{"node2", "node10", true},
		{"node10", "node2", false},
		{"node01", "node1", true},
		{"node1", "node01", false},
		{"a", "b", true},
		{"node1", "node1a", true},
		{"rack2-n9", "rack10-n1", true},
		{"x", "x", false},
	} {
		if got := fleet.NameLess(tc.a, tc.b); got != tc.less {
			t.Errorf("NameLess(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}

func TestPlanPending(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want fleet.Pending
		why  string
		err  string
	}{
		{`{"format_version": 1, "changes": [], "pending": [], "deferred": [], "summary": {}}`, fleet.PendingNo, "p.json: nothing to change, nothing pending", ""},
		{`{"format_version": 1, "changes": [{}, {}], "pending": [{}], "deferred": [], "summary": {}}`, fleet.PendingYes, "p.json: 2 changes, 1 value staged for the next boot", ""},
		{`{"format_version": 1, "changes": [], "pending": [], "deferred": [{}], "summary": {}}`, fleet.PendingYes, "p.json: 1 part planned after a reboot", ""},
		{`{"format_version": 1, "errors": [{"message": "bad"}]}`, fleet.PendingNo, "p.json: the plan has 1 error, fix it first: bad", ""},
		{`{"format_version": 1, "changes": [], "pending": [], "deferred": [], "activation_failures": [{}], "summary": {}}`, fleet.PendingNo, "p.json: 1 value did not take at the last activation: see rdmaform status on the host", ""},
		{`{"format_version": 2, "summary": {}}`, fleet.PendingUnknown, "", "format_version 1"},
		{`{"format_version": 1}`, fleet.PendingUnknown, "", "no summary"},
		{`not json`, fleet.PendingUnknown, "", "not the JSON"},
	} {
		p, why, err := fleet.PlanPending("p.json", []byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || p != tc.want || why != tc.why {
			t.Errorf("%s: %v %q %v, want %v %q", tc.in, p, why, err, tc.want, tc.why)
		}
	}
}
