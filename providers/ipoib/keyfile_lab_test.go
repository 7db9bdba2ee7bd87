package ipoib

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/nmlab"
	"github.com/rdmaform/rdmaform/providers/ipoib/nmcli"
)

// keyfileProfiles cover every field the spec has: parent and P_Key
// (full and limited), transport mode, MTU (a value and the maximum),
// autoconnect, IPv4 and IPv6 addresses (one and several), gateways, DNS
// servers (one and several), and the disabled families of an entry
// without addresses.
var keyfileProfiles = []nmcli.Profile{
	{Name: "plain", InterfaceName: "ib0", PKey: nmcli.PKeyDefault},
	{Name: "child", InterfaceName: "ib0", Parent: "ib0", PKey: 0x8002, Mode: nmcli.Connected, MTU: 2000, NoAutoconnect: true,
		IPv4: nmcli.IPConfig{Addresses: []string{"192.0.2.1/24"}, Gateway: "192.0.2.254", DNS: []string{"192.0.2.253"}},
		IPv6: nmcli.IPConfig{Addresses: []string{"2001:db8:1::1/64"}, Gateway: "2001:db8:1::fe", DNS: []string{"2001:db8:1::53"}}},
	{Name: "limited", InterfaceName: "ib1", Parent: "ib1", PKey: 0x0002, MTU: 65520},
	{Name: "many", InterfaceName: "ib1", PKey: nmcli.PKeyDefault, Mode: nmcli.Datagram, MTU: 4092,
		IPv4: nmcli.IPConfig{Addresses: []string{"192.0.2.1/24", "198.51.100.7/25"}, DNS: []string{"192.0.2.53", "198.51.100.53"}},
		IPv6: nmcli.IPConfig{Addresses: []string{"2001:db8:1::1/64", "2001:db8:2::1/48"}, DNS: []string{"2001:db8::53", "2001:db8::54"}}},
}

// keyfileUUID is the UUID both paths give the profile, so that the
// keyfiles can be equal byte for byte.
const keyfileUUID = "0f4e9b8a-3c2d-4e1f-9a8b-7c6d5e4f3a2b"

func keyfile(t *testing.T, lab *nmlab.Lab, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(lab.KeyfileDir(), name+".nmconnection"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func labNmcli(t *testing.T, lab *nmlab.Lab, argv []string) {
	t.Helper()
	if r := lab.Nmcli(argv[1:]...); r.Exit != 0 {
		t.Fatalf("%q: exit %d: %s", argv, r.Exit, r.Stderr)
	}
}

// TestRealKeyfilesEqualNmcli: a profile added, and a profile modified,
// through NetworkManager's D-Bus API is saved to the very keyfile
// `nmcli connection add` and `nmcli connection modify` save, for every
// field the spec has, on a real NetworkManager.
func TestRealKeyfilesEqualNmcli(t *testing.T) {
	lab := nmlab.Start(t)
	nm := host.NewNetworkManager(lab.Env())
	ctx := context.Background()
	for _, p := range keyfileProfiles {
		p = p.Normalized()
		// nmcli, as the provider ran it before.
		labNmcli(t, lab, append(nmcli.AddArgs(p), "connection.uuid", keyfileUUID))
		want := keyfile(t, lab, p.Name)
		labNmcli(t, lab, nmcli.DeleteArgs(keyfileUUID))
		// D-Bus.
		s, err := newSettings(p)
		if err != nil {
			t.Fatal(err)
		}
		s.Set("connection", "uuid", keyfileUUID)
		if _, err := nm.AddConnection(ctx, s); err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		got := keyfile(t, lab, p.Name)
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s: keyfile of AddConnection2 (-nmcli +D-Bus):\n%s", p.Name, diff)
		}
		if err := nm.DeleteConnection(ctx, keyfileUUID); err != nil {
			t.Fatal(err)
		}
	}

	// Every change between two of the profiles above (renamed alike):
	// each field set, changed and cleared.
	for _, from := range keyfileProfiles {
		for _, to := range keyfileProfiles {
			if from.Name == to.Name {
				continue
			}
			label := from.Name + " -> " + to.Name
			from, to := from.Normalized(), to.Normalized()
			to.Name = from.Name
			settings := nmcli.Changed(to, from)
			labNmcli(t, lab, append(nmcli.AddArgs(from), "connection.uuid", keyfileUUID))
			labNmcli(t, lab, nmcli.ModifyArgs(keyfileUUID, settings))
			want := keyfile(t, lab, from.Name)
			labNmcli(t, lab, nmcli.DeleteArgs(keyfileUUID))

			labNmcli(t, lab, append(nmcli.AddArgs(from), "connection.uuid", keyfileUUID))
			err := nm.UpdateConnection(ctx, keyfileUUID, func(s host.NMSettings) {
				for _, set := range settings {
					if err := setProperty(s, set.Name, set.Value); err != nil {
						t.Error(err)
					}
				}
			})
			if err != nil {
				t.Fatalf("%s: %v", label, err)
			}
			got := keyfile(t, lab, from.Name)
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s: keyfile of Update2 (-nmcli +D-Bus):\n%s", label, diff)
			}
			labNmcli(t, lab, nmcli.DeleteArgs(keyfileUUID))
		}
	}
}
