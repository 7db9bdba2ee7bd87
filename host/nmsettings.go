package host

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/google/uuid"
)

// NetworkManager is NetworkManager's D-Bus API for connection profiles:
// org.freedesktop.NetworkManager.Settings, .Settings.Connection and the
// activation methods of org.freedesktop.NetworkManager. Profiles are
// named by their UUID (connection.uuid), which survives a restart of the
// daemon; settings are typed D-Bus values (a{sa{sv}}), never text.
//
// Errors from the daemon are *NMError (the D-Bus error name and message);
// a bus that cannot be reached is an *NMError named NMErrNoBus.
type NetworkManager interface {
	// Connections reads every profile with its settings and activation.
	// Equivalent to: Settings.ListConnections and the ObjectManager's
	// GetManagedObjects at once, then Settings.Connection.GetSettings of
	// every profile at once (two round trips, whatever their number).
	Connections(ctx context.Context) ([]NMConnection, error)
	// AddConnection saves a new profile to disk and returns its UUID (one
	// is made when the settings have none). Equivalent to:
	// Settings.AddConnection2(SETTINGS, TO_DISK, {})
	AddConnection(ctx context.Context, s NMSettings) (string, error)
	// UpdateConnection reads a profile's settings, lets edit change them,
	// and saves the result to disk. Equivalent to: GetSettings, then
	// Settings.Connection.Update2(SETTINGS, TO_DISK, {})
	UpdateConnection(ctx context.Context, uuid string, edit func(NMSettings)) error
	// DeleteConnection deletes a profile (deactivating it).
	// Equivalent to: Settings.Connection.Delete()
	DeleteConnection(ctx context.Context, uuid string) error
	// ActivateConnection activates a profile on the device NetworkManager
	// picks and waits until it is activated or has failed, as
	// `nmcli connection up` does. Equivalent to: ActivateConnection(PATH, "/", "/")
	ActivateConnection(ctx context.Context, uuid string) error
	// DeactivateConnection deactivates a profile's active connection.
	// Equivalent to: DeactivateConnection(ACTIVE)
	DeactivateConnection(ctx context.Context, uuid string) error
}

// NMSettings is a profile's settings as NetworkManager's D-Bus API carries
// them (a{sa{sv}}): setting name → property name → value.
type NMSettings map[string]map[string]dbus.Variant

// Get returns one property, if set.
func (s NMSettings) Get(setting, prop string) (dbus.Variant, bool) {
	v, ok := s[setting][prop]
	return v, ok
}

// Set sets one property, creating its setting.
func (s NMSettings) Set(setting, prop string, v any) {
	if s[setting] == nil {
		s[setting] = map[string]dbus.Variant{}
	}
	s[setting][prop] = dbus.MakeVariant(v)
}

// Unset removes one property (NetworkManager takes its default).
func (s NMSettings) Unset(setting, prop string) { delete(s[setting], prop) }

// Value returns one property's Go value (string, bool, uint32, int32,
// []uint32, [][]byte, ...), if set.
func (s NMSettings) Value(setting, prop string) (any, bool) {
	v, ok := s.Get(setting, prop)
	if !ok {
		return nil, false
	}
	return v.Value(), true
}

// SetAddresses sets ipv4.address-data or ipv6.address-data (aa{sv}:
// address s, prefix u), dropping the deprecated addresses form, which
// NetworkManager would take instead.
func (s NMSettings) SetAddresses(setting string, addrs []netip.Prefix) {
	data := []map[string]dbus.Variant{}
	for _, a := range addrs {
		data = append(data, map[string]dbus.Variant{
			"address": dbus.MakeVariant(a.Addr().String()),
			"prefix":  dbus.MakeVariant(uint32(a.Bits())),
		})
	}
	s.Unset(setting, "addresses")
	s.Set(setting, "address-data", data)
}

// Addresses reads ipv4.address-data or ipv6.address-data.
func (s NMSettings) Addresses(setting string) []netip.Prefix {
	v, ok := s.Get(setting, "address-data")
	if !ok {
		return nil
	}
	data, _ := v.Value().([]map[string]dbus.Variant)
	var out []netip.Prefix
	for _, a := range data {
		addr, _ := a["address"].Value().(string)
		plen, _ := a["prefix"].Value().(uint32)
		if ip, err := netip.ParseAddr(addr); err == nil {
			out = append(out, netip.PrefixFrom(ip, int(plen)))
		}
	}
	return out
}

// String reads a string property, "" when unset or of another type.
func (s NMSettings) String(setting, prop string) string {
	v, _ := s.Get(setting, prop)
	str, _ := v.Value().(string)
	return str
}

