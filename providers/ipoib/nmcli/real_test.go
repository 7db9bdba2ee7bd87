package nmcli_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/internal/testlab/nmlab"
	"github.com/rdmaform/rdmaform/providers/ipoib/nmcli"
)

// capture, when set, makes TestRealNmcliOutputs write what the real nmcli
// printed into that directory: how testdata/real/nmcli was made
// (go test ./providers/ipoib/nmcli -run TestRealNmcliOutputs -capture DIR).
var capture = flag.String("capture", "", "write the real nmcli outputs of TestRealNmcliOutputs to `DIR`")

// TestRealNmcliOutputs runs the real nmcli against a real NetworkManager
// (nmlab) the way rdmaform does, and parses what it prints with the
// provider's parsers: the listing, the multiline profiles (values with
// colons, lists, an escaped name), the add confirmation, and the errors
// rdmaform tells apart.
func TestRealNmcliOutputs(t *testing.T) {
	lab := nmlab.Start(t)
	out := *capture
	if out == "" {
		out = t.TempDir()
	}
	// save writes NAME.cmd (the command line, JSON), NAME.stdout,
	// NAME.stderr (when there is any) and NAME.exit.
	save := func(name string, args []string) nmlab.Result {
		t.Helper()
		r := lab.Nmcli(args...)
		argv, _ := json.Marshal(append([]string{"nmcli"}, args...))
		if err := os.WriteFile(filepath.Join(out, name+".cmd"), append(argv, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, name+".stdout"), r.Stdout, 0o644); err != nil {
			t.Fatal(err)
		}
		if len(r.Stderr) > 0 {
			if err := os.WriteFile(filepath.Join(out, name+".stderr"), r.Stderr, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(out, name+".exit"), []byte(strconv.Itoa(r.Exit)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return r
	}
	list := []string{"-t", "-f", strings.Join(nmcli.ListFields(), ","), "connection", "show"}
	show := []string{"-t", "-f", strings.Join(nmcli.ProfileFields(), ","), "connection", "show"}

	if r := save("list-empty", list); r.Exit != 0 || len(r.Stdout) != 0 {
		t.Fatalf("empty list: %+v", r)
	}
	add := save("add-storage", []string{"connection", "add", "type", "infiniband", "con-name", "ib0-storage",
		"connection.interface-name", "ib0.8002", "connection.autoconnect", "no", "infiniband.parent", "ib0", "infiniband.p-key", "0x8002",
		"infiniband.mtu", "2044", "ipv4.method", "manual", "ipv4.addresses", "192.0.2.1/24,192.0.2.2/24", "ipv4.gateway", "192.0.2.254",
		"ipv4.dns", "192.0.2.53", "ipv6.method", "manual", "ipv6.addresses", "2001:db8::1/64"})
	uuid, err := nmcli.ParseAdded(add.Stdout)
	if err != nil || add.Exit != 0 {
		t.Fatalf("add: %v %+v", err, add)
	}
	add2 := save("add-escaped-name", []string{"connection", "add", "type", "infiniband", "con-name", `odd:name\with`, "ifname", "ib1",
		"infiniband.transport-mode", "connected", "infiniband.mtu", "65520", "connection.autoconnect", "no"})
	uuid2, err := nmcli.ParseAdded(add2.Stdout)
	if err != nil {
		t.Fatalf("add: %v %+v", err, add2)
	}
	entries, err := nmcli.ParseList(save("list-two", list).Stdout)
	if err != nil || len(entries) != 2 {
		t.Fatalf("list: %v %+v", err, entries)
	}
	names := map[string]string{}
	for _, e := range entries {
		names[e.UUID] = e.Name
	}
	if names[uuid] != "ib0-storage" || names[uuid2] != `odd:name\with` {
		t.Errorf("list names: %v", names)
	}
	ps, err := nmcli.ParseProfiles(save("show-two", append(show, "uuid", uuid, "uuid", uuid2)).Stdout)
	if err != nil || len(ps) != 2 {
		t.Fatalf("show: %v %+v", err, ps)
	}
	if p := ps[0]; p.PKey != 0x8002 || p.Parent != "ib0" || p.MTU != 2044 || strings.Join(p.IPv4.Addresses, ",") != "192.0.2.1/24,192.0.2.2/24" ||
		p.IPv4.Gateway != "192.0.2.254" || strings.Join(p.IPv6.Addresses, ",") != "2001:db8::1/64" || !p.NoAutoconnect {
		t.Errorf("profile read back: %+v", p)
	}
	if p := ps[1]; p.Name != `odd:name\with` || p.Mode != nmcli.Connected || p.MTU != 65520 || p.InterfaceName != "ib1" {
		t.Errorf("profile read back: %+v", p)
	}
	for name, args := range map[string][]string{
		"error-unknown-connection": {"connection", "show", "uuid", "00000000-0000-0000-0000-000000000000"},
		"error-invalid-property":   {"connection", "modify", uuid, "infiniband.nonsense", "1"},
		"error-bad-value":          {"connection", "modify", uuid, "infiniband.mtu", "lots"},
		"error-activation":         {"connection", "up", "uuid", uuid},
		"error-delete-unknown":     {"connection", "delete", "uuid", "00000000-0000-0000-0000-000000000000"},
	} {
		r := save(name, args)
		if r.Exit == 0 {
			t.Errorf("%s: nmcli %v succeeded", name, args)
		}
	}
	// A limited-membership P_Key child, read back as written.
	lim := save("add-limited-child", []string{"connection", "add", "type", "infiniband", "con-name", "lim", "infiniband.parent", "ib0",
		"infiniband.p-key", "0x0002", "connection.autoconnect", "no"})
	limUUID, err := nmcli.ParseAdded(lim.Stdout)
	if err != nil {
		t.Fatalf("add limited: %v %+v", err, lim)
	}
	lp, err := nmcli.ParseProfiles(save("show-limited-child", append(show, "uuid", limUUID)).Stdout)
	if err != nil || len(lp) != 1 || lp[0].PKey != 0x0002 || lp[0].Parent != "ib0" {
		t.Errorf("limited child read back: %v %+v", err, lp)
	}
	for name, args := range map[string][]string{
		"error-down-inactive":      {"connection", "down", "uuid", uuid},
		"error-add-reserved-pkey":  {"connection", "add", "type", "infiniband", "con-name", "bad", "infiniband.parent", "ib0", "infiniband.p-key", "0x8000"},
		"error-modify-bad-address": {"connection", "modify", uuid, "ipv4.addresses", "192.0.2.300/24"},
	} {
		if r := save(name, args); r.Exit == 0 {
			t.Errorf("%s: nmcli %v succeeded", name, args)
		}
	}
	if r := save("delete", []string{"connection", "delete", "uuid", uuid}); r.Exit != 0 {
		t.Errorf("delete: %+v", r)
	}
	save("running", []string{"-t", "-f", "RUNNING", "general"})
}
