package ipoib

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/providers/ipoib/nmcli"
)

func TestConnErrorByExitCode(t *testing.T) {
	const u = "5eed0000-0000-4000-8000-000000000001"
	nm := func(code nmcli.ExitCode, verb string, msg string) error {
		return &nmcli.Error{Argv: []string{"nmcli", "connection", verb, "uuid", u}, Code: code, Message: msg}
	}
	tests := []struct {
		name string
		err  *ConnError
		want string
	}{
		{
			name: "1 modify rejected",
			err:  &ConnError{Name: "x", UUID: u, Step: StepModify, Err: nm(1, "modify", "Error: Failed to modify connection 'x': ipv4.addresses: this property cannot be empty for 'method=manual'")},
			want: `connection "x" (uuid ` + u + `): modify failed: nmcli connection modify uuid ` + u + `: exit 1 (error): Error: Failed to modify connection 'x': ipv4.addresses: this property cannot be empty for 'method=manual' (NetworkManager rejected the profile)`,
		},
		{
			name: "1 without a daemon verdict",
			err:  &ConnError{Name: "x", UUID: u, Step: StepDelete, Err: nm(1, "delete", "Error: Could not create NMClient object: Could not connect: No such file or directory.")},
			want: `connection "x" (uuid ` + u + `): delete failed: nmcli connection delete uuid ` + u + `: exit 1 (error): Error: Could not create NMClient object: Could not connect: No such file or directory. (nmcli failed without a specific reason; is the system D-Bus reachable?)`,
		},
		{
			name: "2 invalid input",
			err:  &ConnError{Name: "x", Step: StepAdd, Err: nm(2, "add", "Error: failed to modify infiniband.transport-mode: 'foo' not among [datagram, connected].")},
			want: `connection "x": add failed: nmcli connection add uuid ` + u + `: exit 2 (invalid input): Error: failed to modify infiniband.transport-mode: 'foo' not among [datagram, connected]. (nmcli refused an argument rdmaform built; this nmcli may be older or newer than NetworkManager 1.42: please report it)`,
		},
		{
			name: "3 timeout",
			err:  &ConnError{Name: "x", UUID: u, Step: StepUp, Err: nm(3, "up", "Error: Timeout expired (90 seconds)")},
			want: `connection "x" (uuid ` + u + `): activation failed; the saved profile is kept and stays down: nmcli connection up uuid ` + u + `: exit 3 (timeout): Error: Timeout expired (90 seconds) (NetworkManager did not finish in time)`,
		},
		{
			name: "4 activation",
			err:  &ConnError{Name: "x", UUID: u, Step: StepUp, Err: nm(4, "up", "Error: Connection activation failed: InfiniBand device does not support connected mode")},
			want: `connection "x" (uuid ` + u + `): activation failed; the saved profile is kept and stays down: nmcli connection up uuid ` + u + `: exit 4 (activation failed): Error: Connection activation failed: InfiniBand device does not support connected mode (NetworkManager could not activate it on this host)`,
		},
		{
			name: "4 add rejected",
			err:  &ConnError{Name: "x", Step: StepAdd, Err: nm(4, "add", "Error: Failed to add 'x' connection: parent: InfiniBand P_Key connection did not specify parent interface name")},
			want: `connection "x": add failed: nmcli connection add uuid ` + u + `: exit 4 (activation failed): Error: Failed to add 'x' connection: parent: InfiniBand P_Key connection did not specify parent interface name (NetworkManager rejected the profile)`,
		},
		{
			name: "5 deactivation",
			err:  &ConnError{Name: "x", UUID: u, Step: StepDown, Err: nm(5, "down", "Error: x")},
			want: `connection "x" (uuid ` + u + `): deactivate failed: nmcli connection down uuid ` + u + `: exit 5 (deactivation failed): Error: x (NetworkManager could not deactivate it)`,
		},
		{
			name: "6 disconnect",
			err:  &ConnError{Name: "x", UUID: u, Step: StepDown, Err: nm(6, "down", "Error: x")},
			want: `connection "x" (uuid ` + u + `): deactivate failed: nmcli connection down uuid ` + u + `: exit 6 (disconnect failed): Error: x (NetworkManager could not disconnect the device)`,
		},
		{
			name: "7 deletion",
			err:  &ConnError{Name: "x", UUID: u, Step: StepDelete, Err: nm(7, "delete", "Error: x")},
			want: `connection "x" (uuid ` + u + `): delete failed: nmcli connection delete uuid ` + u + `: exit 7 (deletion failed): Error: x (NetworkManager could not delete it)`,
		},
		{
			name: "8 not running",
			err:  &ConnError{Name: "x", UUID: u, Step: StepModify, Err: nm(8, "modify", "Error: NetworkManager is not running.")},
			want: `connection "x" (uuid ` + u + `): modify failed: nmcli connection modify uuid ` + u + `: exit 8 (NetworkManager not running): Error: NetworkManager is not running. (NetworkManager is not running: systemctl start NetworkManager)`,
		},
		{
			name: "9 version mismatch",
			err:  &ConnError{Name: "x", UUID: u, Step: StepModify, Err: nm(9, "modify", "Error: x")},
			want: `connection "x" (uuid ` + u + `): modify failed: nmcli connection modify uuid ` + u + `: exit 9 (version mismatch): Error: x (nmcli and the running NetworkManager are different versions: restart NetworkManager after an upgrade)`,
		},
		{
			name: "10 gone since the plan",
			err:  &ConnError{Name: "x", UUID: u, Step: StepModify, Err: nm(10, "modify", "Error: unknown connection '"+u+"'.")},
			want: `connection "x" (uuid ` + u + `): modify failed: nmcli connection modify uuid ` + u + `: exit 10 (no such connection or device): Error: unknown connection '` + u + `'. (the connection changed since the plan was made: plan again)`,
		},
		{
			name: "nmcli could not run",
			err:  &ConnError{Name: "x", Step: StepAdd, Err: errors.New("nmcli is not installed")},
			want: `connection "x": add failed: nmcli is not installed`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.err.Error()); diff != "" {
				t.Errorf("Error() (-want +got):\n%s", diff)
			}
			var ne *nmcli.Error
			if errors.As(tt.err, &ne) != (tt.name != "nmcli could not run") {
				t.Errorf("errors.As(*nmcli.Error) = %v", !(tt.name != "nmcli could not run"))
			}
		})
	}
}
