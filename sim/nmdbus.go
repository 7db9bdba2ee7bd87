package sim

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/godbus/dbus/v5"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/sim/nmemu"
)

// NMOps are the NetworkManager D-Bus calls a fault can fail.
var NMOps = []string{"ListConnections", "AddConnection2", "Update2", "Delete", "ActivateConnection", "DeactivateConnection"}

// simNM is NetworkManager's D-Bus API on the simulated host: the same
// emulated NetworkManager (sim/nmemu) the emulated nmcli drives, its
// profiles typed as the D-Bus API types them, and its refusals as the
// D-Bus errors the real NetworkManager 1.42 answers with
// (testdata/real/nm-dbus). NetworkManager is installed where the host's
// PATH has nmcli (one package ships both). Each call is recorded as
// "NetworkManager CALL CONNECTION" and can be broken by a fault (--nm CALL).
type simNM struct{ sim *Sim }

var _ host.NetworkManager = (*simNM)(nil)

// notRunning is dbus-daemon's answer when no NetworkManager owns its name.
func notRunning(method string) error {
	return &host.NMError{Method: method, Name: host.NMErrServiceUnknown,
		Message: "The name org.freedesktop.NetworkManager was not provided by any .service files"}
}

// begin records a call ("NetworkManager METHOD CONNECTION DETAIL") and
// returns the fault's error, if any.
func (m *simNM) begin(ctx context.Context, method, conn string, detail ...string) (dropped bool, err error) {
	m.sim.lock()
	m.sim.calls = append(m.sim.calls, strings.Join(strings.Fields(strings.Join(append([]string{"NetworkManager", method, conn}, detail...), " ")), " "))
	up := m.sim.state.HasTool("nmcli") && (m.sim.state.NM == nil || !m.sim.state.NM.NotRunning)
	f := m.sim.takeLocked(faultNM, method, conn)
	m.sim.unlock()
	if !up {
		return false, notRunning(method)
	}
	if f == nil {
		return false, nil
	}
	switch {
	case f.Drop:
		return true, nil
	case f.Hang:
		<-ctx.Done()
		return false, fmt.Errorf("NetworkManager %s: %w", method, host.CtxErr(ctx))
	}
	name := f.DBusError
	if name == "" {
		name = "org.freedesktop.NetworkManager.Failed"
	}
	return false, &host.NMError{Method: method, Name: name, Message: strings.TrimSpace(f.Stderr)}
}

// run runs one emulated nmcli command on the state; changes are saved
// and re-rendered.
func (m *simNM) run(argv ...string) (string, int) {
	var stderr []byte
	var code int
	_ = m.sim.mutate(false, func(st *State) error {
		_, stderr, code = st.nmRun(append([]string{"nmcli"}, argv...), nil)
		return nil
	})
	return strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(string(stderr)), "Error: "), "."), code
}

// Connections implements host.NetworkManager.
func (m *simNM) Connections(ctx context.Context) ([]host.NMConnection, error) {
	if _, err := m.begin(ctx, "ListConnections", ""); err != nil {
		return nil, err
	}
	m.sim.lock()
	defer m.sim.unlock()
	if m.sim.state.NM == nil {
		return nil, nil
	}
	var out []host.NMConnection
	for i, p := range m.sim.state.NM.Profiles {
		c := host.NMConnection{Path: fmt.Sprintf("/org/freedesktop/NetworkManager/Settings/%d", i+1), Settings: typed(p.Settings)}
		if p.Active {
			c.Active, c.Device = host.NMActiveActivated, p.Device
		}
		out = append(out, c)
	}
	return out, nil
}

// profile finds a profile's id by UUID.
func (m *simNM) profile(id string) (*nmemu.Profile, bool) {
	m.sim.lock()
	defer m.sim.unlock()
	if m.sim.state.NM == nil {
		return nil, false
	}
	for i := range m.sim.state.NM.Profiles {
		if p := &m.sim.state.NM.Profiles[i]; p.Settings["connection.uuid"] == id {
			cp := *p
			return &cp, true
		}
	}
	return nil, false
}

// noSuchConnection is GetConnectionByUuid's answer for an unknown UUID.
func noSuchConnection(method string) error {
	return &host.NMError{Method: method, Name: host.NMErrInvalidConnection, Message: "No connection with the UUID was found."}
}

