package simcheck_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/internal/testlab/nmlab"
	"github.com/rdmaform/rdmaform/providers/ipoib/nmcli"
	"github.com/rdmaform/rdmaform/sim/nmemu"
)

// step is one nmcli run; "$A" in an argument is the UUID the step named A
// printed when it added a profile.
type step struct {
	save string // name to remember the added UUID under
	argv []string
}

func storage() nmcli.Profile {
	return nmcli.Profile{Name: "ib0-storage", InterfaceName: "ib0", PKey: -1, Mode: nmcli.Connected, MTU: 65520,
		IPv4: nmcli.IPConfig{Addresses: []string{"192.0.2.1/24", "192.0.2.2/24"}, Gateway: "192.0.2.254", DNS: []string{"192.0.2.253", "192.0.2.252"}},
		IPv6: nmcli.IPConfig{Addresses: []string{"2001:db8:1::1/64"}, DNS: []string{"2001:db8::53"}}}
}

func child() nmcli.Profile {
	return nmcli.Profile{Name: "ib0.8002", Parent: "ib0", PKey: 0x8002, NoAutoconnect: true,
		IPv4: nmcli.IPConfig{Addresses: []string{"198.51.100.5/24"}}}
}

func sequence() []step {
	ib := func(a ...string) []string {
		return append([]string{"nmcli", "connection", "add", "type", "infiniband"}, a...)
	}
	const unknown = "00000000-0000-4000-8000-000000000000"
	changed := storage()
	changed.Mode, changed.MTU, changed.IPv4 = nmcli.Datagram, 2044, nmcli.IPConfig{}
	return []step{
		{argv: nmcli.RunningArgs()},
		{argv: nmcli.ListArgs()},
		{save: "A", argv: nmcli.AddArgs(storage())},
		{save: "B", argv: nmcli.AddArgs(child())},
		{argv: ib("con-name", "bad", "ifname", "ib1", "infiniband.p-key", "0x8002")},
		{argv: ib("con-name", "bad", "ifname", "ib1", "infiniband.transport-mode", "foo")},
		{argv: ib("con-name", "bad", "ifname", "ib0", "infiniband.parent", "ib0", "infiniband.p-key", "0x8002")},
		{argv: ib("con-name", "bad", "infiniband.p-key", "0x10000")},
		{argv: ib("con-name", "bad", "infiniband.foo", "1")},
		{argv: ib("con-name", "bad", "ipv4.addresses", "300.1.1.1/24")},
		{argv: ib("con-name", "bad", "ipv4.method", "manual")},
		{argv: ib("con-name", "bad", "ipv4.gateway", "192.0.2.1")},
		{argv: nmcli.ListArgs()},
		{argv: nmcli.ShowArgs([]string{"$A", "$B"})},
		{argv: nmcli.ShowArgs([]string{"$B", "$A"})},
		{argv: nmcli.ModifyArgs("$A", nmcli.Changed(changed, storage()))},
		{argv: nmcli.ShowArgs([]string{"$A"})},
		{argv: nmcli.ModifyArgs("$A", []nmcli.Setting{{Name: "infiniband.transport-mode", Value: "foo"}})},
		{argv: nmcli.ModifyArgs("$A", []nmcli.Setting{{Name: "infiniband.transport-mode", Value: "CON"}, {Name: "infiniband.mtu", Value: "70000"}})},
		{argv: nmcli.ModifyArgs("$A", []nmcli.Setting{{Name: "ipv4.method", Value: "manual"}})},
		{argv: nmcli.ModifyArgs("$A", []nmcli.Setting{{Name: "infiniband.mtu", Value: "abc"}})},
		{argv: nmcli.ModifyArgs("$A", []nmcli.Setting{{Name: "infiniband.p-key", Value: "0x8002"}})},
		{argv: nmcli.ModifyArgs("$A", []nmcli.Setting{{Name: "ipv4.dns", Value: "1.2.3"}})},
		{argv: nmcli.ModifyArgs("$B", []nmcli.Setting{{Name: "infiniband.p-key", Value: "0x8000"}})},
		{argv: nmcli.ModifyArgs("$B", []nmcli.Setting{{Name: "connection.autoconnect", Value: "maybe"}})},
		{argv: nmcli.ModifyArgs("$B", []nmcli.Setting{{Name: "ipv4.method", Value: "disabled"}})},
		{argv: nmcli.ShowArgs([]string{"$A", "$B"})},
		{argv: nmcli.ModifyArgs(unknown, []nmcli.Setting{{Name: "infiniband.mtu", Value: "2044"}})},
		{argv: nmcli.ShowArgs([]string{unknown})},
		{argv: nmcli.ShowArgs([]string{"$A", unknown})},
		{argv: nmcli.UpArgs("$A")},
		{argv: nmcli.UpArgs("$B")},
		{argv: nmcli.UpArgs(unknown)},
		{argv: nmcli.DownArgs("$A")},
		{argv: nmcli.DeleteArgs(unknown)},
		{argv: append(nmcli.DeleteArgs("$A"), "uuid", unknown)},
		{argv: nmcli.DeleteArgs("$B")},
		{argv: nmcli.ListArgs()},
	}
}

