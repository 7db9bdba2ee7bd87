package rails_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// twoRails: the two ports of a ConnectX-5 on one subnet, with the ARP
// settings and a table each.
const twoRails = `version: 1
persistence: boot-unit
interfaces:
  - {name: ens1f0np0, state: up, addresses: [192.0.2.11/24]}
  - {name: ens1f1np1, state: up, addresses: [192.0.2.12/24]}
sysctl:
  interfaces:
    - {name: ens1f0np0, arp_ignore: 1, arp_announce: 2, rp_filter: 2}
    - {name: ens1f1np1, arp_ignore: 1, arp_announce: 2, rp_filter: 2}
rails:
  - {interface: ens1f0np0, table: 101}
  - {interface: ens1f1np1, table: 102, priority: 2001}
`

// kernel is what the simulated kernel holds: its rules (the three
// default ones included) and the routes of tables 101 and 102.
func kernel(t *testing.T, dir string) (rules, routes []string) {
	t.Helper()
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Host()
	if err != nil {
		t.Fatal(err)
	}
	rs, err := h.Net.RuleList()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		rules = append(rules, r.String())
	}
	for _, table := range []int{101, 102} {
		rt, err := h.Net.RouteList(table)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rt {
			routes = append(routes, fmt.Sprintf("%s table %d", r, r.Table))
		}
	}
	return rules, routes
}

var (
	wantRules  = []string{"0: from all lookup 255", "2000: from 192.0.2.11 lookup 101", "2001: from 192.0.2.12 lookup 102", "32766: from all lookup 254", "32767: from all lookup 253"}
	wantRoutes = []string{"192.0.2.0/24 dev ens1f0np0 src 192.0.2.11 table 101", "192.0.2.0/24 dev ens1f1np1 src 192.0.2.12 table 102"}
	noRules    = []string{"0: from all lookup 255", "32766: from all lookup 254", "32767: from all lookup 253"}
)

// TestScenario: apply makes a rule and a table per rail and the plan is
// empty; a reboot loses them, the boot unit makes them again and the
// plan is empty; an unconfirmed apply is rolled back to none.
func TestScenario(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	spec := clitest.WriteSpec(t, twoRails)
	out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "--confirm-timeout", "1s", "-f", spec)
	if !strings.Contains(out, "rail[ens1f0np0]") || !strings.Contains(out, "Reverted") {
		t.Fatalf("unconfirmed apply:\n%s", out)
	}
	if rules, routes := kernel(t, dir); !cmp.Equal(rules, noRules) || len(routes) != 0 {
		t.Errorf("after the rollback: rules %q, routes %q", rules, routes)
	}
	out = clitest.Converge(t, dir, spec)
	for _, want := range []string{
		"+ rail[ens1f0np0]", "rules: 2000: from 192.0.2.11 lookup 101", "routes: 192.0.2.0/24 dev ens1f0np0 src 192.0.2.11",
		"+ rail[ens1f1np1]", "rules: 2001: from 192.0.2.12 lookup 102",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	rules, routes := kernel(t, dir)
	if diff := cmp.Diff(wantRules, rules); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantRoutes, routes); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}
	clitest.MustRun(t, 0, "sim", "reboot", dir)
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", spec)
	rules, routes = kernel(t, dir)
	if !cmp.Equal(rules, wantRules) || !cmp.Equal(routes, wantRoutes) {
		t.Errorf("after the reboot and the boot unit: rules %q, routes %q", rules, routes)
	}
}

