// Package nmemu emulates nmcli (NetworkManager 1.42) for infiniband
// connections on rdmaform's simulated host. Run takes an argument vector
// and a serializable State and prints exactly what the real nmcli prints
// for the commands rdmaform issues: success lines on stdout, "Error: ..."
// on stderr, and nmcli's exit codes. The real daemon is the reference: the
// tests run the same command sequence against it (internal/testlab/nmlab)
// and against this emulator and compare the output.
package nmemu

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// State is what the emulated NetworkManager knows. It round-trips through
// JSON so a simulated host directory can hold it.
type State struct {
	NotRunning bool      `json:"not_running,omitempty"` // nmcli finds no NetworkManager on the bus
	Profiles   []Profile `json:"profiles"`              // in creation order
	// Devices are the IPoIB netdevs of the simulated host. `connection up`
	// succeeds only on an existing device with the InfiniBand link layer.
	Devices []Device `json:"devices"`
	// Counters make UUIDs and D-Bus paths deterministic.
	LastUUID   int `json:"last_uuid"`
	LastActive int `json:"last_active"`
}

// Profile is one connection: its properties as nmcli prints them in terse
// mode ("auto", "default", "0x8002", "192.0.2.1/24, 192.0.2.2/24").
type Profile struct {
	Settings   map[string]string `json:"settings"`
	Active     bool              `json:"active,omitempty"`
	Device     string            `json:"device,omitempty"`      // when active
	ActivePath int               `json:"active_path,omitempty"` // ActiveConnection/N when active
}

// Device is a netdev NetworkManager manages.
type Device struct {
	Name      string `json:"name"`
	LinkLayer string `json:"link_layer"` // InfiniBand or Ethernet, as in sysfs ports/N/link_layer
}

func (p *Profile) id() string   { return p.Settings["connection.id"] }
func (p *Profile) uuid() string { return p.Settings["connection.uuid"] }

// out collects one run's output.
type out struct {
	stdout, stderr bytes.Buffer
	exit           int
}

func (o *out) errorf(exit int, format string, a ...any) {
	fmt.Fprintf(&o.stderr, "Error: "+format+"\n", a...)
	o.exit = exit
}

// Run emulates one nmcli run. args[0] is the program name ("nmcli"). State
// is changed in place as NetworkManager would change it. stdin is unused
// (rdmaform never feeds nmcli) and accepted for the simulator's runner.
func Run(args []string, state *State, stdin []byte) (stdout, stderr []byte, exit int) {
	var o out
	run(&o, args[1:], state)
	return o.stdout.Bytes(), o.stderr.Bytes(), o.exit
}

func run(o *out, args []string, st *State) {
	var terse bool
	var fields string
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-t", "--terse":
			terse = true
			args = args[1:]
		case "-f", "--fields":
			if len(args) < 2 {
				o.errorf(2, "option '%s' requires an argument.", args[0])
				return
			}
			fields, args = args[1], args[2:]
		default:
			o.errorf(2, "Option '%s' is unknown, try 'nmcli -help'.", args[0])
			return
		}
	}
	if st.NotRunning {
		o.errorf(8, "NetworkManager is not running.")
		return
	}
	if len(args) == 0 {
		unsupported(o, args)
		return
	}
	switch {
	case args[0] == "general" && len(args) == 1 && terse && fields == "RUNNING":
		o.stdout.WriteString("running\n")
	case args[0] == "connection" && len(args) >= 2:
		switch verb, rest := args[1], args[2:]; verb {
		case "show":
			if !terse {
				unsupported(o, args)
			} else if len(rest) == 0 {
				list(o, st, fields)
			} else {
				show(o, st, fields, rest)
			}
		case "add":
			add(o, st, rest)
		case "modify":
			modify(o, st, rest)
		case "up":
			up(o, st, rest)
		case "down":
			down(o, st, rest)
		case "delete":
			del(o, st, rest)
		default:
			unsupported(o, args)
		}
	default:
		unsupported(o, args)
	}
}

