package netdev_test

import (
	"context"
	"net"
	"net/netip"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/internal/testlab/netns"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/netdev"
	"github.com/rdmaform/rdmaform/schema"
)

func mustSpec(t *testing.T, text string) *schema.Spec {
	t.Helper()
	spec, rep := schema.Parse("host.yaml", []byte(text))
	if len(rep) > 0 {
		t.Fatalf("spec: %v", rep)
	}
	return spec
}

func attrs(p *plan.Plan) map[string][]plan.Attr {
	out := map[string][]plan.Attr{}
	for _, c := range p.Changes {
		out[c.Address.String()] = c.Attributes
	}
	return out
}

// planApplyPlan plans, applies and plans again against the lab host, and
// returns the first plan.
func planApplyPlan(t *testing.T, l *netns.Lab, spec *schema.Spec) *plan.Plan {
	t.Helper()
	ctx := context.Background()
	prov := []plan.Provider{netdev.New()}
	res, err := plan.Build(ctx, l.Host, spec, prov)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Errors) > 0 {
		t.Fatalf("plan findings: %v", res.Plan.Errors)
	}
	out := apply.Run(ctx, l.Host, res.Plan, prov, apply.Options{})
	if out.Err != nil {
		t.Fatalf("apply: %v", out.Err)
	}
	after, err := plan.Build(ctx, l.Host, spec, prov)
	if err != nil {
		t.Fatal(err)
	}
	if err := apply.Verify(after.Plan, out); err != nil || !after.Plan.Empty() || len(after.Plan.Errors) > 0 {
		t.Fatalf("plan after apply is not empty: %v; changes %v; findings %v", err, attrs(after.Plan), after.Plan.Errors)
	}
	return res.Plan
}

// kernelAddrs lists a link's addresses as netlink shows them, "P scope".
func kernelAddrs(t *testing.T, l *netns.Lab, name string) []string {
	t.Helper()
	link, err := l.Handle.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	as, err := l.Handle.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range as {
		ip, _ := netip.AddrFromSlice(a.IP)
		ones, _ := a.Mask.Size()
		kind := "global"
		if ip.Unmap().IsLinkLocalUnicast() {
			kind = "link-local"
		}
		out = append(out, netip.PrefixFrom(ip.Unmap(), ones).String()+" "+kind)
	}
	sort.Strings(out)
	return out
}

// ipAddrs is `ip -n NS -o addr show dev NAME` reduced to "family prefix".
func ipAddrs(t *testing.T, l *netns.Lab, name string) []string {
	t.Helper()
	re := regexp.MustCompile(`\s(inet6?) (\S+)`)
	var out []string
	for _, line := range strings.Split(l.IP(t, "-o", "addr", "show", "dev", name), "\n") {
		if m := re.FindStringSubmatch(line); m != nil {
			p := m[2]
			if strings.HasPrefix(p, "fe80:") {
				p = "fe80::/64 (link-local)"
			}
			out = append(out, m[1]+" "+p)
		}
	}
	sort.Strings(out)
	return out
}

// TestRealKernel runs plan, apply, plan against the real kernel in a
// private namespace: a veth end comes up with MTU 9000 and exactly the
// spec's IPv4 and IPv6 addresses; a stray static address goes, the
// kernel's link-local and a non-permanent (DHCP-like) address stay; then
// addresses: [] removes every static address and nothing else.
func TestRealKernel(t *testing.T) {
	l := netns.New(t)
	h := l.Handle
	peer, _ := h.LinkByName(netns.Veth1)
	if err := h.LinkSetUp(peer); err != nil {
		t.Fatal(err)
	}
	end, _ := h.LinkByName(netns.Veth0)
	stray := &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP("10.9.9.9").To4(), Mask: net.CIDRMask(24, 32)}}
	if err := h.AddrAdd(end, stray); err != nil {
		t.Fatal(err)
	}
	// A lease of an hour, as a DHCP client sets it: not IFA_F_PERMANENT.
	lease := &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP("10.7.7.7").To4(), Mask: net.CIDRMask(24, 32)}, ValidLft: 3600, PreferedLft: 3600}
	if err := h.AddrAdd(end, lease); err != nil {
		t.Fatal(err)
	}

	t.Run("up, mtu, addresses", func(t *testing.T) {
		spec := mustSpec(t, `version: 1
interfaces:
  - name: rfa0
    state: up
    mtu: 9000
    addresses: [192.0.2.1/24, "2001:db8::1/64"]
`)
		got := attrs(planApplyPlan(t, l, spec))
		want := map[string][]plan.Attr{"interface[rfa0]": {
			{Name: "state", Before: "down", After: "up"},
			{Name: "mtu", Before: "1500", After: "9000"},
			{Name: "addresses", Before: "10.9.9.9/24", After: "192.0.2.1/24, 2001:db8::1/64"},
		}}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("plan (-want +got):\n%s", d)
		}
		link, _ := h.LinkByName(netns.Veth0)
		if link.Attrs().MTU != 9000 || link.Attrs().Flags&net.FlagUp == 0 {
			t.Errorf("netlink: mtu %d, flags %v; want 9000, up", link.Attrs().MTU, link.Attrs().Flags)
		}
		wantAddrs := []string{"10.7.7.7/24 global", "192.0.2.1/24 global", "2001:db8::1/64 global"}
		if d := cmp.Diff(wantAddrs, withoutLinkLocal(kernelAddrs(t, l, netns.Veth0))); d != "" {
			t.Errorf("netlink addresses (-want +got):\n%s", d)
		}
		if out := l.IP(t, "-o", "link", "show", "dev", netns.Veth0); !strings.Contains(out, "mtu 9000") || !strings.Contains(out, ",UP") {
			t.Errorf("ip link show: want mtu 9000 and UP:\n%s", out)
		}
	})

	// The kernel adds the link-local address once the link is up.
	linkLocal := hasLinkLocal(kernelAddrs(t, l, netns.Veth0))
	if !linkLocal {
		t.Fatalf("no IPv6 link-local address on %s after it came up: %v", netns.Veth0, kernelAddrs(t, l, netns.Veth0))
	}

	t.Run("addresses: [] keeps link-local and leased", func(t *testing.T) {
		spec := mustSpec(t, `version: 1
interfaces:
  - name: rfa0
    addresses: []
`)
		got := attrs(planApplyPlan(t, l, spec))
		want := map[string][]plan.Attr{"interface[rfa0]": {
			{Name: "addresses", Before: "192.0.2.1/24, 2001:db8::1/64", After: ""},
		}}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("plan (-want +got):\n%s", d)
		}
		wantIP := []string{"inet 10.7.7.7/24", "inet6 fe80::/64 (link-local)"}
		if d := cmp.Diff(wantIP, ipAddrs(t, l, netns.Veth0)); d != "" {
			t.Errorf("ip -n %s -o addr show dev %s (-want +got):\n%s", l.Name, netns.Veth0, d)
		}
	})
}

func withoutLinkLocal(as []string) []string {
	var out []string
	for _, a := range as {
		if !strings.HasSuffix(a, " link-local") {
			out = append(out, a)
		}
	}
	return out
}

func hasLinkLocal(as []string) bool {
	for _, a := range as {
		if strings.HasSuffix(a, " link-local") {
			return true
		}
	}
	return false
}
