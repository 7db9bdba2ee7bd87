package rails_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/netns"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/netdev"
	"github.com/rdmaform/rdmaform/providers/rails"
	"github.com/rdmaform/rdmaform/providers/sysctl"
	"github.com/rdmaform/rdmaform/schema"
)

// childEnv carries the root tree to the test binary re-run inside the
// host namespace.
const childEnv = "RDMAFORM_RAILS_LAB_ROOT"

// The lab: in the host namespace two rails on one subnet, rfa0
// (10.9.0.1/24) and rb0 (10.9.0.2/24); their veth peers in a peer
// namespace, in one bridge with the peer's address 10.9.0.100/24 (a
// switch with a host behind it).
const (
	rail1, rail2 = netns.Veth0, "rb0"
	addr1, addr2 = "10.9.0.1", "10.9.0.2"
	peerAddr     = "10.9.0.100"
)

// labSpec is what an operator writes for the two rails.
const labSpec = `version: 1
interfaces:
  - {name: rfa0, addresses: [10.9.0.1/24]}
  - {name: rb0, addresses: [10.9.0.2/24]}
sysctl:
  interfaces:
    - {name: rfa0, arp_ignore: 1, arp_announce: 2, rp_filter: 2}
    - {name: rb0, arp_ignore: 1, arp_announce: 2, rp_filter: 2}
rails:
  - {interface: rfa0, table: 101}
  - {interface: rb0, table: 2147483647, priority: 32765}
`