func unsupported(o *out, args []string) {
	o.errorf(2, "rdmaform's nmcli emulator does not support 'nmcli %s'.", strings.Join(args, " "))
}

// selector is one `[uuid|id] VALUE` of a command line.
type selector struct{ kind, value string }

func (s selector) String() string {
	if s.kind == "" {
		return "'" + s.value + "'"
	}
	return s.kind + " '" + s.value + "'"
}

func parseSelectors(args []string) []selector {
	var sels []selector
	for i := 0; i < len(args); i++ {
		if (args[i] == "uuid" || args[i] == "id") && i+1 < len(args) {
			sels = append(sels, selector{args[i], args[i+1]})
			i++
			continue
		}
		sels = append(sels, selector{"", args[i]})
	}
	return sels
}

// find returns the profiles a selector matches, in creation order.
func (st *State) find(s selector) []*Profile {
	var ps []*Profile
	for i := range st.Profiles {
		p := &st.Profiles[i]
		switch {
		case s.kind == "uuid" && p.uuid() == s.value,
			s.kind == "id" && p.id() == s.value,
			s.kind == "" && (p.uuid() == s.value || p.id() == s.value):
			ps = append(ps, p)
		}
	}
	return ps
}

// listColumns are the columns of `connection show` that rdmaform uses.
func listColumn(p *Profile, col string) (string, bool) {
	switch col {
	case "NAME":
		return p.id(), true
	case "UUID":
		return p.uuid(), true
	case "TYPE":
		return p.Settings["connection.type"], true
	case "DEVICE":
		return p.Device, true
	case "ACTIVE":
		if p.Active {
			return "yes", true
		}
		return "no", true
	case "STATE":
		if p.Active {
			return "activated", true
		}
		return "", true
	}
	return "", false
}

const listAllowed = "NAME,UUID,TYPE,TIMESTAMP,TIMESTAMP-REAL,AUTOCONNECT,AUTOCONNECT-PRIORITY,READONLY,DBUS-PATH,ACTIVE,DEVICE,STATE,ACTIVE-PATH,SLAVE,FILENAME"

// list prints `nmcli -t -f COLS connection show`: active profiles first,
// then by name (byte order), then creation order; tabular, escaped.
func list(o *out, st *State, fields string) {
	if fields == "" {
		fields = "NAME,UUID,TYPE,DEVICE"
	}
	cols := strings.Split(fields, ",")
	for _, c := range cols {
		if _, ok := listColumn(&Profile{Settings: map[string]string{}}, c); !ok {
			if strings.Contains(","+listAllowed+",", ","+c+",") {
				unsupported(o, []string{"-f", fields, "connection", "show"})
			} else {
				o.errorf(2, "invalid field '%s'; allowed fields: %s.", c, listAllowed)
			}
			return
		}
	}
	order := make([]int, len(st.Profiles))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		pa, pb := &st.Profiles[a], &st.Profiles[b]
		if pa.Active != pb.Active {
			if pa.Active {
				return -1
			}
			return 1
		}
		return strings.Compare(pa.id(), pb.id())
	})
	for _, i := range order {
		vals := make([]string, len(cols))
		for j, c := range cols {
			v, _ := listColumn(&st.Profiles[i], c)
			vals[j] = escape(v)
		}
		o.stdout.WriteString(strings.Join(vals, ":") + "\n")
	}
}

func escape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `:`, `\:`).Replace(s)
}

