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

// TestReadInventoryLinkLayer: link_layer (rdmaform_link_layer in an
// Ansible inventory) is InfiniBand or Ethernet in any case, ib or eth,
// stored as sysfs spells it; unset is "".
func TestReadInventoryLinkLayer(t *testing.T) {
	inv, err := fleet.ReadInventory("inv.yaml", []byte("hosts:\n  - {name: a, link_layer: infiniband}\n  - {name: b, link_layer: ETH}\n  - {name: c, link_layer: ib}\n  - {name: d}\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, h := range inv.Hosts {
		got[h.Name] = h.LinkLayer
	}
	if diff := cmp.Diff(map[string]string{"a": fleet.LinkIB, "b": fleet.LinkEthernet, "c": fleet.LinkIB, "d": ""}, got); diff != "" {
		t.Errorf("own inventory (-want +got):\n%s", diff)
	}
	inv, err = fleet.ReadInventory("inv.json", []byte(`{"_meta": {"hostvars": {"a": {"rdmaform_link_layer": "Ethernet"}, "b": {}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if inv.Hosts[0].LinkLayer != fleet.LinkEthernet || inv.Hosts[1].LinkLayer != "" {
		t.Errorf("ansible inventory: %+v", inv.Hosts)
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
		{"hosts:\n  - {name: a, link_layer: roce}\n", `inv.yaml:2:27: hosts[0].link_layer: want InfiniBand or Ethernet, not "roce"`},
		{`{"_meta": {"hostvars": {"a": {"rdmaform_link_layer": "IPoIB"}}}}`, `host a: rdmaform_link_layer: want InfiniBand or Ethernet, not "IPoIB"`},
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
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, fleet.ErrPlanFile) || errors.Is(err, fleet.ErrInventory) {
				t.Errorf("%s: error %v, want %q (ErrPlanFile)", tc.in, err, tc.err)
			}
			var fe *fleet.Error
			if !errors.As(err, &fe) || fe.File != "p.json" || strings.Contains(fe.Msg, "p.json") {
				t.Errorf("%s: error %#v, want the file in File, not in Msg", tc.in, err)
			}
			continue
		}
		if err != nil || p != tc.want || why != tc.why {
			t.Errorf("%s: %v %q %v, want %v %q", tc.in, p, why, err, tc.want, tc.why)
		}
	}
}

// TestCheckHostName: inventory host names are RFC 1123 host names (IPv4
// addresses among them) or IPv6 addresses, tested at each limit (63
// characters in a label, 253 in all) and one past; every character that
// would split waves' lines, reach the terminal or name no host is
// refused.
func TestCheckHostName(t *testing.T) {
	label := func(c byte, n int) string { return strings.Repeat(string(c), n) }
	// 253 characters: three labels of 63 and one of 61, with their dots.
	longest := strings.Join([]string{label('a', 63), label('b', 63), label('c', 63), label('d', 61)}, ".")
	if len(longest) != fleet.MaxHostName {
		t.Fatalf("longest is %d characters", len(longest))
	}
	for name, ok := range map[string]bool{
		"node1":                     true,
		"node-01.leaf2.example.net": true,
		"7":                         true,
		"localhost":                 true,
		"192.0.2.10":                true,
		"2001:db8::10":              true,
		"::1":                       true,
		label('a', 63):              true,
		label('a', 64):              false,
		"x." + label('a', 63):       true,
		"x." + label('a', 64):       false,
		longest:                     true,
		longest + "d":               false,
		longest[:252] + ".d":        false, // 254
		"":                          false,
		"a\nb":                      false,
		"a\x00b":                    false,
		"a\tb":                      false,
		"\x1b[31mnode1":             false,
		"node\x7f":                  false,
		"a b":                       false,
		"node_1":                    false,
		"a/b":                       false,
		"..":                        false,
		"a..b":                      false,
		".a":                        false,
		"a.":                        false,
		"-a":                        false,
		"a-":                        false,
		"a.-b":                      false,
		"nöde":                      false,
		"fe80::1%eth0":              false,
		"[::1]":                     false,
		"node1:22":                  false,
	} {
		err := fleet.CheckHostName(name)
		if (err == nil) != ok {
			t.Errorf("CheckHostName(%q) = %v, want ok=%v", name, err, ok)
		}
		if err != nil && strings.ContainsAny(err.Error(), "\n\x00\t\x1b\x7f") {
			t.Errorf("CheckHostName(%q): the error carries the raw name: %q", name, err)
		}
	}
}

// TestReadInventoryRefusesNames: a name that is no host name is refused
// at its position, in rdmaform's inventory and in each place of
// ansible-inventory --list's (a group's hosts, _meta.hostvars).
func TestReadInventoryRefusesNames(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"hosts:\n  - {name: \"a\\nb\"}\n", `inv.yaml:2:12: hosts[0].name: "a\nb" is not a host name`},
		{"hosts:\n  - name: \"\\e[2J\"\n", `inv.yaml:2:11: hosts[0].name: "\x1b[2J" is not a host name`},
		{`{"all": {"children": ["rdma"]}, "rdma": {"hosts": ["node1", "a b"]}}`, `inv.yaml:1:61: group rdma: "a b" is not a host name`},
		{`{"_meta": {"hostvars": {"node\u0000": {}}}, "all": {"hosts": []}}`, `inv.yaml:1:25: _meta.hostvars: "node\x00" is not a host name`},
		{`{"all": {"hosts": [["node1"]]}}`, `inv.yaml:1:20: group all: hosts: want host names`},
	} {
		_, err := fleet.ReadInventory("inv.yaml", []byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
	}
}
