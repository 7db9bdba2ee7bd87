//go:build kernlab

package guest

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// TestSimNamesNetnsMatchKernel runs one sequence of netns-mode switches
// and renames through host.Net on this kernel (netlink) and on the
// simulator, and compares every answer: the mode read back, and each
// error's errno. The kernel is the truth.
func TestSimNamesNetnsMatchKernel(t *testing.T) {
	run(t, "/sbin/modprobe", "rdma_rxe")
	leaveNoRxe(t, "knrxe9", strings.Repeat("r", 63))
	veth(t, "enp1s0", "enp1s0p")
	t.Cleanup(func() {
		_, _ = tryRun("/sbin/ip", "netns", "del", "knsy")
		_, _ = tryRun("/sbin/rdma", "system", "set", "netns", "shared")
		_, _ = tryRun("/sbin/ip", "link", "del", "knren")
	})
	s, sh := simtest.New(t, "vm-soft", 0, func(st *sim.State) {
		st.Netdevs = append(st.Netdevs, &sim.Netdev{Name: "enp1s0p", Kind: "veth", MTU: 1500, Up: true, MAC: "52:54:00:12:34:57"})
	})
	sides := []struct {
		name   string
		net    host.Net
		netns  func(add bool)
		answer []string
	}{{
		name: "kernel", net: host.NewNetlink(nil),
		netns: func(add bool) {
			if add {
				run(t, "/sbin/ip", "netns", "add", "knsy")
			} else {
				run(t, "/sbin/ip", "netns", "del", "knsy")
			}
		},
	}, {
		name: "simulator", net: sh.Net,
		netns: func(add bool) {
			var err error
			if add {
				err = s.AddNetns("knsy")
			} else {
				err = s.DelNetns("knsy")
			}
			if err != nil {
				t.Fatal(err)
			}
		},
	}}
	long := strings.Repeat("r", 63)
	for i := range sides {
		sd := &sides[i]
		n := sd.net
		say := func(what string, err error) {
			var errno syscall.Errno
			switch {
			case err == nil:
				sd.answer = append(sd.answer, what+": ok")
			case errors.As(err, &errno):
				sd.answer = append(sd.answer, fmt.Sprintf("%s: %s", what, errno.Error()))
			default:
				sd.answer = append(sd.answer, what+": "+err.Error())
			}
		}
		mode := func() {
			m, err := n.RdmaNetnsMode()
			say("mode "+m, err)
		}
		mode()
		say("set exclusive", n.RdmaSetNetnsMode("exclusive"))
		mode()
		sd.netns(true)
		say("set shared, a namespace", n.RdmaSetNetnsMode("shared"))
		say("set exclusive again, a namespace", n.RdmaSetNetnsMode("exclusive"))
		mode()
		sd.netns(false)
		// A deleted namespace counts until the kernel has torn it down
		// (cleanup_net runs later): the kernel answers EBUSY for a while.
		err := n.RdmaSetNetnsMode("shared")
		for i := 0; errors.Is(err, syscall.EBUSY) && i < 100; i++ {
			time.Sleep(50 * time.Millisecond)
			err = n.RdmaSetNetnsMode("shared")
		}
		say("set shared, once the namespace is gone", err)
		mode()

		say("rxe link", n.RdmaLinkAdd("knrxe9", "enp1s0"))
		say("rename to 63 bytes", n.RdmaDevSetName("knrxe9", long))
		say("rename to 64 bytes", n.RdmaDevSetName(long, long+"x"))
		links, err := n.RdmaLinkList()
		for _, l := range links {
			if strings.HasPrefix(l.Name, "rrr") {
				say(fmt.Sprintf("link %d bytes on %s", len(l.Name), l.Netdev), err)
			}
		}
		say("rename a missing device", n.RdmaDevSetName("knnone", "x"))
		say("rename an up netdev", n.LinkSetName("enp1s0", "knren"))
		say("down", n.LinkSetUp("enp1s0", false))
		say("rename to a name in use", n.LinkSetName("enp1s0", "enp1s0p"))
		say("rename", n.LinkSetName("enp1s0", "knren"))
		links, err = n.RdmaLinkList()
		for _, l := range links {
			if strings.HasPrefix(l.Name, "rrr") {
				say("rxe follows to "+l.Netdev, err)
			}
		}
		say("rename back", n.LinkSetName("knren", "enp1s0"))
		say("up", n.LinkSetUp("enp1s0", true))
		say("delete", n.RdmaLinkDel(long))
	}
	k, sm := strings.Join(sides[0].answer, "\n"), strings.Join(sides[1].answer, "\n")
	t.Logf("kernel:\n%s", k)
	if k != sm {
		t.Fatalf("the simulator answers otherwise.\nkernel:\n%s\nsimulator:\n%s", k, sm)
	}
}
