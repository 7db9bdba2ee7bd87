package nmcli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// TransportMode is infiniband.transport-mode.
type TransportMode string

const (
	Datagram  TransportMode = "datagram"  // the default of `nmcli connection add type infiniband`
	Connected TransportMode = "connected" // IPoIB-CM; not on enhanced IPoIB (ConnectX-4 and later)
)

func (m TransportMode) String() string { return string(m) }

// Method is ipv4.method / ipv6.method.
type Method string

const (
	MethodAuto      Method = "auto"
	MethodManual    Method = "manual"
	MethodDisabled  Method = "disabled"
	MethodLinkLocal Method = "link-local"
	MethodShared    Method = "shared"
	MethodIgnore    Method = "ignore" // ipv6 only
	MethodDHCP      Method = "dhcp"   // ipv6 only
)

func (m Method) String() string { return string(m) }

// PKeyDefault is infiniband.p-key when the profile is for the parent
// interface itself (nmcli prints "default").
const PKeyDefault = -1

// PKeyFullMember is bit 15 of a P_Key: full membership of the partition.
const PKeyFullMember = 0x8000

// MaxMTU is the largest infiniband.mtu NetworkManager keeps (connected
// mode); larger values are silently lowered to it.
const MaxMTU = 65520

// IPConfig is the part of ipv4.* or ipv6.* rdmaform manages.
type IPConfig struct {
	Method    Method   // "" means: manual with addresses, disabled without
	Addresses []string // CIDR, primary first: ipv4.addresses
	Gateway   string   // ipv4.gateway
	DNS       []string // ipv4.dns
}

// Profile is one NetworkManager connection of type infiniband, as far as
// rdmaform manages it. Each field names the property it reads and writes.
type Profile struct {
	Name          string        // connection.id
	UUID          string        // connection.uuid; set by NetworkManager on add
	InterfaceName string        // connection.interface-name; derived for a P_Key child
	NoAutoconnect bool          // connection.autoconnect no (zero value: NetworkManager's default, yes)
	Parent        string        // infiniband.parent; only for a P_Key child
	PKey          int           // infiniband.p-key; PKeyDefault (-1) for no P_Key
	Mode          TransportMode // infiniband.transport-mode; "" means datagram
	MTU           int           // infiniband.mtu; 0 means auto
	IPv4          IPConfig
	IPv6          IPConfig
	Active        bool   // ACTIVE column of `nmcli connection show`; read only
	Device        string // DEVICE column when active; read only
}

// Normalized returns p as NetworkManager will store it, so a desired
// profile and a read one compare by meaning:
//
//   - a P_Key child (PKey >= 0) gets the full-membership bit set (0x0002
//     becomes 0x8002: older kernels set it anyway and named the child
//     ib0.8002, and rdmaform configures hosts as full members of their
//     partitions) and connection.interface-name PARENT.XXXX, the only name
//     NetworkManager accepts besides none, in 4 lowercase hex digits;
//   - a profile without a P_Key has no parent;
//   - Mode "" is datagram; MTU above 65520 is 65520, below 0 is auto;
//   - a family without a Method is manual when it has addresses and
//     disabled without: a declared interface never waits for DHCP or router
//     advertisements an InfiniBand fabric rarely has. Set Method to auto to
//     ask for them.
func (p Profile) Normalized() Profile {
	q := p
	if q.PKey < 0 {
		q.PKey = PKeyDefault
		q.Parent = ""
	} else {
		if q.Parent != "" {
			q.InterfaceName = ChildName(q.Parent, q.PKey)
		}
	}
	if q.Mode == "" {
		q.Mode = Datagram
	}
	q.MTU = min(max(q.MTU, 0), MaxMTU)
	q.IPv4 = q.IPv4.normalized()
	q.IPv6 = q.IPv6.normalized()
	return q
}