// transcript runs the sequence through run and records each step.
func transcript(t *testing.T, run func(argv []string) nmcli.Result) []string {
	t.Helper()
	vars := map[string]string{}
	var out []string
	for _, s := range sequence() {
		argv := make([]string, len(s.argv))
		for i, a := range s.argv {
			if strings.HasPrefix(a, "$") {
				a = vars[a[1:]]
			}
			argv[i] = a
		}
		r := run(argv)
		if s.save != "" {
			u, err := nmcli.ParseAdded(r.Stdout)
			if err != nil {
				t.Fatalf("%v: %v (stderr %s)", argv, err, r.Stderr)
			}
			vars[s.save] = u
		}
		out = append(out, fmt.Sprintf("$ %s\n[exit %d]\n[stdout]\n%s[stderr]\n%s", strings.Join(s.argv, " "), r.Exit, r.Stdout, r.Stderr))
	}
	return normalize(out)
}

var (
	uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	pathRE = regexp.MustCompile(`/ActiveConnection/[0-9]+`)
)

// normalize replaces UUIDs by their order of first appearance and D-Bus
// active-connection paths by a placeholder.
func normalize(lines []string) []string {
	seen := map[string]string{"00000000-0000-4000-8000-000000000000": "UUID-UNKNOWN"}
	out := make([]string, len(lines))
	for i, l := range lines {
		l = uuidRE.ReplaceAllStringFunc(l, func(u string) string {
			if _, ok := seen[u]; !ok {
				seen[u] = fmt.Sprintf("UUID-%d", len(seen))
			}
			return seen[u]
		})
		out[i] = pathRE.ReplaceAllString(l, "/ActiveConnection/N")
	}
	return out
}

func labRunner(lab *nmlab.Lab) nmcli.Runner {
	return func(ctx context.Context, argv []string) (nmcli.Result, error) {
		r, err := lab.Run(ctx, argv)
		return nmcli.Result(r), err
	}
}

func emuRunner(st *nmemu.State) nmcli.Runner {
	return func(_ context.Context, argv []string) (nmcli.Result, error) {
		o, e, x := nmemu.Run(argv, st, nil)
		return nmcli.Result{Stdout: o, Stderr: e, Exit: x}, nil
	}
}

// TestEmulatorMatchesRealNetworkManager is the proof of faithfulness: the
// same commands against the real NetworkManager 1.42 and against the
// emulator print the same bytes and exit the same way.
func TestEmulatorMatchesRealNetworkManager(t *testing.T) {
	lab := nmlab.Start(t)
	real := labRunner(lab)
	emu := emuRunner(&nmemu.State{})
	call := func(r nmcli.Runner) func([]string) nmcli.Result {
		return func(argv []string) nmcli.Result {
			res, err := r(t.Context(), argv)
			if err != nil {
				t.Fatalf("%v: %v", argv, err)
			}
			return res
		}
	}
	want := transcript(t, call(real))
	got := transcript(t, call(emu))
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("emulator differs from the real nmcli (-real +emulated):\n%s", d)
	}
	if testing.Verbose() {
		t.Logf("real transcript:\n%s", strings.Join(want, "\n"))
	}
}

// TestReadBackRealAndEmulated adds profiles with AddArgs and reads them back
// with Client.List, field by field, from the real NetworkManager and from
// the emulator.
func TestReadBackRealAndEmulated(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T) nmcli.Runner
	}{
		{"real", func(t *testing.T) nmcli.Runner { return labRunner(nmlab.Start(t)) }},
		{"emulated", func(t *testing.T) nmcli.Runner { return emuRunner(&nmemu.State{}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &nmcli.Client{Run: tc.run(t)}
			var want []nmcli.Profile
			for _, p := range []nmcli.Profile{storage(), child(), {Name: "ib1-dhcp", InterfaceName: "ib1", PKey: -1, IPv4: nmcli.IPConfig{Method: nmcli.MethodAuto}}} {
				u, err := c.Add(t.Context(), p)
				if err != nil {
					t.Fatal(err)
				}
				n := p.Normalized()
				n.UUID = u
				want = append(want, n)
			}
			calls := 0
			counted := c.Run
			c.Run = func(ctx context.Context, argv []string) (nmcli.Result, error) {
				calls++
				return counted(ctx, argv)
			}
			got, err := c.List(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if calls != 2 {
				t.Errorf("List ran nmcli %d times, want 2", calls)
			}
			// Client.List sorts by name.
			wantSorted := []nmcli.Profile{want[0], want[1], want[2]} // "ib0-storage" < "ib0.8002"
			if d := cmp.Diff(wantSorted, got); d != "" {
				t.Errorf("read back (-want +got):\n%s", d)
			}
			for _, p := range got {
				if ch := nmcli.Changed(p, p); len(ch) != 0 {
					t.Errorf("%s: read profile differs from itself: %v", p.Name, ch)
				}
			}
			// Up fails without an IPoIB device, typed as an activation failure.
			err = c.Up(t.Context(), want[0].UUID)
			if !nmcli.IsActivationFailed(err) {
				t.Errorf("Up without device: %v, want activation failure", err)
			}
			err = c.Delete(t.Context(), "00000000-0000-4000-8000-000000000000")
			if !nmcli.IsNoSuchConnection(err) {
				t.Errorf("Delete unknown: %v, want no such connection", err)
			}
		})
	}
}