// NMConnection is one profile as Connections read it.
type NMConnection struct {
	Path     string // D-Bus object path of the settings connection
	Settings NMSettings
	// Active is the state of its active connection
	// (NMActiveConnectionState: 1 activating, 2 activated, 3
	// deactivating); 0 when it has none.
	Active uint32
	// Device is the interface of the active connection's device.
	Device string
}

// UUID is connection.uuid.
func (c NMConnection) UUID() string { return c.Settings.String("connection", "uuid") }

// Active connection states (NMActiveConnectionState).
const (
	NMActiveActivating   = 1
	NMActiveActivated    = 2
	NMActiveDeactivating = 3
	NMActiveDeactivated  = 4
)

// D-Bus error names NetworkManager (and the bus) answer with; those
// captured from NetworkManager 1.42 are in testdata/real/nm-dbus/errors.json.
const (
	// NMErrInvalidProperty: a property value the daemon refuses
	// (NM_CONNECTION_ERROR_INVALID_PROPERTY).
	NMErrInvalidProperty = "org.freedesktop.NetworkManager.Settings.Connection.InvalidProperty"
	// NMErrMissingProperty: a property the profile needs is missing.
	NMErrMissingProperty = "org.freedesktop.NetworkManager.Settings.Connection.MissingProperty"
	// NMErrInvalidConnection: no profile of that UUID (GetConnectionByUuid).
	NMErrInvalidConnection = "org.freedesktop.NetworkManager.Settings.InvalidConnection"
	// NMErrSettingsPermission: the caller may not change profiles.
	NMErrSettingsPermission = "org.freedesktop.NetworkManager.Settings.PermissionDenied"
	// NMErrPermission: the caller may not activate or deactivate.
	NMErrPermission = "org.freedesktop.NetworkManager.PermissionDenied"
	// NMErrUnknownConnection: an activation of a profile that is gone.
	NMErrUnknownConnection = "org.freedesktop.NetworkManager.UnknownConnection"
	// NMErrUnknownDevice: no device the profile can activate on.
	NMErrUnknownDevice = "org.freedesktop.NetworkManager.UnknownDevice"
	// NMErrConnectionNotActive: a deactivation of an inactive profile.
	NMErrConnectionNotActive = "org.freedesktop.NetworkManager.ConnectionNotActive"
	// NMErrServiceUnknown: the bus runs, NetworkManager does not.
	NMErrServiceUnknown = "org.freedesktop.DBus.Error.ServiceUnknown"
	// NMErrNoBus: the system bus cannot be reached (rdmaform's own name:
	// no D-Bus error exists without a bus).
	NMErrNoBus = "rdmaform.NoSystemBus"
	// NMErrActivationFailed: the activation started and failed
	// (rdmaform's name for an active connection that ended deactivated;
	// the message has NetworkManager's reason).
	NMErrActivationFailed = "rdmaform.ActivationFailed"
)

// NMError is a call NetworkManager (or the bus) refused.
type NMError struct {
	Method  string // the D-Bus method: AddConnection2, Update2, ...
	Name    string // the D-Bus error name (NMErr...)
	Message string
}

func (e *NMError) Error() string {
	return fmt.Sprintf("NetworkManager %s: %s: %s", e.Method, e.Name, e.Message)
}

// Is matches another *NMError of the same name (and method, when the
// target names one): errors.Is(err, &host.NMError{Name: host.NMErrInvalidConnection}).
func (e *NMError) Is(target error) bool {
	t, ok := target.(*NMError)
	return ok && t.Name == e.Name && (t.Method == "" || t.Method == e.Method) && t.Message == ""
}

// NotRunning reports whether the error says no NetworkManager answers:
// no system bus, or NetworkManager not on it.
func (e *NMError) NotRunning() bool {
	return e.Name == NMErrNoBus || e.Name == NMErrServiceUnknown || e.Name == "org.freedesktop.DBus.Error.NameHasNoOwner"
}

// IsNMNotRunning reports an error that says no NetworkManager answers.
func IsNMNotRunning(err error) bool {
	var e *NMError
	return errors.As(err, &e) && e.NotRunning()
}

// D-Bus names of the settings API.
const (
	nmSettingsPath  = dbus.ObjectPath("/org/freedesktop/NetworkManager/Settings")
	nmSettingsIface = "org.freedesktop.NetworkManager.Settings"
	nmConnIface     = "org.freedesktop.NetworkManager.Settings.Connection"
	nmActiveIface   = "org.freedesktop.NetworkManager.Connection.Active"
	nmDeviceIface   = "org.freedesktop.NetworkManager.Device"
	// nmToDisk is NM_SETTINGS_ADD_CONNECTION2_FLAG_TO_DISK and
	// NM_SETTINGS_UPDATE2_FLAG_TO_DISK (both 0x1).
	nmToDisk = uint32(0x1)
)

