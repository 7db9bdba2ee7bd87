package host_test

import (
	"net/netip"
	"testing"

	"github.com/godbus/dbus/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
)

// TestSetAddressesReplacesTheDeprecatedForm: SetAddresses writes
// address-data (address and prefix, odd prefixes and IPv6 included) that
// Addresses reads back, and drops the deprecated addresses form a profile
// may carry, which the daemon would prefer over address-data
// (nm-settings-dbus(5)).
func TestSetAddressesReplacesTheDeprecatedForm(t *testing.T) {
	s := host.NMSettings{}
	s.Set("ipv4", "addresses", [][]uint32{{0x050200c0, 24, 0}})
	want4 := []netip.Prefix{netip.MustParsePrefix("192.0.2.5/25"), netip.MustParsePrefix("198.51.100.7/31")}
	s.SetAddresses("ipv4", want4)
	if _, ok := s.Get("ipv4", "addresses"); ok {
		t.Error("the deprecated ipv4.addresses is still set")
	}
	if diff := cmp.Diff(want4, s.Addresses("ipv4"), cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("ipv4 addresses (-want +got):\n%s", diff)
	}
	want6 := []netip.Prefix{netip.MustParsePrefix("2001:db8:1::1/63")}
	s.SetAddresses("ipv6", want6)
	if diff := cmp.Diff(want6, s.Addresses("ipv6"), cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("ipv6 addresses (-want +got):\n%s", diff)
	}
	v, _ := s.Get("ipv4", "address-data")
	data, _ := v.Value().([]map[string]dbus.Variant)
	if len(data) != 2 || data[0]["prefix"].Value() != uint32(25) || data[0]["address"].Value() != "192.0.2.5" {
		t.Errorf("address-data as NetworkManager reads it (aa{sv}: address s, prefix u): %v", data)
	}
}