// show prints `nmcli -t -f FIELDS connection show SELECTORS`: one block per
// profile in selector order, blocks separated by an empty line, GENERAL.*
// fields only for active profiles, then one error line per selector that
// matched nothing (exit 10).
func show(o *out, st *State, fields string, args []string) {
	var cols []string
	if fields != "" {
		cols = strings.Split(fields, ",")
	}
	for _, c := range cols {
		if c != "GENERAL.STATE" && !knownProperty(c) {
			unsupported(o, []string{"-f", c, "connection", "show"})
			return
		}
	}
	if len(cols) == 0 {
		unsupported(o, []string{"connection", "show"})
		return
	}
	var seen []*Profile
	var missing []selector
	for _, s := range parseSelectors(args) {
		ps := st.find(s)
		if len(ps) == 0 {
			missing = append(missing, s)
		}
		for _, p := range ps {
			if !slices.Contains(seen, p) {
				seen = append(seen, p)
			}
		}
	}
	for i, p := range seen {
		if i > 0 {
			o.stdout.WriteString("\n")
		}
		for _, c := range cols {
			if c == "GENERAL.STATE" {
				if p.Active {
					o.stdout.WriteString("GENERAL.STATE:activated\n")
				}
				continue
			}
			v, set := p.Settings[c]
			if !set && strings.HasPrefix(c, "sriov.") {
				continue // a profile without an sriov setting prints no line for it
			}
			fmt.Fprintf(&o.stdout, "%s:%s\n", c, v)
		}
	}
	for _, s := range missing {
		o.errorf(10, "%s - no such connection profile.", s.value)
	}
}

// newInfiniband is a fresh `connection add type infiniband` profile.
func newInfiniband() map[string]string {
	return map[string]string{
		"connection.id": "", "connection.uuid": "", "connection.type": "infiniband",
		"connection.interface-name": "", "connection.autoconnect": "yes",
		"infiniband.mac-address": "", "infiniband.mtu": "auto", "infiniband.transport-mode": "datagram",
		"infiniband.p-key": "default", "infiniband.parent": "",
		"ipv4.method": "auto", "ipv4.addresses": "", "ipv4.gateway": "", "ipv4.dns": "",
		"ipv6.method": "auto", "ipv6.addresses": "", "ipv6.gateway": "", "ipv6.dns": "",
	}
}

func knownProperty(name string) bool {
	_, ok := newInfiniband()[name]
	return ok || name == "sriov.total-vfs"
}

// nextUUID derives a stable, well-formed version-4 UUID from a counter.
func (st *State) nextUUID() string {
	st.LastUUID++
	return fmt.Sprintf("5eed0000-0000-4000-8000-%012x", st.LastUUID)
}

func add(o *out, st *State, args []string) {
	if len(args) < 2 || args[0] != "type" || args[1] != "infiniband" {
		unsupported(o, append([]string{"connection", "add"}, args...))
		return
	}
	s := newInfiniband()
	if !setProperties(o, s, args[2:]) {
		return
	}
	if s["connection.id"] == "" {
		s["connection.id"] = "infiniband"
		if ifn := s["connection.interface-name"]; ifn != "" {
			s["connection.id"] = "infiniband-" + ifn
		}
	}
	if msg := verify(s); msg != "" {
		o.errorf(4, "Failed to add '%s' connection: %s", s["connection.id"], msg)
		return
	}
	s["connection.uuid"] = st.nextUUID()
	st.Profiles = append(st.Profiles, Profile{Settings: s})
	fmt.Fprintf(&o.stdout, "Connection '%s' (%s) successfully added.\n", s["connection.id"], s["connection.uuid"])
}

func modify(o *out, st *State, args []string) {
	sels := parseSelectors(args)
	if len(sels) == 0 {
		unsupported(o, append([]string{"connection", "modify"}, args...))
		return
	}
	sel := sels[0]
	rest := args[1:]
	if sel.kind != "" {
		rest = args[2:]
	}
	ps := st.find(sel)
	if len(ps) == 0 {
		o.errorf(10, "unknown connection '%s'.", sel.value)
		return
	}
	p := ps[0]
	s := map[string]string{}
	for k, v := range p.Settings {
		s[k] = v
	}
	if !setProperties(o, s, rest) {
		return
	}
	if msg := verify(s); msg != "" {
		o.errorf(1, "Failed to modify connection '%s': %s", p.id(), msg)
		return
	}
	p.Settings = s
}