// NewNetworkManager returns the door to the NetworkManager on the system
// bus environ names (DBUS_SYSTEM_BUS_ADDRESS, else the default socket). It
// connects on first use and keeps the connection for the host's life.
// Every call ends after DefaultTimeout (an activation after its own wait
// plus that), sooner under CapNM.
func NewNetworkManager(environ []string) NetworkManager {
	return &liveNM{environ: environ}
}

type liveNM struct {
	environ []string
	mu      sync.Mutex
	nm      *NM
}

// conn connects once; a failure is retried on the next call.
func (l *liveNM) conn(ctx context.Context, method string) (*dbus.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.nm == nil {
		// The connection outlives this call (godbus closes one whose
		// context ends): the call's own deadline still bounds the dial.
		nm, err := dialNM(ctx, context.WithoutCancel(ctx), l.environ)
		if err != nil {
			return nil, &NMError{Method: method, Name: NMErrNoBus, Message: err.Error()}
		}
		l.nm = nm
	}
	return l.nm.conn, nil
}

// nmErr turns a godbus error into an *NMError.
func nmErr(method string, err error) error {
	if err == nil {
		return nil
	}
	var de dbus.Error
	if errors.As(err, &de) {
		msg := ""
		if len(de.Body) > 0 {
			msg, _ = de.Body[0].(string)
		}
		return &NMError{Method: method, Name: de.Name, Message: msg}
	}
	var dp *dbus.Error
	if errors.As(err, &dp) {
		msg := ""
		if len(dp.Body) > 0 {
			msg, _ = dp.Body[0].(string)
		}
		return &NMError{Method: method, Name: dp.Name, Message: msg}
	}
	return fmt.Errorf("NetworkManager %s: %w", method, err)
}

// Connections implements NetworkManager.
func (l *liveNM) Connections(ctx context.Context) ([]NMConnection, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	c, err := l.conn(ctx, "ListConnections")
	if err != nil {
		return nil, err
	}
	// Round 1: the profiles' paths and every object's properties (active
	// connections, devices) at once.
	list := c.Object(nmService, nmSettingsPath).GoWithContext(ctx, nmSettingsIface+".ListConnections", 0, nil)
	objs := c.Object(nmService, "/org/freedesktop").GoWithContext(ctx, "org.freedesktop.DBus.ObjectManager.GetManagedObjects", 0, nil)
	<-list.Done
	<-objs.Done
	var paths []dbus.ObjectPath
	if err := list.Store(&paths); err != nil {
		return nil, nmErr("ListConnections", err)
	}
	var managed map[dbus.ObjectPath]map[string]map[string]dbus.Variant
	if err := objs.Store(&managed); err != nil {
		return nil, nmErr("GetManagedObjects", err)
	}
	if nmBetweenRounds != nil {
		nmBetweenRounds()
	}
	// Round 2: every profile's settings at once.
	calls := make([]*dbus.Call, len(paths))
	done := make(chan *dbus.Call, len(paths))
	for i, p := range paths {
		calls[i] = c.Object(nmService, p).GoWithContext(ctx, nmConnIface+".GetSettings", 0, done)
	}
	for range paths {
		<-done
	}
	active := activeByProfile(managed)
	out := make([]NMConnection, 0, len(paths))
	for i, p := range paths {
		var s NMSettings
		if err := calls[i].Store(&s); err != nil {
			// A profile deleted between the two rounds is gone: its
			// object answers no method any more.
			var ne *NMError
			if errors.As(nmErr("GetSettings", err), &ne) && (strings.HasSuffix(ne.Name, ".UnknownMethod") || strings.HasSuffix(ne.Name, ".UnknownObject")) {
				continue
			}
			return nil, nmErr("GetSettings", err)
		}
		a := active[p]
		out = append(out, NMConnection{Path: string(p), Settings: s, Active: a.Active, Device: a.Device})
	}
	return out, nil
}

// nmBetweenRounds, when set (by tests), runs between Connections' two
// rounds: a profile deleted there is listed but has no settings.
var nmBetweenRounds func()

