package host

import (
	"testing"

	"github.com/godbus/dbus/v5"
)

// managedAC is one active connection object as GetManagedObjects lists it
// (NetworkManager's D-Bus API, org.freedesktop.NetworkManager.Connection.Active:
// Connection o, State u, Devices ao), on the device objects devs.
func managedAC(profile string, state uint32, devs ...dbus.ObjectPath) map[string]map[string]dbus.Variant {
	return map[string]map[string]dbus.Variant{nmActiveIface: {
		"Connection": dbus.MakeVariant(dbus.ObjectPath(profile)),
		"State":      dbus.MakeVariant(state),
		"Devices":    dbus.MakeVariant(devs),
	}}
}

func managedDevice(iface string) map[string]map[string]dbus.Variant {
	return map[string]map[string]dbus.Variant{nmDeviceIface: {"Interface": dbus.MakeVariant(iface)}}
}

// TestActiveByProfile: each profile's active connection with its first
// device's interface; one that has ended (deactivated, still listed
// until NetworkManager's idle cleanup) is none, and of two for one
// profile (a reactivation) the further along wins, whatever the order of
// the objects.
func TestActiveByProfile(t *testing.T) {
	const s = "/org/freedesktop/NetworkManager/Settings/"
	const a = "/org/freedesktop/NetworkManager/ActiveConnection/"
	const d = "/org/freedesktop/NetworkManager/Devices/"
	managed := map[dbus.ObjectPath]map[string]map[string]dbus.Variant{
		d + "1": managedDevice("ib0"),
		d + "2": managedDevice("ib1"),
		d + "3": managedDevice("ib2"),
		a + "1": managedAC(s+"1", NMActiveActivated, d+"1"),
		a + "2": managedAC(s+"2", NMActiveDeactivated, d+"2"),
		a + "3": managedAC(s+"3", NMActiveDeactivating, d+"2"),
		a + "4": managedAC(s+"3", NMActiveActivating, d+"3"),
		a + "5": managedAC(s+"4", NMActiveDeactivated, d+"1"),
		a + "6": managedAC(s+"4", NMActiveDeactivating, d+"1"),
		a + "7": managedAC(s+"5", NMActiveActivating),
		a + "8": managedAC(s+"6", 0, d+"1"),
	}
	want := map[dbus.ObjectPath]NMConnection{
		s + "1": {Active: NMActiveActivated, Device: "ib0"},
		s + "3": {Active: NMActiveActivating, Device: "ib2"},
		s + "4": {Active: NMActiveDeactivating, Device: "ib0"},
		s + "5": {Active: NMActiveActivating},
	}
	for i := 0; i < 20; i++ { // map order varies from run to run
		got := activeByProfile(managed)
		if len(got) != len(want) {
			t.Fatalf("%d profiles active: %v, want %v", len(got), got, want)
		}
		for p, w := range want {
			if g, ok := got[p]; !ok || g.Active != w.Active || g.Device != w.Device {
				t.Fatalf("%s: %+v (listed: %t), want %+v", p, g, ok, w)
			}
		}
	}
}

// TestActiveByProfileReactivation: a reactivation lists two active
// connections of one profile; the further along wins (activated over
// activating over deactivating) in either order of the objects. Each map
// holds the two alone, so both orders come up within a few hundred
// rounds (Go starts each range at a random place; with more objects
// between the two, one order can stay rare).
func TestActiveByProfileReactivation(t *testing.T) {
	const s = "/org/freedesktop/NetworkManager/Settings/1"
	const a = "/org/freedesktop/NetworkManager/ActiveConnection/"
	const d = "/org/freedesktop/NetworkManager/Devices/"
	for _, tc := range []struct {
		win, lose uint32
	}{
		{NMActiveActivated, NMActiveActivating},
		{NMActiveActivated, NMActiveDeactivating},
		{NMActiveActivating, NMActiveDeactivating},
	} {
		managed := map[dbus.ObjectPath]map[string]map[string]dbus.Variant{
			d + "1": managedDevice("ib0"),
			d + "2": managedDevice("ib0.8001"),
			a + "1": managedAC(s, tc.lose, d+"1"),
			a + "2": managedAC(s, tc.win, d+"2"),
		}
		for i := 0; i < 500; i++ {
			got := activeByProfile(managed)[s]
			if got.Active != tc.win || got.Device != "ib0.8001" {
				t.Fatalf("states %d and %d of one profile, round %d: %+v, want state %d on ib0.8001", tc.win, tc.lose, i, got, tc.win)
			}
		}
	}
}

// TestActiveReason: the reasons NetworkManager 1.42 defines
// (NMActiveConnectionStateReason, 0 to 14) are worded as nmcli words
// them; the first number past the table is named by its number.
func TestActiveReason(t *testing.T) {
	for r, want := range map[uint32]string{
		0:  "Unknown reason",
		5:  "The IP config of the active connection was invalid",
		14: "The device disappeared",
		15: "reason 15",
		99: "reason 99",
	} {
		if got := activeReason(r); got != want {
			t.Errorf("reason %d: %q, want %q", r, got, want)
		}
	}
}
