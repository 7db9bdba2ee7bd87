package host

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOfflineNet: on a tree that is not a running host, links and RDMA
// links are read from the tree's sysfs as netlink would give them, and
// every change, and every read sysfs cannot answer, fails with an
// *OfflineError that is ErrNoNetlink.
func TestOfflineNet(t *testing.T) {
	dir := t.TempDir()
	write := func(p, v string) {
		t.Helper()
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sys/class/net/ib0/type", "32")
	write("sys/class/net/ib0/mtu", "2044")
	write("sys/class/net/ib0/flags", "0x1003")
	write("sys/class/net/ib0/operstate", "up")
	write("sys/class/net/ib0/ifindex", "4")
	write("sys/class/net/enp1s0/type", "1")
	write("sys/class/net/enp1s0/mtu", "1500")
	write("sys/class/net/enp1s0/flags", "0x1002")
	write("sys/class/net/enp1s0/operstate", "down")
	write("sys/class/net/enp1s0/address", "52:54:00:12:34:56")
	write("sys/class/net/enp1s0/device/vendor", "0x1af4")
	write("sys/class/infiniband/rxe0/parent", "enp1s0")
	write("sys/class/infiniband/mlx5_0/node_type", "1: CA")
	fsys, err := NewRootFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := &OfflineNet{FS: fsys}

	for _, want := range []Link{
		{Name: "ib0", Index: 4, MTU: 2044, AdminUp: true, OperState: "up", Type: "ipoib"},
		{Name: "enp1s0", MTU: 1500, AdminUp: false, OperState: "down", Type: "device", HWAddr: "52:54:00:12:34:56"},
	} {
		got, err := n.LinkByName(want.Name)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("LinkByName(%s) (-want +got):\n%s", want.Name, diff)
		}
	}
	if _, err := n.LinkByName("eth9"); !errors.Is(err, ErrLinkNotFound) {
		t.Errorf("a missing netdev: %v, want ErrLinkNotFound", err)
	}
	if _, err := n.LinkByName("../ib0"); err == nil || errors.Is(err, ErrLinkNotFound) {
		t.Errorf("a name with a slash: %v, want a refusal", err)
	}
	links, err := n.RdmaLinkList()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]RdmaLink{{Name: "mlx5_0"}, {Name: "rxe0", Netdev: "enp1s0"}}, links); diff != "" {
		t.Errorf("RdmaLinkList (-want +got):\n%s", diff)
	}

	p := netip.MustParsePrefix("192.0.2.1/24")
	_, addrErr := n.AddrList("enp1s0")
	_, ruleErr := n.RuleList()
	_, routeErr := n.RouteList(101)
	rule := Rule{Priority: 2000, Table: 101, Src: netip.MustParsePrefix("192.0.2.1/32")}
	route := Route{Table: 101, Dst: netip.MustParsePrefix("192.0.2.0/24"), Dev: "enp1s0", Src: netip.MustParseAddr("192.0.2.1")}
	for _, c := range []struct {
		err error
		op  string
	}{
		{addrErr, "ip addr show dev enp1s0"},
		{n.LinkSetUp("enp1s0", true), "ip link set enp1s0 up"},
		{n.LinkSetMTU("enp1s0", 9000), "ip link set enp1s0 mtu 9000"},
		{n.AddrAdd("enp1s0", p), "ip addr add 192.0.2.1/24 dev enp1s0"},
		{n.AddrDel("enp1s0", p), "ip addr del 192.0.2.1/24 dev enp1s0"},
		{n.RdmaLinkAdd("rxe1", "enp1s0"), "rdma link add rxe1 type rxe netdev enp1s0"},
		{n.RdmaLinkDel("rxe0"), "rdma link delete rxe0"},
		{n.LinkSetVF("enp1s0", 2, VFConfig{}), "ip link set dev enp1s0 vf 2"},
		{ruleErr, "ip -4 rule show"},
		{routeErr, "ip -4 route show table 101"},
		{n.RuleAdd(rule), "ip -4 rule add priority 2000 from 192.0.2.1/32 lookup 101"},
		{n.RuleDel(rule), "ip -4 rule del priority 2000 from 192.0.2.1/32 lookup 101"},
		{n.RouteAdd(route), "ip route add 192.0.2.0/24 dev enp1s0 src 192.0.2.1 table 101"},
		{n.RouteDel(route), "ip route del 192.0.2.0/24 dev enp1s0 src 192.0.2.1 table 101"},
	} {
		var oe *OfflineError
		if !errors.As(c.err, &oe) || oe.Op != c.op || !errors.Is(c.err, ErrNoNetlink) {
			t.Errorf("%s: %v, want an *OfflineError for it that is ErrNoNetlink", c.op, c.err)
		}
	}

	empty, err := NewRootFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&OfflineNet{FS: empty}).RdmaLinkList(); !errors.Is(err, ErrNoRDMA) {
		t.Errorf("a tree without /sys/class/infiniband: %v, want ErrNoRDMA", err)
	}
}