// activeByProfile is each profile's active connection (its state and
// its first device's interface) among GetManagedObjects' objects. An
// active connection that has ended (deactivated: NetworkManager drops the
// object from an idle callback, so it can still be listed) is none; of
// two for one profile (a reactivation: the old one going down, the new
// one coming up) the further along wins: activated, then activating,
// then deactivating.
func activeByProfile(managed map[dbus.ObjectPath]map[string]map[string]dbus.Variant) map[dbus.ObjectPath]NMConnection {
	rank := map[uint32]int{NMActiveActivated: 3, NMActiveActivating: 2, NMActiveDeactivating: 1}
	active := map[dbus.ObjectPath]NMConnection{}
	for _, props := range managed {
		ac, ok := props[nmActiveIface]
		if !ok {
			continue
		}
		conn, _ := ac["Connection"].Value().(dbus.ObjectPath)
		state, _ := ac["State"].Value().(uint32)
		if rank[state] == 0 {
			continue // deactivated, or unknown
		}
		devs, _ := ac["Devices"].Value().([]dbus.ObjectPath)
		a := NMConnection{Active: state}
		if len(devs) > 0 {
			a.Device, _ = managed[devs[0]][nmDeviceIface]["Interface"].Value().(string)
		}
		if have, ok := active[conn]; !ok || rank[state] > rank[have.Active] {
			active[conn] = a
		}
	}
	return active
}

// byUUID finds a profile's object path. Equivalent to:
// Settings.GetConnectionByUuid(UUID)
func (l *liveNM) byUUID(ctx context.Context, method, id string) (*dbus.Conn, dbus.ObjectPath, error) {
	c, err := l.conn(ctx, method)
	if err != nil {
		return nil, "", err
	}
	var p dbus.ObjectPath
	if err := c.Object(nmService, nmSettingsPath).CallWithContext(ctx, nmSettingsIface+".GetConnectionByUuid", 0, id).Store(&p); err != nil {
		return nil, "", nmErr(method, err)
	}
	return c, p, nil
}

// AddConnection implements NetworkManager.
func (l *liveNM) AddConnection(ctx context.Context, s NMSettings) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	c, err := l.conn(ctx, "AddConnection2")
	if err != nil {
		return "", err
	}
	id := s.String("connection", "uuid")
	if id == "" {
		id = uuid.NewString()
		s.Set("connection", "uuid", id)
	}
	var path dbus.ObjectPath
	var res map[string]dbus.Variant
	err = c.Object(nmService, nmSettingsPath).CallWithContext(ctx, nmSettingsIface+".AddConnection2", 0,
		map[string]map[string]dbus.Variant(s), nmToDisk, map[string]dbus.Variant{}).Store(&path, &res)
	if err != nil {
		return "", nmErr("AddConnection2", err)
	}
	return id, nil
}

// UpdateConnection implements NetworkManager.
func (l *liveNM) UpdateConnection(ctx context.Context, id string, edit func(NMSettings)) error {
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	c, p, err := l.byUUID(ctx, "Update2", id)
	if err != nil {
		return err
	}
	obj := c.Object(nmService, p)
	var s NMSettings
	if err := obj.CallWithContext(ctx, nmConnIface+".GetSettings", 0).Store(&s); err != nil {
		return nmErr("GetSettings", err)
	}
	// GetSettings gives the deprecated ipv4/ipv6 addresses and routes
	// besides address-data and route-data, which hold the same: sent
	// back, the deprecated forms would win over an edited address-data
	// (nm-settings-dbus(5)); they go.
	for _, fam := range []string{"ipv4", "ipv6"} {
		s.Unset(fam, "addresses")
		s.Unset(fam, "routes")
	}
	edit(s)
	var res map[string]dbus.Variant
	if err := obj.CallWithContext(ctx, nmConnIface+".Update2", 0, map[string]map[string]dbus.Variant(s), nmToDisk, map[string]dbus.Variant{}).Store(&res); err != nil {
		return nmErr("Update2", err)
	}
	return nil
}

// DeleteConnection implements NetworkManager.
func (l *liveNM) DeleteConnection(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	c, p, err := l.byUUID(ctx, "Delete", id)
	if err != nil {
		return err
	}
	return nmErr("Delete", c.Object(nmService, p).CallWithContext(ctx, nmConnIface+".Delete", 0).Err)
}

// activeOf finds the active connection of a profile ("" when inactive).
func activeOf(ctx context.Context, c *dbus.Conn, p dbus.ObjectPath) (dbus.ObjectPath, error) {
	v, err := c.Object(nmService, nmPath).GetProperty(nmIface + ".ActiveConnections")
	if err != nil {
		return "", nmErr("ActiveConnections", err)
	}
	acs, _ := v.Value().([]dbus.ObjectPath)
	calls := make([]*dbus.Call, len(acs))
	for i, ac := range acs {
		calls[i] = c.Object(nmService, ac).GoWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0, nil, nmActiveIface, "Connection")
	}
	for i, call := range calls {
		<-call.Done
		var conn dbus.Variant
		if call.Store(&conn) == nil && conn.Value() == p {
			return acs[i], nil
		}
	}
	return "", nil
}