func (c IPConfig) normalized() IPConfig {
	if c.Method == "" {
		if len(c.Addresses) > 0 {
			c.Method = MethodManual
		} else {
			c.Method = MethodDisabled
		}
	}
	if len(c.Addresses) == 0 {
		c.Addresses = nil
	}
	if len(c.DNS) == 0 {
		c.DNS = nil
	}
	return c
}

// ValidPKey reports whether NetworkManager accepts pkey: -1, or
// 0x0001..0xffff except 0x8000 (the full-membership bit of nothing).
func ValidPKey(pkey int) bool {
	return pkey == PKeyDefault || (pkey > 0 && pkey <= 0xffff && pkey != PKeyFullMember)
}

// ChildName is the interface name of a P_Key child:
// PARENT.XXXX, the P_Key in four lowercase hex digits (ib0.8002).
func ChildName(parent string, pkey int) string {
	return fmt.Sprintf("%s.%04x", parent, pkey)
}

// FormatPKey prints a P_Key as nmcli does: "default" or 0x%04x.
func FormatPKey(pkey int) string {
	if pkey < 0 {
		return "default"
	}
	return fmt.Sprintf("0x%04x", pkey)
}

// ParsePKey reads "default", "0x8002" or "32770".
func ParsePKey(s string) (int, error) {
	if s == "" || s == "default" {
		return PKeyDefault, nil
	}
	v, err := strconv.ParseInt(s, 0, 32)
	if err != nil || v < -1 || v > 0xffff {
		return 0, fmt.Errorf("invalid P_Key %q", s)
	}
	return int(v), nil
}

// Setting is one property and its value on an nmcli command line.
type Setting struct {
	Name  string // full property name: infiniband.mtu
	Value string // as nmcli accepts it; "" clears the property
}

// Settings is every property rdmaform manages, for p normalized, in the
// order rdmaform writes them. Lists are joined with ",", which nmcli
// accepts for addresses and DNS servers alike.
func Settings(p Profile) []Setting {
	p = p.Normalized()
	mtu := "auto"
	if p.MTU > 0 {
		mtu = strconv.Itoa(p.MTU)
	}
	autoconnect := "yes"
	if p.NoAutoconnect {
		autoconnect = "no"
	}
	s := []Setting{
		{"connection.interface-name", p.InterfaceName},
		{"connection.autoconnect", autoconnect},
		{"infiniband.transport-mode", string(p.Mode)},
		{"infiniband.mtu", mtu},
		{"infiniband.parent", p.Parent},
		{"infiniband.p-key", FormatPKey(p.PKey)},
	}
	for _, f := range []struct {
		name string
		c    IPConfig
	}{{"ipv4", p.IPv4}, {"ipv6", p.IPv6}} {
		s = append(s,
			Setting{f.name + ".method", string(f.c.Method)},
			Setting{f.name + ".addresses", strings.Join(f.c.Addresses, ",")},
			Setting{f.name + ".gateway", f.c.Gateway},
			Setting{f.name + ".dns", strings.Join(f.c.DNS, ",")},
		)
	}
	return s
}

// Changed lists the settings of want that differ from have, both
// normalized, for `connection modify`. Addresses and DNS servers compare
// in order (the first address is the primary one).
func Changed(want, have Profile) []Setting {
	h := map[string]string{}
	for _, s := range Settings(have) {
		h[s.Name] = s.Value
	}
	var out []Setting
	for _, s := range Settings(want) {
		if h[s.Name] != s.Value {
			out = append(out, s)
		}
	}
	return out
}

// ProfileFields are the fields ShowArgs asks for, in order.
func ProfileFields() []string {
	return []string{
		"connection.id", "connection.uuid", "connection.type", "connection.interface-name", "connection.autoconnect",
		"infiniband.mtu", "infiniband.transport-mode", "infiniband.p-key", "infiniband.parent",
		"ipv4.method", "ipv4.addresses", "ipv4.gateway", "ipv4.dns",
		"ipv6.method", "ipv6.addresses", "ipv6.gateway", "ipv6.dns",
	}
}

