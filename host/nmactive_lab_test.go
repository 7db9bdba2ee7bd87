package host

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/internal/testlab/nmlab"
)

// ethProfile is an ethernet profile on ifname, not autoconnected, IPv6
// off; set adds the IPv4 part.
func ethProfile(name, ifname string, set func(NMSettings)) NMSettings {
	s := NMSettings{}
	s.Set("connection", "id", name)
	s.Set("connection", "type", "802-3-ethernet")
	s.Set("connection", "interface-name", ifname)
	s.Set("connection", "autoconnect", false)
	s.Set("ipv6", "method", "disabled")
	set(s)
	return s
}

// profileNamed is the profile of that connection.id in Connections.
func profileNamed(t *testing.T, nm NetworkManager, id string) NMConnection {
	t.Helper()
	cs, err := nm.Connections(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Settings.String("connection", "id") == id {
			return c
		}
	}
	t.Fatalf("no profile %s among %d", id, len(cs))
	return NMConnection{}
}

// TestNMActivationOnVeth: the D-Bus client against a real NetworkManager
// 1.42 (the lab, its own namespace and bus) on a veth pair, which the lab
// can really activate (it has no IPoIB device): an activation waits for
// the active connection and returns nil; Connections then reads it
// activated on its device; a deactivation finds the profile's active
// connection and ends it (Connections reads it inactive, and a second
// deactivation is ConnectionNotActive); an activation that starts and
// then fails (DHCP with nobody answering, IPv4 required) is an error
// with NetworkManager's reason.
func TestNMActivationOnVeth(t *testing.T) {
	ctx := context.Background()
	lab := nmlab.Start(t, nmlab.WithVeth())
	nm := NewNetworkManager(lab.GuardedEnv())
	a, b := lab.Veth()

	up, err := nm.AddConnection(ctx, ethProfile("rf-up", a, func(s NMSettings) {
		s.Set("ipv4", "method", "manual")
		s.SetAddresses("ipv4", []netip.Prefix{netip.MustParsePrefix("198.51.100.1/24")})
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c := profileNamed(t, nm, "rf-up"); c.Active != 0 || c.Device != "" {
		t.Fatalf("before the activation: active %d on %q, want none", c.Active, c.Device)
	}
	if err := nm.ActivateConnection(ctx, up); err != nil {
		t.Fatalf("ActivateConnection: %v", err)
	}
	if c := profileNamed(t, nm, "rf-up"); c.Active != NMActiveActivated || c.Device != a {
		t.Fatalf("after the activation: active %d on %q, want %d on %s", c.Active, c.Device, NMActiveActivated, a)
	}
	if r, err := lab.Run(ctx, []string{"ip", "-o", "-4", "addr", "show", "dev", a}); err != nil || !strings.Contains(string(r.Stdout), "198.51.100.1/24") {
		t.Fatalf("the address is not on %s: %v %s%s", a, err, r.Stdout, r.Stderr)
	}

	if err := nm.DeactivateConnection(ctx, up); err != nil {
		t.Fatalf("DeactivateConnection: %v", err)
	}
	deadline := time.Now().Add(time.Minute)
	for c := profileNamed(t, nm, "rf-up"); c.Active != 0; c = profileNamed(t, nm, "rf-up") {
		if c.Active != NMActiveDeactivating || time.Now().After(deadline) {
			t.Fatalf("after the deactivation: active %d on %q, want it ending", c.Active, c.Device)
		}
		time.Sleep(100 * time.Millisecond)
	}
	err = nm.DeactivateConnection(ctx, up)
	if !errors.Is(err, &NMError{Name: NMErrConnectionNotActive}) {
		t.Fatalf("a second DeactivateConnection: %v, want %s", err, NMErrConnectionNotActive)
	}

	fails, err := nm.AddConnection(ctx, ethProfile("rf-dhcp", b, func(s NMSettings) {
		s.Set("ipv4", "method", "auto")
		s.Set("ipv4", "dhcp-timeout", int32(2))
		s.Set("ipv4", "may-fail", false)
	}))
	if err != nil {
		t.Fatal(err)
	}
	err = nm.ActivateConnection(ctx, fails)
	var ne *NMError
	if !errors.As(err, &ne) || ne.Name != NMErrActivationFailed || !strings.HasPrefix(ne.Message, "Connection activation failed: ") || strings.Contains(ne.Message, "reason ") {
		t.Fatalf("ActivateConnection of a profile whose DHCP nobody answers: %v; want %s with NetworkManager's reason", err, NMErrActivationFailed)
	}
	t.Logf("the failed activation: %v", err)
	if c := profileNamed(t, nm, "rf-dhcp"); c.Active != 0 {
		t.Fatalf("after the failed activation: active %d on %q, want none", c.Active, c.Device)
	}
}

// TestNMConnectionsSkipsADeletedProfile: a profile deleted between
// Connections' two rounds (listed, then gone when its settings are
// read) is left out; the others are read.
func TestNMConnectionsSkipsADeletedProfile(t *testing.T) {
	ctx := context.Background()
	lab := nmlab.Start(t)
	nm := NewNetworkManager(lab.GuardedEnv())
	var gone string
	for _, id := range []string{"rf-stays", "rf-goes"} {
		u, err := nm.AddConnection(ctx, ethProfile(id, lab.Prefix()+"0", func(s NMSettings) { s.Set("ipv4", "method", "disabled") }))
		if err != nil {
			t.Fatal(err)
		}
		gone = u
	}
	deleted := false
	nmBetweenRounds = func() {
		nmBetweenRounds = nil
		if r := lab.Nmcli("connection", "delete", "uuid", gone); r.Exit != 0 {
			t.Errorf("nmcli connection delete: exit %d: %s", r.Exit, r.Stderr)
			return
		}
		deleted = true
	}
	t.Cleanup(func() { nmBetweenRounds = nil })
	cs, err := nm.Connections(ctx)
	if err != nil {
		t.Fatalf("Connections with a profile deleted between the rounds: %v", err)
	}
	if !deleted {
		t.Fatal("the hook did not run")
	}
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.Settings.String("connection", "id"))
	}
	if len(ids) != 1 || ids[0] != "rf-stays" {
		t.Fatalf("profiles read: %v, want [rf-stays]", ids)
	}
}
