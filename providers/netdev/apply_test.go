package netdev

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// lateNet is a network door whose one link appears after a number of
// lookups (udev still naming it), and then takes an MTU.
type lateNet struct {
	host.Net
	name    string
	missing int // lookups that fail before the link is there
	lookups int
	mtu     int
}

// errNoLink is what netlink says of a link that is not there.
var errNoLink = errors.New("Link not found")

func (n *lateNet) LinkByName(name string) (host.Link, error) {
	n.lookups++
	if name != n.name || n.lookups <= n.missing {
		return host.Link{}, errNoLink
	}
	return host.Link{Name: name, MTU: 1500, AdminUp: true}, nil
}

func (n *lateNet) LinkSetMTU(name string, mtu int) error {
	n.mtu = mtu
	return nil
}

// TestMakeWaitsForAppearingNetdev: a netdev an earlier change makes is
// waited for (polled) up to appearWait, and one that does not come in time
// fails naming the changes it waited for; a netdev the plan does not make
// is not waited for.
func TestMakeWaitsForAppearingNetdev(t *testing.T) {
	defer func(d time.Duration) { appearWait = d }(appearWait)
	appearWait = 2 * time.Second
	mtu := 9000
	cause := plan.Addr("mlx4_port", "0000:81:00.0/1")
	c := &plan.Change{Address: Address("ens2"), DependsOn: []plan.Address{cause}}

	n := &lateNet{name: "ens2", missing: 3}
	if err := (&Provider{}).Make(context.Background(), &host.Host{Net: n}, c, &payload{name: "ens2", mtu: &mtu, appears: true}); err != nil {
		t.Fatalf("netdev appearing on the 4th lookup: %v", err)
	}
	if n.mtu != 9000 || n.lookups < 4 {
		t.Errorf("mtu %d after %d lookups, want 9000 after at least 4", n.mtu, n.lookups)
	}

	appearWait = 300 * time.Millisecond
	n = &lateNet{name: "ens2", missing: 1 << 30}
	err := (&Provider{}).Make(context.Background(), &host.Host{Net: n}, c, &payload{name: "ens2", mtu: &mtu, appears: true})
	if err == nil || !strings.Contains(err.Error(), "interface ens2 did not appear within 300ms after mlx4_port[0000:81:00.0/1]") || !errors.Is(err, errNoLink) {
		t.Errorf("netdev that never appears: %v", err)
	}
	if n.mtu != 0 {
		t.Errorf("an MTU was set on a netdev that is not there")
	}

	n = &lateNet{name: "ens2", missing: 1}
	if err := (&Provider{}).Make(context.Background(), &host.Host{Net: n}, &plan.Change{Address: Address("ens2")}, &payload{name: "ens2", mtu: &mtu}); err == nil || n.lookups != 1 {
		t.Errorf("netdev the plan does not make: err %v after %d lookups, want an error after one", err, n.lookups)
	}
}
