package qos

import (
	"context"
	"strings"
	"testing"

	labneed "github.com/rdmaform/rdmaform/internal/testlab/need"
	"github.com/rdmaform/rdmaform/internal/testlab/netns"
	"github.com/rdmaform/rdmaform/schema"
)

// TestVethHasNoDCB runs the real dcb and ethtool on a veth of a private
// network namespace: the kernel answers "Operation not supported" (veth
// has no DCB and no pause operations), which is the plan's "no DCB
// support" finding, quoting the tool. A netdev that does not exist is an
// error, not a port without DCB.
func TestVethHasNoDCB(t *testing.T) {
	// The lab's runner is `ip netns exec`; the reads are dcb's and ethtool's.
	labneed.Tool(t, "ip", "apt-get install iproute2")
	labneed.Tool(t, "dcb", "apt-get install iproute2")
	labneed.Tool(t, "ethtool", "apt-get install ethtool")
	l := netns.New(t)
	h := *l.Host
	h.Runner = l.Runner()
	ctx := context.Background()
	sem := make(chan struct{}, MaxReads)

	p, err := readPort(ctx, &h, netns.Veth0, need{dcb: true, pause: true, ecn: true}, sem)
	if err != nil {
		t.Fatalf("reading %s: %v", netns.Veth0, err)
	}
	if p.NoDCB != "Attribute read: Operation not supported" {
		t.Errorf("NoDCB = %q, want dcb's own answer", p.NoDCB)
	}
	if p.NoPause != "netlink error: Operation not supported" {
		t.Errorf("NoPause = %q, want ethtool's own answer", p.NoPause)
	}
	if p.ECNTree {
		t.Errorf("a veth has an ECN tree")
	}

	off, pfc := false, []int{3}
	c := compare(wantOf(&schema.QoS{PFC: &pfc, Pause: &off, ECN: &pfc}), p)
	want := []string{
		`rfa0 has no DCB support: ` + "`dcb -j pfc show dev rfa0`" + ` answered "Attribute read: Operation not supported"`,
		`global pause of rfa0 cannot be read: ` + "`ethtool -a rfa0`" + ` answered "netlink error: Operation not supported"`,
		`rfa0 has no per-priority ECN tree`,
	}
	if len(c.problems) != len(want) || len(c.steps) != 0 {
		t.Fatalf("problems %q, steps %v; want %d problems and no step", c.problems, c.steps, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(c.problems[i], w) {
			t.Errorf("problem %d = %q, want it to start with %q", i, c.problems[i], w)
		}
	}

	// A pause-only spec on the same veth asks nothing of DCB.
	if c := compare(wantOf(&schema.QoS{Pause: &off}), p); len(c.problems) != 1 || strings.Contains(c.problems[0], "DCB") {
		t.Errorf("pause only: problems %q", c.problems)
	}

	_, err = readPort(ctx, &h, "rfa-none", need{dcb: true}, sem)
	if err == nil || !strings.Contains(err.Error(), "Attribute read: No such device") {
		t.Errorf("a missing netdev: err = %v, want dcb's \"No such device\"", err)
	}
}
