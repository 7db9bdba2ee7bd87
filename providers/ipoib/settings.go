package ipoib

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/providers/ipoib/nmcli"
)

// The profile as NetworkManager's D-Bus API types it (a{sa{sv}}), from
// and to the provider's nmcli.Profile, whose property names and value
// forms are the plan's language. NetworkManager's GetSettings leaves out
// properties at their default values; the D-Bus types are those of the
// settings' documentation (nm-settings-dbus(5)): connection.autoconnect
// b, infiniband.mtu u, infiniband.p-key i, ipv4.address-data aa{sv},
// ipv4.dns au (network byte order), ipv6.dns aay.

// newSettings is the profile p (normalized) as AddConnection2 takes it:
// its name, type infiniband, and every managed property. Properties at
// NetworkManager's defaults are left out, as nmcli leaves them out, so the
// keyfile NetworkManager writes is the one `nmcli connection add` makes.
func newSettings(p nmcli.Profile) (host.NMSettings, error) {
	s := host.NMSettings{}
	s.Set("connection", "id", p.Name)
	s.Set("connection", "type", "infiniband")
	for _, set := range nmcli.Settings(p) {
		if set.Value == "" || set.Name == "connection.autoconnect" && set.Value == "yes" ||
			set.Name == "infiniband.mtu" && set.Value == "auto" || set.Name == "infiniband.p-key" && set.Value == "default" {
			continue
		}
		if err := setProperty(s, set.Name, set.Value); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// setProperty sets one managed property from the plan's form of its
// value (nmcli.Settings); "" clears it.
func setProperty(s host.NMSettings, name, value string) error {
	setting, prop, _ := strings.Cut(name, ".")
	str := func() {
		if value == "" {
			s.Unset(setting, prop)
		} else {
			s.Set(setting, prop, value)
		}
	}
	switch name {
	case "connection.interface-name", "infiniband.parent", "ipv4.gateway", "ipv6.gateway":
		str()
	case "infiniband.transport-mode", "ipv4.method", "ipv6.method":
		s.Set(setting, prop, value)
	case "connection.autoconnect":
		s.Set(setting, prop, value != "no")
	case "infiniband.mtu":
		mtu := 0
		if value != "auto" && value != "" {
			v, err := strconv.Atoi(value)
			if err != nil || v < 0 {
				return fmt.Errorf("infiniband.mtu %q: not a number", value)
			}
			mtu = v
		}
		s.Set(setting, prop, uint32(mtu))
	case "infiniband.p-key":
		pk, err := nmcli.ParsePKey(value)
		if err != nil {
			return err
		}
		s.Set(setting, prop, int32(pk))
	case "ipv4.addresses", "ipv6.addresses":
		var addrs []netip.Prefix
		for _, a := range nmcli.SplitList(value) {
			pfx, err := netip.ParsePrefix(a)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			addrs = append(addrs, pfx)
		}
		s.SetAddresses(setting, addrs)
	case "ipv4.dns", "ipv6.dns":
		s.Unset(setting, "dns-data")
		var v4 []uint32
		var v6 [][]byte
		for _, d := range nmcli.SplitList(value) {
			a, err := netip.ParseAddr(d)
			if err != nil || a.Is4() != (setting == "ipv4") {
				return fmt.Errorf("%s: invalid DNS server %q", name, d)
			}
			if a.Is4() {
				b := a.As4()
				v4 = append(v4, binary.NativeEndian.Uint32(b[:]))
			} else {
				b := a.As16()
				v6 = append(v6, b[:])
			}
		}
		if setting == "ipv4" {
			s.Set(setting, prop, append([]uint32{}, v4...))
		} else {
			s.Set(setting, prop, append([][]byte{}, v6...))
		}
	default:
		return fmt.Errorf("rdmaform does not manage the NetworkManager property %s", name)
	}
	return nil
}

// profileOf reads a profile of type infiniband from its settings; false
// for another type.
func profileOf(c host.NMConnection) (nmcli.Profile, bool) {
	s := c.Settings
	if s.String("connection", "type") != "infiniband" {
		return nmcli.Profile{}, false
	}
	p := nmcli.Profile{
		Name:          s.String("connection", "id"),
		UUID:          c.UUID(),
		InterfaceName: s.String("connection", "interface-name"),
		Parent:        s.String("infiniband", "parent"),
		Mode:          nmcli.TransportMode(s.String("infiniband", "transport-mode")),
		PKey:          nmcli.PKeyDefault,
		Active:        c.Active != 0,
		Device:        c.Device,
	}
	if v, ok := s.Value("connection", "autoconnect"); ok {
		b, _ := v.(bool)
		p.NoAutoconnect = !b
	}
	if v, ok := s.Value("infiniband", "mtu"); ok {
		mtu, _ := v.(uint32)
		p.MTU = int(mtu)
	}
	if v, ok := s.Value("infiniband", "p-key"); ok {
		pk, _ := v.(int32)
		p.PKey = int(pk)
	}
	p.IPv4 = ipOf(s, "ipv4")
	p.IPv6 = ipOf(s, "ipv6")
	if !p.Active {
		p.Device = ""
	}
	return p, true
}

// ipOf reads ipv4.* or ipv6.*: addresses from address-data (the
// deprecated addresses form when only it is there), DNS servers from
// their binary forms.
func ipOf(s host.NMSettings, fam string) nmcli.IPConfig {
	c := nmcli.IPConfig{Method: nmcli.Method(s.String(fam, "method")), Gateway: s.String(fam, "gateway")}
	for _, a := range s.Addresses(fam) {
		c.Addresses = append(c.Addresses, a.String())
	}
	if v, ok := s.Value(fam, "dns"); ok {
		switch d := v.(type) {
		case []uint32:
			for _, u := range d {
				var b [4]byte
				binary.NativeEndian.PutUint32(b[:], u)
				c.DNS = append(c.DNS, netip.AddrFrom4(b).String())
			}
		case [][]byte:
			for _, b := range d {
				if a, ok := netip.AddrFromSlice(b); ok {
					c.DNS = append(c.DNS, a.String())
				}
			}
		}
	}
	return c
}