// activationWait bounds the wait for an activation's result: nmcli's
// default --wait is 90 s.
const activationWait = 90 * time.Second

// ActivateConnection implements NetworkManager.
func (l *liveNM) ActivateConnection(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, activationWait+DefaultTimeout)
	defer cancel()
	c, p, err := l.byUUID(ctx, "ActivateConnection", id)
	if err != nil {
		return err
	}
	// Listen before asking, so no state change is missed.
	sig := make(chan *dbus.Signal, 16)
	match := []dbus.MatchOption{dbus.WithMatchInterface(nmActiveIface), dbus.WithMatchMember("StateChanged")}
	if err := c.AddMatchSignalContext(ctx, match...); err != nil {
		return nmErr("AddMatch", err)
	}
	c.Signal(sig)
	defer func() {
		c.RemoveSignal(sig)
		_ = c.RemoveMatchSignalContext(context.WithoutCancel(ctx), match...)
	}()
	var ac dbus.ObjectPath
	if err := c.Object(nmService, nmPath).CallWithContext(ctx, nmIface+".ActivateConnection", 0, p, dbus.ObjectPath("/"), dbus.ObjectPath("/")).Store(&ac); err != nil {
		return nmErr("ActivateConnection", err)
	}
	state, reason := uint32(0), uint32(0)
	if v, err := c.Object(nmService, ac).GetProperty(nmActiveIface + ".State"); err == nil {
		state, _ = v.Value().(uint32)
	} else {
		state = NMActiveDeactivated // gone already: it failed
	}
	timer := time.NewTimer(activationWait)
	defer timer.Stop()
	for state != NMActiveActivated && state != NMActiveDeactivated {
		select {
		case s := <-sig:
			if s.Path == ac && len(s.Body) == 2 {
				state, _ = s.Body[0].(uint32)
				reason, _ = s.Body[1].(uint32)
			}
		case <-timer.C:
			return &NMError{Method: "ActivateConnection", Name: NMErrActivationFailed, Message: fmt.Sprintf("not activated after %s", activationWait)}
		case <-ctx.Done():
			return nmErr("ActivateConnection", ctx.Err())
		}
	}
	if state == NMActiveDeactivated {
		return &NMError{Method: "ActivateConnection", Name: NMErrActivationFailed, Message: "Connection activation failed: " + activeReason(reason)}
	}
	return nil
}

// activeReason is NMActiveConnectionStateReason as nmcli words it
// (libnm's nm_active_connection_state_reason_to_string).
func activeReason(r uint32) string {
	reasons := []string{
		"Unknown reason", "No reason given", "The user disconnected the device", "The device was disconnected by the system",
		"The service providing the VPN connection was stopped", "The IP config of the active connection was invalid",
		"The connection attempt to the VPN service timed out", "A timeout occurred while starting the service providing the VPN connection",
		"Starting the service providing the VPN connection failed", "Necessary secrets for the connection were not provided",
		"Authentication to the server failed", "Connection was deleted from settings", "Master connection failed to activate",
		"Could not create the software device link", "The device disappeared",
	}
	if int(r) < len(reasons) {
		return reasons[r]
	}
	return fmt.Sprintf("reason %d", r)
}

// DeactivateConnection implements NetworkManager.
func (l *liveNM) DeactivateConnection(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	c, p, err := l.byUUID(ctx, "DeactivateConnection", id)
	if err != nil {
		return err
	}
	ac, err := activeOf(ctx, c, p)
	if err != nil {
		return err
	}
	if ac == "" {
		return &NMError{Method: "DeactivateConnection", Name: NMErrConnectionNotActive, Message: "The connection was not active."}
	}
	return nmErr("DeactivateConnection", c.Object(nmService, nmPath).CallWithContext(ctx, nmIface+".DeactivateConnection", 0, ac).Err)
}

// NMSortConnections sorts profiles by connection.id, then UUID.
func NMSortConnections(cs []NMConnection) {
	slices.SortFunc(cs, func(a, b NMConnection) int {
		if c := strings.Compare(a.Settings.String("connection", "id"), b.Settings.String("connection", "id")); c != 0 {
			return c
		}
		return strings.Compare(a.UUID(), b.UUID())
	})
}
