package sim

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/host"
)

// probeHost is a vm-soft host with Soft-RoCE rxe0 on enp1s0 (its address
// 192.168.21.1/24 added), the management default route through it, and
// a second netdev ens9 (198.51.100.2/24) that is down.
func probeHost(t *testing.T) *Sim {
	t.Helper()
	st, err := NewState("vm-soft", "node1", 0)
	if err != nil {
		t.Fatal(err)
	}
	nd := st.Netdev("enp1s0")
	nd.Addrs = append(nd.Addrs, "192.168.21.1/24")
	st.Netdevs = append(st.Netdevs, &Netdev{Name: "ens9", Kind: "virtio", MTU: 1500, MAC: "52:54:00:12:34:57", Addrs: []string{"198.51.100.2/24"}})
	st.Modules = append(st.Modules, "rdma_rxe")
	st.Devices = append(st.Devices, &Device{Name: "rxe0", Driver: "rxe", NodeGUID: rxeGUID(nd.MAC), Parent: "enp1s0",
		Ports: []*Port{{Num: 1, LinkLayer: "Ethernet", State: "ACTIVE", PhysState: "LinkUp"}}})
	s, err := Create(t.TempDir(), st)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func runProbeTool(t *testing.T, s *Sim, ctx context.Context, args ...string) (string, string, int) {
	t.Helper()
	res, err := s.RunTool(ctx, args)
	var xe *host.ExitError
	if errors.As(err, &xe) {
		return string(xe.Stdout), string(xe.Stderr), xe.Code
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(res.Stdout), string(res.Stderr), 0
}

// TestSimulatedFabric: what the emulated probe tools answer, by where the
// address is. The formats themselves are checked against real captures
// in internal/testlab/simcheck.
func TestSimulatedFabric(t *testing.T) {
	s := probeHost(t)
	ctx := context.Background()
	cases := []struct {
		args []string
		code int
		want string // in stdout+stderr
	}{
		// The host's own address, and a peer on its subnet.
		{[]string{"ping", "-n", "-c", "2", "-w", "5", "--", "192.168.21.1"}, 0, "2 packets transmitted, 2 received, 0% packet loss"},
		{[]string{"ping", "-n", "-c", "3", "-w", "5", "-I", "enp1s0", "--", "192.168.21.7"}, 0, "PING 192.168.21.7 (192.168.21.7) from 192.168.21.1 enp1s0: 56(84) bytes of data.\n"},
		// Beyond every subnet: the default route's gateway answers nothing.
		{[]string{"ping", "-n", "-c", "1", "-w", "2", "--", "203.0.113.5"}, 1, "2 packets transmitted, 0 received, 100% packet loss, time 1003ms\n\n"},
		// A netdev that is down has no route; bound to another one, none.
		{[]string{"ping", "-n", "-c", "1", "-w", "1", "-I", "ens9", "--", "198.51.100.7"}, 2, "ping: connect: Network is unreachable\n"},
		{[]string{"ping", "-n", "-c", "1", "-I", "ens10", "--", "192.168.21.7"}, 2, "ping: SO_BINDTODEVICE ens10: No such device\n"},
		{[]string{"ping", "-n", "-c", "1", "--", "node2"}, 2, "ping: node2: Name or service not known\n"},
		{[]string{"ping", "-x"}, 2, "ping: invalid option -- 'x'\n"},
		{[]string{"ping", "-c"}, 2, "ping: option requires an argument -- 'c'\n"},
		{[]string{"ping", "-n", "192.168.21.7"}, 1, "ping: usage error: Destination address required\n"},
		// rping: a peer on the RDMA netdev's subnet; one beyond it.
		{[]string{"rping", "-c", "-a", "192.168.21.7", "-p", "7174", "-C", "2", "-v"}, 0, "ping data: rdma-ping-1: BCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrs\nclient DISCONNECT EVENT...\n"},
		{[]string{"rping", "-c", "-a", "203.0.113.5", "-p", "7174", "-C", "2", "-v"}, 255, "cma event RDMA_CM_EVENT_UNREACHABLE, error -110\n"},
		{[]string{"rping", "-c", "-a", "node2", "-C", "2"}, 255, "getaddrinfo failed (Name or service not known) - invalid hostname or IP address\n"},
		{[]string{"rping", "-c", "-a", "192.168.21.7", "-C", "x"}, 22, "Invalid count x\n"},
		// ibv_rc_pingpong: the peer's GID is its IPv4 address.
		{[]string{"ibv_rc_pingpong", "-d", "rxe0", "-i", "1", "-n", "3", "-p", "18515", "-g", "1", "192.168.21.7"}, 0, "  remote address: LID 0x0000, QPN 0x000014, PSN 0x9b51d0, GID ::ffff:192.168.21.7\n24576 bytes in 0.00 seconds = 5242.88 Mbit/sec\n3 iters in 0.00 seconds = 12.50 usec/iter\n"},
		{[]string{"ibv_rc_pingpong", "-d", "rxe0", "-g", "1", "203.0.113.5"}, 1, "Couldn't read/write remote address\n"},
		{[]string{"ibv_rc_pingpong", "-d", "mlx5_0", "192.168.21.7"}, 1, "IB device mlx5_0 not found\n"},
		{[]string{"ibv_rc_pingpong", "-d", "rxe0", "-i", "2", "192.168.21.7"}, 1, "Couldn't get port info\n"},
		{[]string{"ibv_rc_pingpong", "-d", "rxe0", "-g", "16", "192.168.21.7"}, 1, "can't read sgid of index 16\n"},
	}
	for _, c := range cases {
		out, errs, code := runProbeTool(t, s, ctx, c.args...)
		if code != c.code || !strings.Contains(out+errs, c.want) {
			t.Errorf("%s: exit %d (want %d)\n%s%s\nwant %q", strings.Join(c.args, " "), code, c.code, out, errs, c.want)
		}
	}

	// A port that is not ACTIVE reaches nobody.
	if err := s.mutate(false, func(st *State) error { st.Device("rxe0").Ports[0].State = "DOWN"; return nil }); err != nil {
		t.Fatal(err)
	}
	if out, _, code := runProbeTool(t, s, ctx, "ping", "-n", "-c", "3", "-w", "4", "--", "192.168.21.7"); code != 1 || !strings.Contains(out, "4 packets transmitted, 0 received, 100% packet loss") {
		t.Errorf("ping through a port that is down: exit %d\n%s", code, out)
	}
}

// TestSimulatedServers: rping -s and an ibv_rc_pingpong server serve
// until they are stopped; without an RDMA device rping cannot start.
func TestSimulatedServers(t *testing.T) {
	s := probeHost(t)
	for _, args := range [][]string{
		{"rping", "-s", "-a", "192.168.21.1", "-p", "7174", "-P"},
		{"ibv_rc_pingpong", "-d", "rxe0", "-i", "1", "-n", "3", "-p", "18515", "-g", "1"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_, err := s.RunTool(ctx, args)
		cancel()
		var xe *host.ExitError
		if !errors.As(err, &xe) || !errors.Is(xe.Err, host.ErrTimeout) {
			t.Errorf("%s: %v, want it to serve until stopped", strings.Join(args, " "), err)
		}
	}
	if err := s.mutate(false, func(st *State) error { st.Devices = nil; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := runProbeTool(t, s, context.Background(), "rping", "-s", "-a", "192.168.21.1", "-P"); code != 19 || errs != "No RDMA devices were detected\n" {
		t.Errorf("rping -s without a device: exit %d %q", code, errs)
	}
}