// setProperties applies `PROP VALUE` pairs as nmcli does before asking
// NetworkManager: a bad value stops with exit 2.
func setProperties(o *out, s map[string]string, args []string) bool {
	for i := 0; i < len(args); i += 2 {
		name := args[i]
		if i+1 >= len(args) {
			o.errorf(2, "value for '%s' is missing.", name)
			return false
		}
		switch name {
		case "con-name":
			name = "connection.id"
		case "ifname":
			name = "connection.interface-name"
		}
		setting, prop, ok := strings.Cut(name, ".")
		if !ok || !slices.Contains([]string{"connection", "infiniband", "sriov", "ethtool", "match", "ipv4", "ipv6", "hostname", "tc", "proxy"}, setting) {
			o.errorf(2, "invalid or not allowed setting '%s': '%s' not among [connection, infiniband, sriov, ethtool, match, ipv4, ipv6, hostname, tc, proxy].", setting, setting)
			return false
		}
		if setting == "infiniband" && !knownProperty(name) {
			o.errorf(2, "invalid property '%s': '%s' not among [mac-address, mtu, transport-mode, p-key, parent].", prop, prop)
			return false
		}
		if !knownProperty(name) {
			unsupported(o, []string{"connection", "modify", name})
			return false
		}
		v, reason := normalizeValue(name, args[i+1])
		if reason != "" {
			o.errorf(2, "failed to modify %s: %s.", name, reason)
			return false
		}
		s[name] = v
	}
	return true
}

// normalizeValue turns a command-line value into what nmcli prints, or
// says why nmcli refuses it.
func normalizeValue(name, v string) (string, string) {
	switch name {
	case "connection.id", "connection.interface-name", "infiniband.parent", "infiniband.mac-address":
		return v, ""
	case "connection.autoconnect":
		switch strings.ToLower(v) {
		case "yes", "true", "on":
			return "yes", ""
		case "no", "false", "off":
			return "no", ""
		}
		return "", fmt.Sprintf("'%s' is not valid; use [true, yes, on] or [false, no, off]", v)
	case "sriov.total-vfs":
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return "", fmt.Sprintf("'%s' is not a valid number (or out of range)", v)
		}
		return strconv.FormatUint(n, 10), ""
	case "infiniband.mtu":
		if v == "auto" || v == "" {
			return "auto", ""
		}
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return "", fmt.Sprintf("'%s' is out of range [0, 4294967295]", v)
		}
		// NetworkManager lowers an MTU above the IPoIB maximum to it.
		n = min(n, 65520)
		if n == 0 {
			return "auto", ""
		}
		return strconv.FormatUint(n, 10), ""
	case "infiniband.transport-mode":
		return among(v, []string{"datagram", "connected"})
	case "infiniband.p-key":
		if v == "" || v == "default" || v == "-1" {
			return "default", ""
		}
		n, err := strconv.ParseInt(v, 0, 64)
		if err != nil || n < 0 || n > 0xffff {
			return "", fmt.Sprintf("'%s' is not a valid IBoIP P_Key", v)
		}
		return fmt.Sprintf("0x%04x", n), ""
	case "ipv4.method":
		return among(v, []string{"auto", "link-local", "manual", "shared", "disabled"})
	case "ipv6.method":
		return among(v, []string{"ignore", "auto", "dhcp", "link-local", "manual", "shared", "disabled"})
	case "ipv4.addresses", "ipv6.addresses":
		var addrs []string
		for _, a := range splitList(v) {
			pfx, reason := parseAddr(name[:4], a)
			if reason != "" {
				return "", "invalid IP address: " + reason
			}
			addrs = append(addrs, pfx)
		}
		return strings.Join(addrs, ", "), ""
	case "ipv4.gateway", "ipv6.gateway":
		if v == "" {
			return "", ""
		}
		if a, err := netip.ParseAddr(v); err != nil || a.Is4() != (name == "ipv4.gateway") {
			return "", fmt.Sprintf("invalid gateway address '%s'", v)
		}
		return v, ""
	case "ipv4.dns", "ipv6.dns":
		// nmcli passes DNS servers through; NetworkManager checks them when
		// it verifies the profile.
		return strings.Join(splitList(v), ","), ""
	}
	return v, ""
}

func splitList(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
}

