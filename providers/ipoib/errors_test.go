package ipoib

import (
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
)

// TestConnErrorOfRealErrors: each D-Bus error captured from the real
// NetworkManager (testdata/real/nm-dbus/errors.json) becomes a
// *ConnError naming the connection, the step, NetworkManager's error and
// what it means for the operator.
func TestConnErrorOfRealErrors(t *testing.T) {
	b, err := os.ReadFile("../../testdata/real/nm-dbus/errors.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct{ Case, Method, Name, Message string }
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	const u = "5eed0000-0000-4000-8000-000000000001"
	step := map[string]Step{"AddConnection2": StepAdd, "Update2": StepModify, "ActivateConnection": StepUp, "Delete": StepDelete, "ListConnections": StepAdd}
	want := map[string]string{
		"add-reserved-pkey":               `connection "x": add failed: NetworkManager AddConnection2: org.freedesktop.NetworkManager.Settings.Connection.InvalidProperty: p-key: the values 0 and 0x8000 are not allowed (NetworkManager rejected the profile)`,
		"add-child-name":                  `connection "x": add failed: NetworkManager AddConnection2: org.freedesktop.NetworkManager.Settings.Connection.InvalidProperty: connection.interface-name: interface name of software infiniband device must be 'ib0.8002' or unset (instead it is 'ib0') (NetworkManager rejected the profile)`,
		"update-manual-without-addresses": `connection "x" (uuid ` + u + `): modify failed: NetworkManager Update2: org.freedesktop.NetworkManager.Settings.Connection.MissingProperty: ipv4.addresses: this property cannot be empty for 'method=manual' (NetworkManager rejected the profile)`,
		"activate-no-device":              `connection "x" (uuid ` + u + `): activation failed; the saved profile is kept and stays down: NetworkManager ActivateConnection: org.freedesktop.NetworkManager.UnknownDevice: No suitable device found for this connection (device lo not available because device is strictly unmanaged). (NetworkManager could not activate it on this host)`,
		"no-such-connection":              `connection "x" (uuid ` + u + `): delete failed: NetworkManager Delete: org.freedesktop.NetworkManager.Settings.InvalidConnection: No connection with the UUID was found. (the connection changed since the plan was made: plan again)`,
		"permission-denied":               `connection "x": add failed: NetworkManager AddConnection2: org.freedesktop.NetworkManager.Settings.PermissionDenied: Insufficient privileges (NetworkManager refused rdmaform: run it as root, or let its user have the polkit action org.freedesktop.NetworkManager.settings.modify.system)`,
		"not-running":                     `connection "x": add failed: NetworkManager ListConnections: org.freedesktop.DBus.Error.ServiceUnknown: The name org.freedesktop.NetworkManager was not provided by any .service files (NetworkManager is not running: systemctl start NetworkManager)`,
		"no-bus":                          `connection "x": add failed: NetworkManager ListConnections: rdmaform.NoSystemBus: connecting to the system bus (unix:path=TMP): dial unix TMP: connect: no such file or directory (NetworkManager is not running: systemctl start NetworkManager)`,
	}
	if len(cases) != len(want) {
		t.Errorf("%d captured errors, %d expected", len(cases), len(want))
	}
	for _, c := range cases {
		ce := &ConnError{Name: "x", Step: step[c.Method], Err: &host.NMError{Method: c.Method, Name: c.Name, Message: c.Message}}
		if ce.Step != StepAdd {
			ce.UUID = u
		}
		if diff := cmp.Diff(want[c.Case], ce.Error()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.Case, diff)
		}
		var ne *host.NMError
		if !errors.As(ce, &ne) || ne.Name != c.Name {
			t.Errorf("%s: errors.As(*host.NMError) = %v", c.Case, ne)
		}
		if got := IsNoSuchConnection(ce); got != (c.Case == "no-such-connection") {
			t.Errorf("%s: IsNoSuchConnection = %v", c.Case, got)
		}
		if got := IsActivationFailed(ce); got != (c.Case == "activate-no-device") {
			t.Errorf("%s: IsActivationFailed = %v", c.Case, got)
		}
	}
}