// AddConnection implements host.NetworkManager.
func (m *simNM) AddConnection(ctx context.Context, s host.NMSettings) (string, error) {
	name := s.String("connection", "id")
	argv := []string{"connection", "add", "type", s.String("connection", "type"), "con-name", name}
	var detail []string
	for _, kv := range textual(s) {
		if kv[0] != "connection.id" && kv[0] != "connection.type" {
			argv = append(argv, kv[0], kv[1])
			if kv[1] != "" && kv[1] != "auto" && kv[1] != "default" && kv[1] != "yes" {
				detail = append(detail, kv[0]+"="+kv[1])
			}
		}
	}
	if drop, err := m.begin(ctx, "AddConnection2", name, detail...); err != nil || drop {
		return "", err
	}
	msg, code := m.run(argv...)
	if code != 0 {
		_, reason, _ := strings.Cut(msg, "connection: ")
		if reason == "" {
			reason = msg
		}
		return "", &host.NMError{Method: "AddConnection2", Name: host.NMErrInvalidProperty, Message: reason}
	}
	m.sim.lock()
	defer m.sim.unlock()
	ps := m.sim.state.NM.Profiles
	return ps[len(ps)-1].Settings["connection.uuid"], nil
}

// UpdateConnection implements host.NetworkManager.
func (m *simNM) UpdateConnection(ctx context.Context, id string, edit func(host.NMSettings)) error {
	p, ok := m.profile(id)
	name := ""
	if ok {
		name = p.Settings["connection.id"]
	}
	var argv, detail []string
	if ok {
		old := map[string]string{}
		for _, kv := range textual(typed(p.Settings)) {
			old[kv[0]] = kv[1]
		}
		s := typed(p.Settings)
		edit(s)
		argv = []string{"connection", "modify", "uuid", id}
		for _, kv := range textual(s) {
			argv = append(argv, kv[0], kv[1])
			if old[kv[0]] != kv[1] {
				detail = append(detail, kv[0]+"="+kv[1])
			}
		}
	}
	if drop, err := m.begin(ctx, "Update2", name, detail...); err != nil || drop {
		return err
	}
	if !ok {
		return noSuchConnection("Update2")
	}
	if msg, code := m.run(argv...); code != 0 {
		_, reason, _ := strings.Cut(msg, "': ")
		if reason == "" {
			reason = msg
		}
		name := host.NMErrInvalidProperty
		if strings.Contains(reason, "cannot be empty") {
			name = host.NMErrMissingProperty
		}
		return &host.NMError{Method: "Update2", Name: name, Message: reason}
	}
	return nil
}

// uuidCall runs a call on one profile by UUID.
func (m *simNM) uuidCall(ctx context.Context, method, id string, argv ...string) (string, int, error) {
	p, ok := m.profile(id)
	name := ""
	if ok {
		name = p.Settings["connection.id"]
	}
	if drop, err := m.begin(ctx, method, name); err != nil || drop {
		return "", 0, err
	}
	if !ok {
		return "", 0, noSuchConnection(method)
	}
	msg, code := m.run(argv...)
	return msg, code, nil
}

// DeleteConnection implements host.NetworkManager.
func (m *simNM) DeleteConnection(ctx context.Context, id string) error {
	msg, code, err := m.uuidCall(ctx, "Delete", id, "connection", "delete", "uuid", id)
	if err == nil && code != 0 {
		err = &host.NMError{Method: "Delete", Name: "org.freedesktop.NetworkManager.Settings.Connection.Failed", Message: msg}
	}
	return err
}

// ActivateConnection implements host.NetworkManager: NetworkManager
// refuses at once when no device fits (UnknownDevice); an activation the
// kernel refuses (connected mode on enhanced IPoIB) fails afterwards.
func (m *simNM) ActivateConnection(ctx context.Context, id string) error {
	msg, code, err := m.uuidCall(ctx, "ActivateConnection", id, "connection", "up", "uuid", id)
	if err != nil || code == 0 {
		return err
	}
	reason := strings.TrimPrefix(msg, "Connection activation failed: ")
	if strings.Contains(reason, "device") && !strings.Contains(reason, "does not support") {
		return &host.NMError{Method: "ActivateConnection", Name: host.NMErrUnknownDevice, Message: reason}
	}
	return &host.NMError{Method: "ActivateConnection", Name: host.NMErrActivationFailed, Message: "Connection activation failed: " + reason}
}

// DeactivateConnection implements host.NetworkManager.
func (m *simNM) DeactivateConnection(ctx context.Context, id string) error {
	_, code, err := m.uuidCall(ctx, "DeactivateConnection", id, "connection", "down", "uuid", id)
	if err == nil && code != 0 {
		err = &host.NMError{Method: "DeactivateConnection", Name: host.NMErrConnectionNotActive, Message: "The connection was not active."}
	}
	return err
}

