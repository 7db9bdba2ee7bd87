package rails_test

import (
	"errors"
	"fmt"
	"net/netip"
	"syscall"
	"testing"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/netns"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// routerSteps runs the same rules and routes calls on a host whose rail
// up is up with 10.9.1.1/24 and whose netdev down is down, and returns
// what each answered: "ok", the errno, or "no link"; then the table's
// routes after the address and the link went.
func routerSteps(t *testing.T, n host.Net, up, down string) []string {
	t.Helper()
	a := netip.MustParseAddr("10.9.1.1")
	subnet := netip.MustParsePrefix("10.9.1.0/24")
	res := func(err error) string {
		var errno syscall.Errno
		switch {
		case err == nil:
			return "ok"
		case errors.Is(err, host.ErrLinkNotFound):
			return "no link"
		case errors.As(err, &errno):
			return errno.Error()
		}
		return "other: " + err.Error()
	}
	rule := host.Rule{Priority: 2000, Table: 101, Src: netip.PrefixFrom(a, 32)}
	route := host.Route{Table: 101, Dst: subnet, Dev: up, Src: a}
	list := func() string {
		rs, err := n.RouteList(101)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(len(rs))
	}
	out := []string{
		res(n.RouteAdd(route)),
		res(n.RouteAdd(route)),
		res(n.RouteAdd(host.Route{Table: 101, Dst: netip.MustParsePrefix("10.9.2.0/24"), Dev: down})),
		res(n.RouteAdd(host.Route{Table: 102, Dst: subnet, Dev: up, Src: netip.MustParseAddr("10.9.9.9")})),
		res(n.RouteAdd(host.Route{Table: 102, Dst: subnet, Dev: "nope0"})),
		res(n.RuleAdd(rule)),
		res(n.RuleAdd(rule)),
		res(n.RuleDel(host.Rule{Priority: 2001, Table: 101, Src: rule.Src})),
		res(n.RouteDel(host.Route{Table: 101, Dst: netip.MustParsePrefix("10.9.3.0/24"), Dev: up})),
		res(n.RuleDel(rule)),
		"routes " + list(),
	}
	// The preferred source goes: the route goes with it.
	if err := n.AddrDel(up, netip.PrefixFrom(a, 24)); err != nil {
		t.Fatal(err)
	}
	out = append(out, "after the address: routes "+list())
	if err := n.AddrAdd(up, netip.PrefixFrom(a, 24)); err != nil {
		t.Fatal(err)
	}
	out = append(out, res(n.RouteAdd(route)))
	if err := n.LinkSetUp(up, false); err != nil {
		t.Fatal(err)
	}
	return append(out, "after the link went down: routes "+list())
}

// TestSimRouterIsTheKernel: the simulator's rules and routes answer as
// the real kernel does (in a namespace of the test's own), errno for
// errno, and drop the routes the kernel drops.
func TestSimRouterIsTheKernel(t *testing.T) {
	want := []string{"ok", "file exists", "network is down", "invalid argument", "no link", "ok", "file exists",
		"no such file or directory", "no such process", "ok", "routes 1", "after the address: routes 0", "ok", "after the link went down: routes 0"}

	dir := simtest.Dir(t, "cx5-roce", func(st *sim.State) {
		st.Netdev("ens1f0np0").Up = true
		st.Netdev("ens1f0np0").Addrs = []string{"10.9.1.1/24"}
		st.Netdev("ens1f1np1").Up = false
	})
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Host()
	if err != nil {
		t.Fatal(err)
	}
	simGot := routerSteps(t, h.Net, "ens1f0np0", "ens1f1np1")

	l := netns.New(t)
	l.IP(t, "link", "set", netns.Veth0, "up")
	l.IP(t, "addr", "add", "10.9.1.1/24", "dev", netns.Veth0)
	kernelGot := routerSteps(t, l.Host.Net, netns.Veth0, netns.Veth1)

	for i := range want {
		if kernelGot[i] != want[i] || simGot[i] != want[i] {
			t.Errorf("step %d: kernel %q, simulator %q, want %q", i, kernelGot[i], simGot[i], want[i])
		}
	}
}