// among matches nmcli's enum handling: exact, or an unambiguous
// case-insensitive prefix.
func among(v string, allowed []string) (string, string) {
	var hits []string
	for _, a := range allowed {
		if strings.EqualFold(v, a) {
			return a, ""
		}
		if v != "" && strings.HasPrefix(a, strings.ToLower(v)) {
			hits = append(hits, a)
		}
	}
	if len(hits) == 1 {
		return hits[0], ""
	}
	return "", fmt.Sprintf("'%s' not among [%s]", v, strings.Join(allowed, ", "))
}

// parseAddr reads ADDR[/PLEN] of family ipv4 or ipv6; a missing prefix
// length is a host address (/32, /128).
func parseAddr(family, s string) (string, string) {
	fam := "IPv4"
	bits := 32
	if family == "ipv6" {
		fam, bits = "IPv6", 128
	}
	addr, plen, hasLen := strings.Cut(s, "/")
	a, err := netip.ParseAddr(addr)
	if err != nil || a.Is4() != (bits == 32) || a.Zone() != "" {
		return "", fmt.Sprintf("Invalid %s address '%s'", fam, addr)
	}
	if hasLen {
		n, err := strconv.Atoi(plen)
		if err != nil || n < 0 || n > bits {
			return "", fmt.Sprintf("Invalid prefix '%s'", plen)
		}
		bits = n
	}
	return fmt.Sprintf("%s/%d", a, bits), ""
}

// verify checks a whole profile as NetworkManager does after all properties
// are set, returning its message or "".
func verify(s map[string]string) string {
	if pk := s["infiniband.p-key"]; pk != "default" {
		if s["infiniband.parent"] == "" {
			return "parent: InfiniBand P_Key connection did not specify parent interface name"
		}
		n, _ := strconv.ParseInt(pk, 0, 64)
		if n == 0 || n == 0x8000 {
			return "p-key: the values 0 and 0x8000 are not allowed"
		}
		want := fmt.Sprintf("%s.%04x", s["infiniband.parent"], n)
		if ifn := s["connection.interface-name"]; ifn != "" && ifn != want {
			return fmt.Sprintf("connection.interface-name: interface name of software infiniband device must be '%s' or unset (instead it is '%s')", want, ifn)
		}
	}
	for _, fam := range []string{"ipv4", "ipv6"} {
		m, addrs := s[fam+".method"], s[fam+".addresses"]
		switch {
		case m == "manual" && addrs == "":
			return fam + ".addresses: this property cannot be empty for 'method=manual'"
		case m != "manual" && m != "auto" && m != "dhcp" && addrs != "":
			return fmt.Sprintf("%s.addresses: this property is not allowed for 'method=%s'", fam, m)
		}
		for i, d := range splitList(s[fam+".dns"]) {
			if a, err := netip.ParseAddr(d); err != nil || a.Is4() != (fam == "ipv4") {
				return fmt.Sprintf("%s.dns: %d. DNS server address is invalid", fam, i+1)
			}
		}
		if s[fam+".gateway"] != "" && addrs == "" {
			return fam + ".gateway: gateway cannot be set if there are no addresses configured"
		}
	}
	return ""
}

// deviceFor is the netdev a profile would activate on, whether it exists
// with the InfiniBand link layer, and NetworkManager's reason when not.
func (st *State) deviceFor(p *Profile) (string, string) {
	s := p.Settings
	if s["infiniband.p-key"] != "default" {
		// A P_Key child is a software device NetworkManager creates on
		// the parent (echo 0x8002 > /sys/class/net/ib0/create_child).
		parent := st.device(s["infiniband.parent"])
		if parent == nil || parent.LinkLayer != "InfiniBand" {
			return "", "Failed to find a compatible device for this connection"
		}
		n, _ := strconv.ParseInt(s["infiniband.p-key"], 0, 64)
		return fmt.Sprintf("%s.%04x", parent.Name, n), ""
	}
	ifn := s["connection.interface-name"]
	for _, d := range st.Devices {
		if d.LinkLayer == "InfiniBand" && (ifn == "" || d.Name == ifn) && !strings.Contains(d.Name, ".") {
			return d.Name, ""
		}
	}
	if len(st.Devices) == 0 {
		return "", "No suitable device found for this connection (device lo not available because device is strictly unmanaged)."
	}
	d := st.Devices[0]
	reason := "mismatching interface name"
	if d.LinkLayer != "InfiniBand" {
		reason = "device type mismatch"
	}
	return "", fmt.Sprintf("No suitable device found for this connection (device %s not available because profile is not compatible with device (%s)).", d.Name, reason)
}