// typed is a profile of the emulator (nmcli's terse values) as the D-Bus
// API types it; properties at their defaults are left out, as
// GetSettings leaves them out.
func typed(t map[string]string) host.NMSettings {
	s := host.NMSettings{}
	for _, k := range []string{"connection.id", "connection.uuid", "connection.type", "connection.interface-name",
		"infiniband.transport-mode", "infiniband.parent", "ipv4.method", "ipv4.gateway", "ipv6.method", "ipv6.gateway"} {
		if v := t[k]; v != "" {
			setting, prop, _ := strings.Cut(k, ".")
			s.Set(setting, prop, v)
		}
	}
	if t["connection.autoconnect"] == "no" {
		s.Set("connection", "autoconnect", false)
	}
	if n, err := strconv.ParseUint(t["infiniband.mtu"], 10, 32); err == nil && n > 0 {
		s.Set("infiniband", "mtu", uint32(n))
	}
	if n, err := strconv.ParseUint(t["sriov.total-vfs"], 10, 32); err == nil {
		s.Set("sriov", "total-vfs", uint32(n))
	}
	if pk, err := strconv.ParseInt(t["infiniband.p-key"], 0, 32); err == nil {
		s.Set("infiniband", "p-key", int32(pk))
	}
	for _, fam := range []string{"ipv4", "ipv6"} {
		data := []map[string]dbus.Variant{}
		for _, a := range strings.Split(t[fam+".addresses"], ",") {
			if pfx, err := netip.ParsePrefix(strings.TrimSpace(a)); err == nil {
				data = append(data, map[string]dbus.Variant{"address": dbus.MakeVariant(pfx.Addr().String()), "prefix": dbus.MakeVariant(uint32(pfx.Bits()))})
			}
		}
		s.Set(fam, "address-data", data)
		var v4 []uint32
		var v6 [][]byte
		for _, d := range strings.Split(t[fam+".dns"], ",") {
			a, err := netip.ParseAddr(strings.TrimSpace(d))
			switch {
			case err != nil:
			case a.Is4():
				b := a.As4()
				v4 = append(v4, binary.NativeEndian.Uint32(b[:]))
			default:
				b := a.As16()
				v6 = append(v6, b[:])
			}
		}
		if fam == "ipv4" && len(v4) > 0 {
			s.Set(fam, "dns", v4)
		}
		if fam == "ipv6" && len(v6) > 0 {
			s.Set(fam, "dns", v6)
		}
	}
	return s
}

// textual is typed settings as nmcli property/value pairs the emulator
// takes, every managed property (unset ones cleared).
func textual(s host.NMSettings) [][2]string {
	var out [][2]string
	add := func(k, v string) { out = append(out, [2]string{k, v}) }
	for _, k := range []string{"connection.id", "connection.type", "connection.interface-name", "infiniband.transport-mode", "infiniband.parent", "ipv4.method", "ipv6.method"} {
		setting, prop, _ := strings.Cut(k, ".")
		if v := s.String(setting, prop); v != "" || !strings.HasSuffix(k, "method") && k != "infiniband.transport-mode" {
			add(k, v)
		}
	}
	auto := "yes"
	if v, ok := s.Get("connection", "autoconnect"); ok && v.Value() == false {
		auto = "no"
	}
	add("connection.autoconnect", auto)
	mtu := "auto"
	if v, ok := s.Get("infiniband", "mtu"); ok {
		if n, _ := v.Value().(uint32); n > 0 {
			mtu = strconv.FormatUint(uint64(n), 10)
		}
	}
	add("infiniband.mtu", mtu)
	pk := "default"
	if v, ok := s.Get("infiniband", "p-key"); ok {
		if n, _ := v.Value().(int32); n >= 0 {
			pk = fmt.Sprintf("0x%04x", n)
		}
	}
	add("infiniband.p-key", pk)
	for _, fam := range []string{"ipv4", "ipv6"} {
		var addrs []string
		if v, ok := s.Get(fam, "address-data"); ok {
			data, _ := v.Value().([]map[string]dbus.Variant)
			for _, a := range data {
				addr, _ := a["address"].Value().(string)
				plen, _ := a["prefix"].Value().(uint32)
				addrs = append(addrs, fmt.Sprintf("%s/%d", addr, plen))
			}
		}
		add(fam+".addresses", strings.Join(addrs, ","))
		add(fam+".gateway", s.String(fam, "gateway"))
		var dns []string
		if v, ok := s.Get(fam, "dns"); ok {
			switch d := v.Value().(type) {
			case []uint32:
				for _, u := range d {
					var b [4]byte
					binary.NativeEndian.PutUint32(b[:], u)
					dns = append(dns, netip.AddrFrom4(b).String())
				}
			case [][]byte:
				for _, b := range d {
					if a, ok := netip.AddrFromSlice(b); ok {
						dns = append(dns, a.String())
					}
				}
			}
		}
		add(fam+".dns", strings.Join(dns, ","))
	}
	return out
}
