package nmcli

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseProfilesTwoBlocks(t *testing.T) {
	out, err := os.ReadFile("testdata/show-two.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseProfiles(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []Profile{
		{Name: "ib0-storage", UUID: "c0be1fa4-2470-476c-96ba-37a9183c5606", InterfaceName: "ib0",
			PKey: -1, Mode: Connected, MTU: 65520,
			IPv4: IPConfig{Method: MethodManual, Addresses: []string{"192.0.2.1/24", "192.0.2.2/24"}, Gateway: "192.0.2.254", DNS: []string{"192.0.2.253", "192.0.2.252"}},
			IPv6: IPConfig{Method: MethodManual, Addresses: []string{"2001:db8:1::1/64"}}},
		{Name: "ib0.8002", UUID: "4e0e5dcd-9293-4c60-bce9-fb71d5b195ca", InterfaceName: "ib0.8002", NoAutoconnect: true,
			Parent: "ib0", PKey: 0x8002, Mode: Datagram,
			IPv4: IPConfig{Method: MethodDisabled}, IPv6: IPConfig{Method: MethodDisabled}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ParseProfiles (-want +got):\n%s", d)
	}
}

func TestParseMultilineRepeatedFieldStartsRecord(t *testing.T) {
	recs, err := ParseMultiline([]byte("connection.id:a\nconnection.uuid:1\nconnection.id:b\nconnection.uuid:2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[1].Values["connection.id"] != "b" {
		t.Errorf("got %+v", recs)
	}
	if _, err := ParseMultiline([]byte("garbage\n")); err == nil {
		t.Error("no error for a line without ':'")
	}
}

func TestSplitTabular(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{`ib0-storage:c0be1fa4:infiniband::no:`, []string{"ib0-storage", "c0be1fa4", "infiniband", "", "no", ""}},
		{`eth\:test\\x:476e:802-3-ethernet:rfv0:yes:activated`, []string{`eth:test\x`, "476e", "802-3-ethernet", "rfv0", "yes", "activated"}},
		{`2001\:db8\:1\:\:1/64`, []string{"2001:db8:1::1/64"}},
	} {
		if d := cmp.Diff(tc.want, SplitTabular(tc.line)); d != "" {
			t.Errorf("SplitTabular(%q) (-want +got):\n%s", tc.line, d)
		}
	}
}

func TestNormalizedAndSettings(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Profile
		want []string
	}{
		{"plain with addresses", Profile{Name: "ib0-storage", InterfaceName: "ib0", PKey: -1, Mode: Connected, MTU: 65520,
			IPv4: IPConfig{Addresses: []string{"192.0.2.1/24"}, Gateway: "192.0.2.254", DNS: []string{"192.0.2.253"}},
			IPv6: IPConfig{Addresses: []string{"2001:db8:1::1/64"}}},
			[]string{"nmcli", "connection", "add", "type", "infiniband", "con-name", "ib0-storage",
				"connection.interface-name", "ib0", "infiniband.transport-mode", "connected", "infiniband.mtu", "65520",
				"ipv4.method", "manual", "ipv4.addresses", "192.0.2.1/24", "ipv4.gateway", "192.0.2.254", "ipv4.dns", "192.0.2.253",
				"ipv6.method", "manual", "ipv6.addresses", "2001:db8:1::1/64"}},
		{"pkey child gets its name; a limited key stays limited", Profile{Name: "p", Parent: "ib0", PKey: 0x0002, InterfaceName: "wrong", NoAutoconnect: true},
			[]string{"nmcli", "connection", "add", "type", "infiniband", "con-name", "p",
				"connection.interface-name", "ib0.0002", "connection.autoconnect", "no", "infiniband.parent", "ib0", "infiniband.p-key", "0x0002",
				"ipv4.method", "disabled", "ipv6.method", "disabled"}},
		{"explicit dhcp, mtu clamped", Profile{Name: "d", InterfaceName: "ib1", PKey: -1, MTU: 70000, IPv4: IPConfig{Method: MethodAuto}},
			[]string{"nmcli", "connection", "add", "type", "infiniband", "con-name", "d",
				"connection.interface-name", "ib1", "infiniband.mtu", "65520", "ipv4.method", "auto", "ipv6.method", "disabled"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, AddArgs(tc.in)); d != "" {
				t.Errorf("AddArgs (-want +got):\n%s", d)
			}
		})
	}
}