func (st *State) device(name string) *Device {
	for i := range st.Devices {
		if st.Devices[i].Name == name {
			return &st.Devices[i]
		}
	}
	return nil
}

func up(o *out, st *State, args []string) {
	sels := parseSelectors(args)
	if len(sels) != 1 {
		unsupported(o, append([]string{"connection", "up"}, args...))
		return
	}
	ps := st.find(sels[0])
	if len(ps) == 0 {
		o.errorf(10, "unknown connection '%s'.", sels[0].value)
		return
	}
	p := ps[0]
	dev, reason := st.deviceFor(p)
	if reason != "" {
		o.errorf(4, "Connection activation failed: %s", reason)
		return
	}
	// One active profile per device: activating another replaces it.
	for i := range st.Profiles {
		if q := &st.Profiles[i]; q.Active && q.Device == dev {
			q.Active, q.Device, q.ActivePath = false, "", 0
		}
	}
	if st.device(dev) == nil {
		st.Devices = append(st.Devices, Device{Name: dev, LinkLayer: "InfiniBand"})
	}
	st.LastActive++
	p.Active, p.Device, p.ActivePath = true, dev, st.LastActive
	fmt.Fprintf(&o.stdout, "Connection successfully activated (D-Bus active path: /org/freedesktop/NetworkManager/ActiveConnection/%d)\n", p.ActivePath)
}

// deactivate drops a profile's activation; a P_Key child interface goes
// with it (echo 0x8002 > /sys/class/net/ib0/delete_child).
func (st *State) deactivate(p *Profile) {
	dev := p.Device
	p.Active, p.Device, p.ActivePath = false, "", 0
	if p.Settings["infiniband.p-key"] != "default" {
		st.Devices = slices.DeleteFunc(st.Devices, func(d Device) bool { return d.Name == dev })
	}
}

func down(o *out, st *State, args []string) {
	sels := parseSelectors(args)
	if len(sels) == 0 {
		unsupported(o, append([]string{"connection", "down"}, args...))
		return
	}
	var done bool
	for _, s := range sels {
		var active []*Profile
		for _, p := range st.find(s) {
			if p.Active {
				active = append(active, p)
			}
		}
		if len(active) == 0 {
			o.errorf(10, "'%s' is not an active connection.", s.value)
			continue
		}
		for _, p := range active {
			fmt.Fprintf(&o.stdout, "Connection '%s' successfully deactivated (D-Bus active path: /org/freedesktop/NetworkManager/ActiveConnection/%d)\n", p.id(), p.ActivePath)
			st.deactivate(p)
			done = true
		}
	}
	if !done {
		o.errorf(10, "no active connection provided.")
	}
}

func del(o *out, st *State, args []string) {
	sels := parseSelectors(args)
	if len(sels) == 0 {
		unsupported(o, append([]string{"connection", "delete"}, args...))
		return
	}
	var unknown []string
	var gone []string
	for _, s := range sels {
		ps := st.find(s)
		if len(ps) == 0 {
			o.errorf(10, "unknown connection '%s'.", s.value)
			unknown = append(unknown, s.String())
			continue
		}
		for _, p := range ps {
			if p.Active {
				st.deactivate(p)
			}
			fmt.Fprintf(&o.stdout, "Connection '%s' (%s) successfully deleted.\n", p.id(), p.uuid())
			gone = append(gone, p.uuid())
		}
	}
	st.Profiles = slices.DeleteFunc(st.Profiles, func(p Profile) bool { return slices.Contains(gone, p.uuid()) })
	if len(unknown) > 0 {
		o.errorf(10, "cannot delete unknown connection(s): %s.", strings.Join(unknown, ", "))
	}
}