// TestRailsOnRealKernel shows on the real kernel, with packets counted
// per interface, what the rails settings fix. Without them, a ping from
// rail 2's address leaves by rail 1 (the main table's first route of
// the subnet), and a peer's ping of rail 2's address is answered by
// rail 1. rdmaform then plans and applies the spec (the sysctl and
// rails providers on netlink and /proc/sys/net of the namespace; an
// undo first, which restores the kernel's values), the next plan is
// empty, and the same pings leave by rail 2 only, rail 1 sending not one
// packet.
func TestRailsOnRealKernel(t *testing.T) {
	if root := os.Getenv(childEnv); root != "" {
		railsInNamespace(t, root)
		return
	}
	l := netns.New(t)
	p := netns.New(t)
	p.IP(t, "link", "del", netns.Veth0) // the peer namespace's own pair is not used
	for _, ns := range []string{l.Name, p.Name} {
		// No IPv6: its neighbour discovery and MLD reports would be
		// counted with the pings.
		run(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	l.IP(t, "link", "set", netns.Veth1, "netns", p.Name)
	l.IP(t, "link", "add", rail2, "type", "veth", "peer", "name", "rb1", "netns", p.Name)
	p.IP(t, "link", "add", "br0", "type", "bridge")
	for _, port := range []string{netns.Veth1, "rb1"} {
		p.IP(t, "link", "set", port, "master", "br0", "up")
	}
	p.IP(t, "link", "set", "br0", "up")
	p.IP(t, "addr", "add", peerAddr+"/24", "dev", "br0")
	l.IP(t, "link", "set", "lo", "up")
	// rail 1 first: its route of the subnet comes first in main.
	l.IP(t, "link", "set", rail1, "up")
	l.IP(t, "addr", "add", addr1+"/24", "dev", rail1)
	l.IP(t, "link", "set", rail2, "up")
	l.IP(t, "addr", "add", addr2+"/24", "dev", rail2)

	out := func() (r1, r2 uint64, err error) {
		flush(t, l, p)
		return count(t, l, func() error {
			return exec.Command("ip", "netns", "exec", l.Name, "ping", "-n", "-q", "-c", "3", "-i", "0.2", "-W", "2", "-I", addr2, peerAddr).Run()
		})
	}
	in := func() (r1, r2 uint64, err error) {
		flush(t, l, p)
		return count(t, l, func() error {
			return exec.Command("ip", "netns", "exec", p.Name, "ping", "-n", "-q", "-c", "3", "-i", "0.2", "-W", "2", addr2).Run()
		})
	}

	r1, r2, _ := out()
	t.Logf("without the settings, ping -I %s %s: %s sent %d packets, %s %d", addr2, peerAddr, rail1, r1, rail2, r2)
	if r1 < 3 || r2 != 0 {
		t.Errorf("without the settings the ping from %s should leave by %s: %s sent %d, %s %d", addr2, rail1, rail1, r1, rail2, r2)
	}
	r1, r2, _ = in()
	t.Logf("without the settings, the peer's ping of %s: %s sent %d packets, %s %d", addr2, rail1, r1, rail2, r2)
	if r1 < 3 {
		t.Errorf("without the settings the replies for %s should leave by %s: %s sent %d, %s %d", addr2, rail1, rail1, r1, rail2, r2)
	}

	root := l.Root
	if err := os.MkdirAll(filepath.Join(root, "proc/sys/net"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", l.Name, os.Args[0], "-test.run=^TestRailsOnRealKernel$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+root)
	b, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(b), "--- PASS: TestRailsOnRealKernel") {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, b)
	}
	t.Logf("in %s:\n%s", l.Name, b)

	r1, r2, err = out()
	t.Logf("with the settings, ping -I %s %s: %s sent %d packets, %s %d (%v)", addr2, peerAddr, rail1, r1, rail2, r2, err)
	if err != nil || r1 != 0 || r2 < 3 {
		t.Errorf("with the settings the ping from %s should leave by %s alone and succeed: %s sent %d, %s %d, ping: %v", addr2, rail2, rail1, r1, rail2, r2, err)
	}
	r1, r2, err = in()
	t.Logf("with the settings, the peer's ping of %s: %s sent %d packets, %s %d (%v)", addr2, rail1, r1, rail2, r2, err)
	if err != nil || r1 != 0 || r2 < 4 {
		t.Errorf("with the settings the ARP reply and the echo replies for %s should leave by %s alone: %s sent %d, %s %d, ping: %v", addr2, rail2, rail1, r1, rail2, r2, err)
	}
	// The peer learnt rail 2's MAC for its address: the right port answered ARP.
	link, err := l.Handle.LinkByName(rail2)
	if err != nil {
		t.Fatal(err)
	}
	if neigh := p.IP(t, "neigh", "show", addr2); !strings.Contains(neigh, link.Attrs().HardwareAddr.String()) {
		t.Errorf("the peer's neighbour entry for %s is not %s's MAC %s: %s", addr2, rail2, link.Attrs().HardwareAddr, neigh)
	}
	// What iproute2 shows of the kernel's rules and tables.
	rules := l.IP(t, "-4", "rule", "show")
	for _, want := range []string{"2000:\tfrom 10.9.0.1 lookup 101\n", "32765:\tfrom 10.9.0.2 lookup 2147483647\n"} {
		if !strings.Contains(rules, want) {
			t.Errorf("ip -4 rule show lacks %q:\n%s", want, rules)
		}
	}
	if got := l.IP(t, "-4", "route", "show", "table", "2147483647"); !strings.Contains(got, "10.9.0.0/24 dev rb0 proto static scope link src 10.9.0.2") {
		t.Errorf("ip -4 route show table 2147483647:\n%s", got)
	}
}

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// flush empties both namespaces' neighbour tables, so that every
// measure starts with ARP.
func flush(t *testing.T, l, p *netns.Lab) {
	l.IP(t, "neigh", "flush", "all")
	p.IP(t, "neigh", "flush", "all")
}

// count runs f and returns how many packets each rail sent meanwhile
// (the kernel's tx_packets, over netlink).
func count(t *testing.T, l *netns.Lab, f func() error) (r1, r2 uint64, err error) {
	t.Helper()
	tx := func(name string) uint64 {
		link, err := l.Handle.LinkByName(name)
		if err != nil {
			t.Fatal(err)
		}
		return link.Attrs().Statistics.TxPackets
	}
	a1, a2 := tx(rail1), tx(rail2)
	err = f()
	return tx(rail1) - a1, tx(rail2) - a2, err
}

// railsInNamespace is the test's part inside the host namespace: its
// /proc/sys/net bind-mounted into the root tree, netlink in the
// namespace.
func railsInNamespace(t *testing.T, root string) {
	if _, err := os.Stat("/proc/sys/net/ipv4/conf/" + rail2); err != nil {
		t.Fatalf("not in the lab's namespace: %v", err)
	}
	if err := unix.Mount("/proc/sys/net", filepath.Join(root, "proc/sys/net"), "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("mount --bind /proc/sys/net %s/proc/sys/net: %v", root, err)
	}
	fsys, err := host.NewRootFS(root)
	if err != nil {
		t.Fatal(err)
	}
	h := &host.Host{FS: fsys, Runner: &host.ExecRunner{Env: os.Environ()}, Net: host.NewNetlink(nil), Name: "rails lab"}
	ctx := context.Background()
	prov := []plan.Provider{netdev.New(), sysctl.New(), rails.New()}
	build := func(text string) *plan.Plan {
		t.Helper()
		spec, rep := schema.Parse("host.yaml", []byte(text))
		if len(rep) > 0 {
			t.Fatalf("spec: %v", rep)
		}
		res, err := plan.Build(ctx, h, spec, prov)
		if err != nil {
			t.Fatal(err)
		}
		return res.Plan
	}
	read := func(key string) string {
		b, err := os.ReadFile("/proc/sys/" + key)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	ruleText := func() string {
		rs, err := h.Net.RuleList()
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, r := range rs {
			s = append(s, r.String())
		}
		return strings.Join(s, "; ")
	}
	before := ruleText()
	arpBefore := read("net/ipv4/conf/rb0/arp_ignore")

	// The two rails without either setting are lint's finding
	// (TestLintRailsNeither), not plan's.
	bare := build("version: 1\ninterfaces:\n  - {name: rfa0, addresses: [10.9.0.1/24]}\n  - {name: rb0, addresses: [10.9.0.2/24]}\n")
	if len(bare.Errors) != 0 {
		t.Errorf("plan of the rails without settings: %v, want no finding", bare.Errors)
	}

	// An apply undone puts back the kernel's rules and values.
	p := build(labSpec)
	if len(p.Errors) > 0 {
		t.Fatalf("plan findings: %v", p.Errors)
	}
	done := apply.Run(ctx, h, p, prov, apply.Options{})
	if done.Err != nil {
		t.Fatalf("apply: %v", done.Err)
	}
	if back := apply.Revert(ctx, h, done.Done, prov, apply.Options{}); back.Err != nil {
		t.Fatalf("revert: %v", back.Err)
	}
	if got := ruleText(); got != before {
		t.Errorf("after the undo the rules are %s, want %s", got, before)
	}
	if got := read("net/ipv4/conf/rb0/arp_ignore"); got != arpBefore {
		t.Errorf("after the undo arp_ignore of rb0 is %s, want %s", got, arpBefore)
	}

	p = build(labSpec)
	var addrs []string
	for _, c := range p.Changes {
		addrs = append(addrs, c.Address.String())
	}
	t.Logf("plan: %s", strings.Join(addrs, ", "))
	out := apply.Run(ctx, h, p, prov, apply.Options{})
	if out.Err != nil {
		t.Fatalf("apply: %v", out.Err)
	}
	after := build(labSpec)
	if err := apply.Verify(after, out); err != nil || !after.Empty() || len(after.Errors) > 0 {
		t.Fatalf("plan after apply is not empty: %v; %v", err, after.Errors)
	}
	t.Logf("rules: %s", ruleText())
}