// TestShowAuditDrift: show captures the rails and the capture plans
// empty; a rule removed and a foreign route added behind rdmaform's back
// are drift audit reports and apply repairs.
func TestShowAuditDrift(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	spec := clitest.WriteSpec(t, twoRails)
	clitest.Converge(t, dir, spec)
	capture := clitest.MustRun(t, 0, "--sim", dir, "show")
	for _, want := range []string{"rails:", "interface: ens1f0np0", "table: 101", "table: 102", "priority: 2001"} {
		if !strings.Contains(capture, want) {
			t.Errorf("show lacks %q:\n%s", want, capture)
		}
	}
	if strings.Contains(capture, "priority: 2000") {
		t.Errorf("show writes the default priority:\n%s", capture)
	}
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", clitest.WriteSpec(t, capture))
	clitest.MustRun(t, 0, "--sim", dir, "audit", "-f", spec)

	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Host()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Net.RuleDel(host.Rule{Priority: 2001, Table: 102, Src: netip.MustParsePrefix("192.0.2.12/32")}); err != nil {
		t.Fatal(err)
	}
	if err := h.Net.RouteAdd(host.Route{Table: 101, Dst: netip.MustParsePrefix("198.51.100.0/24"), Dev: "ens1f1np1"}); err != nil {
		t.Fatal(err)
	}
	out := clitest.MustRun(t, 2, "--sim", dir, "audit", "-f", spec)
	for _, want := range []string{"rail[ens1f1np1]", "rail[ens1f0np0]"} {
		if !strings.Contains(out, want) {
			t.Errorf("audit lacks %q:\n%s", want, out)
		}
	}
	out = clitest.Converge(t, dir, spec)
	if !strings.Contains(out, "routes: 192.0.2.0/24 dev ens1f0np0 src 192.0.2.11; 198.51.100.0/24 dev ens1f1np1 -> 192.0.2.0/24 dev ens1f0np0 src 192.0.2.11") {
		t.Errorf("the repair does not remove the foreign route of table 101:\n%s", out)
	}
	rules, routes := kernel(t, dir)
	if !cmp.Equal(rules, wantRules) || !cmp.Equal(routes, wantRoutes) {
		t.Errorf("after the repair: rules %q, routes %q", rules, routes)
	}
}

// railSpec is one rail with a given table and priority line.
func railSpec(table, prio string) string {
	s := "version: 1\ninterfaces:\n  - {name: ens1f0np0, state: up, addresses: [192.0.2.11/24]}\nrails:\n  - interface: ens1f0np0\n    table: " + table + "\n"
	if prio != "" {
		s += "    priority: " + prio + "\n"
	}
	return s
}