func TestChanged(t *testing.T) {
	have := Profile{Name: "x", UUID: "u", InterfaceName: "ib0", PKey: -1, Mode: Datagram,
		IPv4: IPConfig{Method: MethodManual, Addresses: []string{"192.0.2.1/24"}, Gateway: "192.0.2.254"},
		IPv6: IPConfig{Method: MethodDisabled}}
	same := have
	same.Mode = "" // datagram by default
	if got := Changed(same, have); len(got) != 0 {
		t.Errorf("Changed(equal) = %v", got)
	}
	want := have
	want.IPv4 = IPConfig{}
	want.MTU = 2044
	got := Changed(want, have)
	wantSet := []Setting{{"infiniband.mtu", "2044"}, {"ipv4.method", "disabled"}, {"ipv4.addresses", ""}, {"ipv4.gateway", ""}}
	if d := cmp.Diff(wantSet, got); d != "" {
		t.Errorf("Changed (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"nmcli", "connection", "modify", "uuid", "u", "infiniband.mtu", "2044", "ipv4.method", "disabled", "ipv4.addresses", "", "ipv4.gateway", ""},
		ModifyArgs("u", got)); d != "" {
		t.Errorf("ModifyArgs (-want +got):\n%s", d)
	}
}

func TestPKeyRules(t *testing.T) {
	for _, tc := range []struct {
		in    int
		valid bool
		name  string
	}{
		{-1, true, ""}, {0, false, ""}, {0x8000, false, ""}, {2, true, "ib0.0002"},
		{0x8002, true, "ib0.8002"}, {0xffff, true, "ib0.ffff"}, {0x10000, false, ""},
	} {
		if got := ValidPKey(tc.in); got != tc.valid {
			t.Errorf("ValidPKey(%#x) = %v", tc.in, got)
		}
		if tc.name != "" && ChildName("ib0", tc.in) != tc.name {
			t.Errorf("ChildName(ib0, %#x) = %s, want %s", tc.in, ChildName("ib0", tc.in), tc.name)
		}
	}
	for s, want := range map[string]int{"default": -1, "0x8002": 0x8002, "32770": 0x8002, "": -1} {
		if got, err := ParsePKey(s); err != nil || got != want {
			t.Errorf("ParsePKey(%q) = %d, %v", s, got, err)
		}
	}
}

func TestParseAdded(t *testing.T) {
	u, err := ParseAdded([]byte("Connection 'a (b)' (c0be1fa4-2470-476c-96ba-37a9183c5606) successfully added.\n"))
	if err != nil || u != "c0be1fa4-2470-476c-96ba-37a9183c5606" {
		t.Errorf("ParseAdded = %q, %v", u, err)
	}
	if _, err := ParseAdded([]byte("Warning: something\n")); err == nil {
		t.Error("no error on unexpected output")
	}
}

// fakeRunner answers from a table keyed by the joined argv and records calls.
type fakeRunner struct {
	answers map[string]Result
	calls   [][]string
}

func (f *fakeRunner) run(_ context.Context, argv []string) (Result, error) {
	f.calls = append(f.calls, argv)
	key := ""
	for i, a := range argv {
		if i > 0 {
			key += " "
		}
		key += a
	}
	r, ok := f.answers[key]
	if !ok {
		return Result{}, errors.New("unexpected command " + key)
	}
	return r, nil
}

func TestListTwoRunsAndErrors(t *testing.T) {
	show, _ := os.ReadFile("testdata/show-two.txt")
	f := &fakeRunner{answers: map[string]Result{
		"nmcli -t -f NAME,UUID,TYPE,DEVICE,ACTIVE,STATE connection show": {Stdout: []byte(
			"eth:9:802-3-ethernet:rfv0:yes:activated\nib0-storage:c0be1fa4-2470-476c-96ba-37a9183c5606:infiniband:ib0:yes:activated\nib0.8002:4e0e5dcd-9293-4c60-bce9-fb71d5b195ca:infiniband::no:\n")},
		"nmcli -t -f connection.id,connection.uuid,connection.type,connection.interface-name,connection.autoconnect,infiniband.mtu,infiniband.transport-mode,infiniband.p-key,infiniband.parent,ipv4.method,ipv4.addresses,ipv4.gateway,ipv4.dns,ipv6.method,ipv6.addresses,ipv6.gateway,ipv6.dns connection show uuid c0be1fa4-2470-476c-96ba-37a9183c5606 uuid 4e0e5dcd-9293-4c60-bce9-fb71d5b195ca": {Stdout: show},
		"nmcli connection up uuid 4e0e5dcd-9293-4c60-bce9-fb71d5b195ca": {Exit: 4, Stderr: []byte("Error: Connection activation failed: Failed to find a compatible device for this connection\n")},
		"nmcli -t -f RUNNING general":                                   {Exit: 8, Stderr: []byte("Error: NetworkManager is not running.\n")},
	}}
	c := &Client{Run: f.run}
	ps, err := c.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 2 || len(ps) != 2 || !ps[0].Active || ps[0].Device != "ib0" || ps[1].Active {
		t.Errorf("List: %d calls, profiles %+v", len(f.calls), ps)
	}
	err = c.Up(t.Context(), "4e0e5dcd-9293-4c60-bce9-fb71d5b195ca")
	if !IsActivationFailed(err) || IsNoSuchConnection(err) || IsRejected(err) {
		t.Errorf("Up error not classified: %v", err)
	}
	if !errors.Is(err, &Error{Code: ExitActivationFailed}) {
		t.Errorf("errors.Is by code failed: %v", err)
	}
	want := "nmcli connection up uuid 4e0e5dcd-9293-4c60-bce9-fb71d5b195ca: exit 4 (activation failed): Error: Connection activation failed: Failed to find a compatible device for this connection"
	if err.Error() != want {
		t.Errorf("Error() =\n%s\nwant\n%s", err, want)
	}
	running, err := c.Running(t.Context())
	if running || err != nil {
		t.Errorf("Running = %v, %v", running, err)
	}
}
