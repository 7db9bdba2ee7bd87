package crosscheck

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// railHost is one host with two rails on 10.0.0.0/24 and what its spec
// adds after them.
func railHost(extra string) string {
	return "version: 1\ninterfaces:\n  - {name: ens1f0np0, addresses: [10.0.0.1/24]}\n  - {name: ens1f1np1, addresses: [10.0.0.2/24]}\n" + extra
}

const (
	arpBoth = "sysctl:\n  interfaces:\n    - {name: ens1f0np0, arp_ignore: 1, arp_announce: 2}\n    - {name: ens1f1np1, arp_ignore: 2, arp_announce: 2}\n"
	tables  = "rails:\n  - {interface: ens1f0np0, table: 101}\n  - {interface: ens1f1np1, table: 102}\n"
)

func lintOne(t *testing.T, spec string) []string {
	t.Helper()
	var got []string
	for _, f := range Lint(hosts(t, map[string]string{"a.yaml": spec}, "a.yaml")) {
		got = append(got, f.String())
	}
	return got
}

// TestLintRailsNeither: two rails of one subnet with neither setting are
// an error at each one's address.
func TestLintRailsNeither(t *testing.T) {
	got := lintOne(t, railHost(""))
	tail := ", with neither the ARP settings (sysctl.interfaces: arp_ignore 1, arp_announce 2) nor a routing table of its own (rails:): the kernel answers ARP for every rail's address on each of them, and sends the traffic of every address by the main table's one route of the subnet, so rdma_cm connections of the other rails leave by the wrong port"
	want := []string{
		"a.yaml:3:35: error: $.interfaces[0].addresses[0]: ens1f0np0 shares 10.0.0.0/24 with ens1f1np1" + tail,
		"a.yaml:4:35: error: $.interfaces[1].addresses[0]: ens1f1np1 shares 10.0.0.0/24 with ens1f0np0" + tail,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

// TestLintRailsBoth: the ARP settings and a table each: nothing.
func TestLintRailsBoth(t *testing.T) {
	if got := lintOne(t, railHost(arpBoth+tables)); len(got) != 0 {
		t.Errorf("findings: %q", got)
	}
}

// TestLintRailsARPOnly: the ARP settings without tables are a warning
// at each rail.
func TestLintRailsARPOnly(t *testing.T) {
	got := lintOne(t, railHost(arpBoth))
	want := []string{
		"a.yaml:3:35: warning: $.interfaces[0].addresses[0]: ens1f0np0 shares 10.0.0.0/24 with ens1f1np1 and has the ARP settings but no routing table of its own (rails:): traffic from its address leaves by the main table's route of the subnet, which may be another rail's",
		"a.yaml:4:35: warning: $.interfaces[1].addresses[0]: ens1f1np1 shares 10.0.0.0/24 with ens1f0np0 and has the ARP settings but no routing table of its own (rails:): traffic from its address leaves by the main table's route of the subnet, which may be another rail's",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

// TestLintRailsTablesOnly: tables without the ARP settings (here
// arp_ignore 1 without arp_announce, and arp_ignore 3, which is not the
// setting) are a warning at each rail.
func TestLintRailsTablesOnly(t *testing.T) {
	got := lintOne(t, railHost(tables+"sysctl:\n  interfaces:\n    - {name: ens1f0np0, arp_ignore: 1}\n    - {name: ens1f1np1, arp_ignore: 3, arp_announce: 2}\n"))
	tail := " and has a routing table of its own but not the ARP settings (sysctl.interfaces: arp_ignore 1, arp_announce 2): another rail may answer ARP for its address, and peers then send its traffic to the wrong port"
	want := []string{
		"a.yaml:3:35: warning: $.interfaces[0].addresses[0]: ens1f0np0 shares 10.0.0.0/24 with ens1f1np1" + tail,
		"a.yaml:4:35: warning: $.interfaces[1].addresses[0]: ens1f1np1 shares 10.0.0.0/24 with ens1f0np0" + tail,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

// TestLintRailsApart: rails on different subnets, one netdev with two
// addresses of one subnet, and two hosts with a subnet each in common
// are no multi-rail case.
func TestLintRailsApart(t *testing.T) {
	if got := lintOne(t, "version: 1\ninterfaces:\n  - {name: ens1f0np0, addresses: [10.0.0.1/24, 10.0.0.3/24]}\n  - {name: ens1f1np1, addresses: [10.0.1.2/24]}\n"); len(got) != 0 {
		t.Errorf("findings: %q", got)
	}
	var got []string
	for _, f := range Lint(hosts(t, map[string]string{
		"a.yaml": "version: 1\ninterfaces:\n  - {name: ens1f0np0, addresses: [10.0.0.1/24]}\n",
		"b.yaml": "version: 1\ninterfaces:\n  - {name: ens1f0np0, addresses: [10.0.0.2/24]}\n",
	}, "a.yaml", "b.yaml")) {
		got = append(got, f.String())
	}
	if len(got) != 0 {
		t.Errorf("findings: %q", got)
	}
}