// TestLimits: tables 1-2147483647 but the kernel's 252-255, priorities
// 1-32765; at each limit the rail converges, one past it is refused at
// its line.
func TestLimits(t *testing.T) {
	for _, c := range []struct{ table, prio, want string }{
		{"0", "", "host.yaml:6:12: error: $.rails[0].table: 0 is below the minimum 1"},
		{"2147483648", "", "host.yaml:6:12: error: $.rails[0].table: integer 2147483648 is out of range"},
		{"252", "", "host.yaml:6:12: error: $.rails[0].table: 252 is the kernel's"},
		{"255", "", "host.yaml:6:12: error: $.rails[0].table: 255 is the kernel's"},
		{"101", "0", "host.yaml:7:15: error: $.rails[0].priority: 0 is below the minimum 1"},
		{"101", "32766", "host.yaml:7:15: error: $.rails[0].priority: 32766 is above the maximum 32765"},
	} {
		dir := simtest.Dir(t, "cx5-roce", nil)
		out := clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", clitest.WriteSpec(t, railSpec(c.table, c.prio)))
		if !strings.Contains(out, c.want) {
			t.Errorf("table %s priority %s: want %q at its line:\n%s", c.table, c.prio, c.want, out)
		}
	}
	for _, c := range []struct{ table, prio, rule string }{
		{"1", "1", "1: from 192.0.2.11 lookup 1"},
		{"251", "", "2000: from 192.0.2.11 lookup 251"},
		{"256", "", "2000: from 192.0.2.11 lookup 256"},
		{"2147483647", "32765", "32765: from 192.0.2.11 lookup 2147483647"},
	} {
		dir := simtest.Dir(t, "cx5-roce", nil)
		out := clitest.Converge(t, dir, clitest.WriteSpec(t, railSpec(c.table, c.prio)))
		if !strings.Contains(out, c.rule) {
			t.Errorf("table %s priority %s: plan lacks %q:\n%s", c.table, c.prio, c.rule, out)
		}
	}
	dir := simtest.Dir(t, "cx5-roce", nil)
	out := clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", clitest.WriteSpec(t, `version: 1
rails:
  - {interface: ens1f0np0, table: 101}
  - {interface: ens1f0np0, table: 101}
  - {table: 103}
  - {interface: ens1f1np1}
`))
	for _, want := range []string{
		"$.rails[1].interface: netdev ens1f0np0 is a rail twice (first at $.rails[0])",
		"$.rails[1].table: table 101 is another rail's ($.rails[0])",
		"$.rails[2]: interface: is required",
		"$.rails[3]: table: is required",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q:\n%s", want, out)
		}
	}
}

// TestPlanFindings: what plan refuses, each at its line: a rail on a
// NetworkManager profile, a rail without an IPv4 address, a rail netdev
// the host lacks; a --root tree has no rules to read. Two interfaces of
// one subnet with neither setting are lint's error, not plan's: plan
// goes on (the kernel lab's specs have two rxe netdevs on one subnet).
func TestPlanFindings(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	bare := "version: 1\ninterfaces:\n  - {name: ens1f0np0, state: up, addresses: [192.0.2.11/24]}\n  - {name: ens1f1np1, state: up, addresses: [192.0.2.12/24]}\n"
	if out := clitest.MustRun(t, 2, "--sim", dir, "plan", "-f", clitest.WriteSpec(t, bare)); strings.Contains(out, "shares 192.0.2.0/24") {
		t.Errorf("plan refuses two interfaces of one subnet; that is lint's finding:\n%s", out)
	}
	out := clitest.MustRun(t, 1, "lint", clitest.WriteSpec(t, bare))
	for _, want := range []string{
		"host.yaml:3:46: error: $.interfaces[0].addresses[0]: ens1f0np0 shares 192.0.2.0/24 with ens1f1np1, with neither the ARP settings",
		"host.yaml:4:46: error: $.interfaces[1].addresses[0]: ens1f1np1 shares 192.0.2.0/24 with ens1f0np0, with neither the ARP settings",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lint: want %q:\n%s", want, out)
		}
	}
	clitest.Converge(t, dir, clitest.WriteSpec(t, bare+"rails:\n  - {interface: ens1f0np0, table: 101}\n  - {interface: ens1f1np1, table: 102}\n"))

	out = clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", clitest.WriteSpec(t, `version: 1
ipoib:
  - {name: storage, parent: ib0}
rails:
  - {interface: ib0, table: 110}
  - {interface: ens1f0np0, table: 111}
  - {interface: nope0, table: 112}
`))
	for _, want := range []string{
		`host.yaml:5:17: error: $.rails[0].interface: ib0 is NetworkManager connection storage's interface: give the connection its rail routing instead (nmcli connection modify storage ipv4.routing-rules "priority 2000 from ADDR table 110" ipv4.routes "SUBNET table=110")`,
		"host.yaml:7:17: error: $.rails[2].interface: no network interface nope0 on this host",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q:\n%s", want, out)
		}
	}
	// ens1f0np0 has the address the converged plan gave it: no finding.
	if strings.Contains(out, "rails[1]") {
		t.Errorf("a rail with the host's address is refused:\n%s", out)
	}
	noAddr := simtest.Dir(t, "cx5-roce", nil)
	out = clitest.MustRun(t, 1, "--sim", noAddr, "plan", "-f", clitest.WriteSpec(t, "version: 1\nrails:\n  - {interface: ens1f0np0, table: 101}\n"))
	if !strings.Contains(out, "host.yaml:3:17: error: $.rails[0].interface: rail ens1f0np0 has no IPv4 address to route from: give it one (interfaces[].addresses)") {
		t.Errorf("a rail without an address:\n%s", out)
	}
	out = clitest.MustRun(t, 1, "--root", t.TempDir(), "plan", "-f", clitest.WriteSpec(t, "version: 1\nrails:\n  - {interface: ens1f0np0, table: 101}\n"))
	if !strings.Contains(out, "ip -4 rule show: netlink is not available on this host (--root)") {
		t.Errorf("a --root plan:\n%s", out)
	}
}