// ProfileFromRecord reads one block of ShowArgs output.
func ProfileFromRecord(r Record) (Profile, error) {
	var p Profile
	get := func(f string) string { v, _ := r.Get(f); return v }
	p.Name = get("connection.id")
	p.UUID = get("connection.uuid")
	if p.UUID == "" {
		return p, fmt.Errorf("nmcli profile %q: no connection.uuid", p.Name)
	}
	if t, ok := r.Get("connection.type"); ok && t != "infiniband" {
		return p, fmt.Errorf("nmcli profile %s: type %q, not infiniband", p.UUID, t)
	}
	p.InterfaceName = get("connection.interface-name")
	p.NoAutoconnect = get("connection.autoconnect") == "no"
	switch m := get("infiniband.mtu"); m {
	case "", "auto":
	default:
		v, err := strconv.Atoi(m)
		if err != nil {
			return p, fmt.Errorf("nmcli profile %s: infiniband.mtu %q: %w", p.UUID, m, err)
		}
		p.MTU = v
	}
	p.Mode = TransportMode(get("infiniband.transport-mode"))
	pk, err := ParsePKey(get("infiniband.p-key"))
	if err != nil {
		return p, fmt.Errorf("nmcli profile %s: infiniband.p-key: %w", p.UUID, err)
	}
	p.PKey = pk
	p.Parent = get("infiniband.parent")
	for _, f := range []struct {
		name string
		c    *IPConfig
	}{{"ipv4", &p.IPv4}, {"ipv6", &p.IPv6}} {
		f.c.Method = Method(get(f.name + ".method"))
		f.c.Addresses = SplitList(get(f.name + ".addresses"))
		f.c.Gateway = get(f.name + ".gateway")
		f.c.DNS = SplitList(get(f.name + ".dns"))
	}
	if st, ok := r.Get("GENERAL.STATE"); ok && st != "" {
		p.Active = true
	}
	return p, nil
}

// ListEntry is one row of ListArgs output.
type ListEntry struct {
	Name, UUID, Type, Device string
	Active                   bool
	State                    string // activating, activated, deactivating or ""
}

// ParseList parses ListArgs output.
func ParseList(out []byte) ([]ListEntry, error) {
	rows, err := ParseTabular(out, len(ListFields()))
	if err != nil {
		return nil, err
	}
	entries := make([]ListEntry, 0, len(rows))
	for _, r := range rows {
		entries = append(entries, ListEntry{Name: r[0], UUID: r[1], Type: r[2], Device: r[3], Active: r[4] == "yes", State: r[5]})
	}
	return entries, nil
}

// ParseProfiles parses ShowArgs output into profiles, sorted by name then
// UUID.
func ParseProfiles(out []byte) ([]Profile, error) {
	recs, err := ParseMultiline(out)
	if err != nil {
		return nil, err
	}
	ps := make([]Profile, 0, len(recs))
	for _, r := range recs {
		p, err := ProfileFromRecord(r)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	sortProfiles(ps)
	return ps, nil
}

func sortProfiles(ps []Profile) {
	slices.SortFunc(ps, func(a, b Profile) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.UUID, b.UUID)
	})
}

// ParseAdded reads the UUID from `connection add` output:
// "Connection 'NAME' (UUID) successfully added." NetworkManager documents
// this line as stable for scripts. The name may itself contain " (", so the
// UUID is taken from the last parenthesis.
func ParseAdded(stdout []byte) (string, error) {
	s := strings.TrimSpace(string(stdout))
	const suffix = ") successfully added."
	if !strings.HasPrefix(s, "Connection '") || !strings.HasSuffix(s, suffix) {
		return "", fmt.Errorf("unexpected nmcli add output %q", s)
	}
	s = strings.TrimSuffix(s, suffix)
	i := strings.LastIndex(s, "(")
	if i < 0 || len(s)-i-1 != 36 {
		return "", fmt.Errorf("unexpected nmcli add output %q", stdout)
	}
	return s[i+1:], nil
}
