package probe

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/schema"
)

// fixtureHost is a host with rdmaFixture's sysfs and the given runner.
func fixtureHost(t *testing.T, r host.Runner) *host.Host {
	t.Helper()
	root := t.TempDir()
	rdmaFixture(t, root)
	fsys, err := host.NewRootFS(root)
	if err != nil {
		t.Fatal(err)
	}
	return &host.Host{FS: fsys, Runner: r, Kernel: scriptedKernel{}, Name: "root " + root}
}

func fixtureInventory(t *testing.T) *inventory.Inventory {
	t.Helper()
	inv, err := inventory.Discover(context.Background(), fixtureHost(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// TestClientArgs: the command line of every probe kind, and the probes
// that cannot run on this host, with the reason.
func TestClientArgs(t *testing.T) {
	inv := fixtureInventory(t)
	cases := []struct{ probe, want string }{
		{"ping: {to: 192.0.2.2}", "ping -n -c 3 -w 5 -- 192.0.2.2"},
		{"ping: {to: 192.0.2.2, interface: rfa0, count: 5, timeout: 1500ms}", "ping -n -c 5 -w 2 -I rfa0 -- 192.0.2.2"},
		{"rdma_cm: {to: 192.0.2.2}", "rping -c -a 192.0.2.2 -p 7174 -C 3 -v"},
		{"rdma_cm: {to: 192.0.2.2, device: rxe0, port: 7200, count: 7}", "rping -c -a 192.0.2.2 -p 7200 -C 7 -v"},
		{"rdma_cm: {to: 192.0.2.2, device: mlx5_0}", "error: no RDMA device mlx5_0 on this host (devices: ibx0, rxe0)"},
		{"verbs: {to: 192.0.2.2, device: rxe0}", "ibv_rc_pingpong -d rxe0 -i 1 -n 3 -p 18515 -g 1 192.0.2.2"},
		{"verbs: {to: 192.0.2.2, device: rxe0, port: 1, gid_index: 0}", "ibv_rc_pingpong -d rxe0 -i 1 -n 3 -p 18515 -g 0 192.0.2.2"},
		{"verbs: {to: 192.0.2.2, device: ibx0}", "ibv_rc_pingpong -d ibx0 -i 1 -n 3 -p 18515 192.0.2.2"},
		{"verbs: {to: 192.0.2.2, device: rxe0, port: 2}", "error: rxe0 has no port 2"},
		{"ib: {device: ibx0, to_lid: 2, count: 1}", "ibping -C ibx0 -P 1 -c 1 -L 2"},
		{"ib: {device: ibx0, port: 1, to_guid: \"0x0002c903000e0b72\"}", "ibping -C ibx0 -P 1 -c 3 -G 0x0002c903000e0b72"},
		{"ib: {device: rxe0, to_lid: 2}", "error: ibping needs an InfiniBand port, but rxe0 port 1 is Ethernet; probe it with rdma_cm or verbs"},
		{"ib: {device: mlx5_9, to_lid: 2}", "error: no RDMA device mlx5_9 on this host (devices: ibx0, rxe0)"},
	}
	for _, c := range cases {
		spec := parseSpec(t, "version: 1\nprobes:\n  - name: p\n    "+c.probe+"\n")
		args, err := clientArgs(inv, &spec.Probes[0])
		got := strings.Join(args, " ")
		if err != nil {
			got = "error: " + err.Error()
		}
		if got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.probe, got, c.want)
		}
	}

	// A RoCE port whose GIDs carry no IPv4 address needs gid_index.
	noV4 := &inventory.Inventory{Devices: []*inventory.Device{{Name: "rxe1", Ports: []*inventory.Port{{Num: 1, LinkLayer: "Ethernet",
		GIDs: []inventory.GID{{Index: 0, GID: "fe80:0000:0000:0000:0000:00ff:fe00:0001", Type: inventory.GIDRoCEv2}, {Index: 1, GID: "0000:0000:0000:0000:0000:ffff:c000:0201", Type: "IB/RoCE v1"}}}}}}}
	spec := parseSpec(t, "version: 1\nprobes:\n  - name: p\n    verbs: {to: 192.0.2.2, device: rxe1}\n")
	if _, err := clientArgs(noV4, &spec.Probes[0]); err == nil || err.Error() != "rxe1 port 1 has no RoCE v2 GID with an IPv4 address; give gid_index" {
		t.Errorf("no IPv4 RoCE v2 GID: %v", err)
	}
	if _, err := clientArgs(noV4, &schema.Probe{Name: "none"}); err == nil {
		t.Error("a probe of no kind has a command line")
	}
}

// TestActivePort: where a probe's device and port come from, and the
// reasons when they do not exist.
func TestActivePort(t *testing.T) {
	inv := &inventory.Inventory{Devices: []*inventory.Device{{Name: "b0"}, {Name: "a0", Ports: []*inventory.Port{{Num: 2}}}}}
	if _, err := activePort(&inventory.Inventory{}, "x", 0); err == nil || err.Error() != "no RDMA device x on this host (devices: none)" {
		t.Errorf("no devices: %v", err)
	}
	if _, err := activePort(inv, "x", 1); err == nil || err.Error() != "no RDMA device x on this host (devices: a0, b0)" {
		t.Errorf("unknown device: %v", err)
	}
	if _, err := activePort(inv, "b0", 0); err == nil || err.Error() != "b0 has no ports" {
		t.Errorf("no ports: %v", err)
	}
	if p, err := activePort(inv, "a0", 0); err != nil || p.Num != 2 {
		t.Errorf("any port: %v %v", p, err)
	}
	if p, err := activePort(inv, "a0", 2); err != nil || p.Num != 2 {
		t.Errorf("port 2: %v %v", p, err)
	}
}

// TestGIDs: the RoCE v2 GIDs probes pick.
func TestGIDs(t *testing.T) {
	inv := fixtureInventory(t)
	pt := inv.Device("rxe0").Ports[0]
	if g, ok := RoCEv2IPv4GID(pt); !ok || g.Index != 1 {
		t.Errorf("RoCEv2IPv4GID: %+v %v", g, ok)
	}
	if g, ok := GIDFor(pt, mustAddr(t, "192.0.2.1")); !ok || g.Index != 1 {
		t.Errorf("GIDFor(192.0.2.1): %+v %v", g, ok)
	}
	if g, ok := GIDFor(pt, mustAddr(t, "::ffff:192.0.2.1")); !ok || g.Index != 1 {
		t.Errorf("GIDFor(::ffff:192.0.2.1): %+v %v", g, ok)
	}
	if _, ok := GIDFor(pt, mustAddr(t, "192.0.2.2")); ok {
		t.Error("GIDFor(192.0.2.2) found a GID")
	}
	v1 := &inventory.Port{GIDs: []inventory.GID{{Index: 3, GID: "0000:0000:0000:0000:0000:ffff:c000:0201", Type: "IB/RoCE v1"}}}
	if _, ok := GIDFor(v1, mustAddr(t, "192.0.2.1")); ok {
		t.Error("GIDFor took a RoCE v1 GID")
	}
	if _, ok := RoCEv2IPv4GID(v1); ok {
		t.Error("RoCEv2IPv4GID took a RoCE v1 GID")
	}
}

// TestSameGUID: a sysfs GID against a port GUID as ibping takes it.
func TestSameGUID(t *testing.T) {
	gid := "fe80:0000:0000:0000:0002:c903:000e:0b72"
	for guid, want := range map[string]bool{
		"0x0002c903000e0b72": true,
		"0x2c903000e0b72":    true,
		"0002C903000E0B72":   true,
		"0x0002c903000e0b73": false,
		"0xfe80000000000000": false,
	} {
		if got := sameGUID(gid, guid); got != want {
			t.Errorf("sameGUID(%s, %s) = %v", gid, guid, got)
		}
	}
	if sameGUID("fe80::2:c903:e:b72", "0x0002c903000e0b72") {
		t.Error("a GID not in sysfs's full form matched")
	}
}

// TestRunOutcomes: Run with the tools' real outputs (testdata/real),
// through a runner that stands in for tools that need RDMA hardware.
func TestRunOutcomes(t *testing.T) {
	spec := parseSpec(t, `version: 1
probes:
  - name: cm-ok
    rdma_cm: {to: 192.0.2.1, device: rxe0}
  - name: verbs-ok
    verbs: {to: 192.0.2.1, device: rxe0}
  - name: verbs-down
    verbs: {to: 192.0.2.1, device: rxe0, count: 3, timeout: 2s}
  - name: verbs-no-device
    verbs: {to: 192.0.2.1, device: mlx5_0}
  - name: ib-ok
    ib: {device: ibx0, to_lid: 2, count: 28}
  - name: ib-cannot
    ib: {device: ibx0, to_lid: 3}
  - name: cm-cannot
    rdma_cm: {to: 192.0.2.3}
`)
	r := &scripted{run: func(_ context.Context, c host.Cmd) (host.Result, error) {
		switch strings.Join(c.Args, " ") {
		case "rping -c -a 192.0.2.1 -p 7174 -C 3 -v":
			if c.Timeout.String() != "5s" {
				t.Errorf("rping's timeout %s, want the probe's 5s", c.Timeout)
			}
			return sample(t, "rping-ok"), nil
		case "ibv_rc_pingpong -d rxe0 -i 1 -n 3 -p 18515 -g 1 192.0.2.1":
			if c.Timeout.String() == "2s" {
				return exitWith(c, sample(t, "ibv_rc_pingpong-peer-down"), 1)
			}
			return sample(t, "ibv_rc_pingpong-ok"), nil
		case "ibping -C ibx0 -P 1 -c 28 -L 2":
			return sample(t, "ibping-ok"), nil
		case "ibping -C ibx0 -P 1 -c 3 -L 3":
			return exitWith(c, sample(t, "ibping-no-device"), 255)
		case "rping -c -a 192.0.2.3 -p 7174 -C 3 -v":
			return exitWith(c, sample(t, "rping-no-device"), 19)
		}
		t.Errorf("unexpected %s", c)
		return host.Result{}, errors.New("unexpected")
	}}
	h := fixtureHost(t, r)
	res, err := Run(context.Background(), h, spec)
	by := map[string]Result{}
	for _, x := range res {
		by[x.Name] = x
	}
	if len(res) != len(spec.Probes) || res[0].Name != "cm-ok" || res[6].Name != "cm-cannot" {
		t.Fatalf("results not in spec order: %+v", res)
	}
	want := map[string]struct {
		outcome Outcome
		reason  string
		command bool
	}{
		"cm-ok":           {OutcomePassed, "3/3 answered by 192.0.2.1", true},
		"verbs-ok":        {OutcomePassed, "3/3 answered by 192.0.2.1", true},
		"verbs-down":      {OutcomeFailed, "192.0.2.1: client read/write: No space left on device", true},
		"verbs-no-device": {OutcomeError, "no RDMA device mlx5_0 on this host (devices: ibx0, rxe0)", false},
		"ib-ok":           {OutcomePassed, "28/28 answered by lid 2", true},
		"ib-cannot":       {OutcomeError, "Failed to open 'mlx5_0' port '1'", true}, // the sample's own device,
		"cm-cannot":       {OutcomeError, "No RDMA devices were detected", true},
	}
	for name, w := range want {
		x := by[name]
		if x.Outcome != w.outcome || x.Passed != (w.outcome == OutcomePassed) || !strings.Contains(x.Reason, w.reason) || (x.Command != "") != w.command {
			t.Errorf("%s: %+v, want %s with %q (command %v)", name, x, w.outcome, w.reason, w.command)
		}
	}
	if x := by["verbs-ok"]; x.RTTms != 0.511 {
		t.Errorf("verbs rtt %v, want 0.511 (511.00 usec/iter)", x.RTTms)
	}
	if x := by["cm-ok"]; x.RTTms <= 0 {
		t.Errorf("rdma_cm rtt %v: want the wall time per round trip", x.RTTms)
	}
	var names []string
	for _, e := range unjoin(err) {
		var te *ToolError
		if !errors.As(e, &te) {
			t.Errorf("not a ToolError: %v", e)
			continue
		}
		names = append(names, te.Probe)
	}
	if strings.Join(names, " ") != "verbs-no-device ib-cannot cm-cannot" {
		t.Errorf("Run's error names %v, want the three that could not run: %v", names, err)
	}
}

// TestRunRunnerErrors: what Run makes of the runner's own errors.
func TestRunRunnerErrors(t *testing.T) {
	spec := parseSpec(t, "version: 1\nprobes:\n  - name: cm\n    rdma_cm: {to: 192.0.2.1, count: 3, timeout: 2s}\n")
	cases := []struct {
		name    string
		run     func(c host.Cmd) (host.Result, error)
		outcome Outcome
		reason  string
	}{
		{"timed out, nothing answered", func(c host.Cmd) (host.Result, error) {
			return host.Result{}, &host.ExitError{Cmd: c, Code: -1, Err: host.ErrTimeout}
		}, OutcomeFailed, "no answer from 192.0.2.1 within 2s"},
		{"timed out after two", func(c host.Cmd) (host.Result, error) {
			ok := sample(t, "rping-ok")
			two := ok.Stdout[:strings.LastIndex(strings.TrimSuffix(string(ok.Stdout), "\n"), "\n")+1]
			return host.Result{}, &host.ExitError{Cmd: c, Code: -1, Stdout: two, Err: host.ErrTimeout}
		}, OutcomeFailed, "2/3 answered by 192.0.2.1 within 2s"},
		{"peer unreachable", func(c host.Cmd) (host.Result, error) {
			return exitWith(c, sample(t, "rping-peer-down"), 255)
		}, OutcomeFailed, "192.0.2.1: RDMA_CM_EVENT_UNREACHABLE (error -110)"},
		{"exit status only", func(c host.Cmd) (host.Result, error) {
			return exitWith(c, host.Result{}, 3)
		}, OutcomeFailed, "0/3 answered by 192.0.2.1 (rping exit status 3)"},
		// Every round trip answered, then the tool failed (rping's
		// teardown): its exit status fails the probe.
		{"all answered, exit status 255", func(c host.Cmd) (host.Result, error) {
			return exitWith(c, sample(t, "rping-ok"), 255)
		}, OutcomeFailed, "3/3 answered by 192.0.2.1 (rping exit status 255)"},
		{"exit 0 with fewer replies", func(c host.Cmd) (host.Result, error) {
			ok := sample(t, "rping-ok")
			return host.Result{Stdout: ok.Stdout[:strings.Index(string(ok.Stdout), "\n")+1]}, nil
		}, OutcomeFailed, "1/3 answered by 192.0.2.1"},
		{"not installed", func(c host.Cmd) (host.Result, error) {
			return host.Result{}, &host.ExitError{Cmd: c, Code: -1, Err: host.ErrNotFound}
		}, OutcomeError, "rping is not installed (Debian/Ubuntu: apt-get install rdmacm-utils; RHEL: dnf install librdmacm-utils)"},
		{"interrupted", func(c host.Cmd) (host.Result, error) {
			return host.Result{}, &host.ExitError{Cmd: c, Code: -1, Err: host.ErrInterrupted}
		}, OutcomeError, "rping -c -a 192.0.2.1 -p 7174 -C 3 -v: interrupted"},
		{"start error", func(c host.Cmd) (host.Result, error) {
			return host.Result{}, errors.New("fork/exec: resource temporarily unavailable")
		}, OutcomeError, "fork/exec: resource temporarily unavailable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := fixtureHost(t, &scripted{run: func(_ context.Context, cmd host.Cmd) (host.Result, error) { return c.run(cmd) }})
			res, err := Run(context.Background(), h, spec)
			if len(res) != 1 {
				t.Fatalf("results: %v", res)
			}
			x := res[0]
			if x.Outcome != c.outcome || x.Passed || x.Reason != c.reason {
				t.Errorf("%+v, want %s: %q", x, c.outcome, c.reason)
			}
			if (err != nil) != (c.outcome == OutcomeError) {
				t.Errorf("error %v for outcome %s", err, x.Outcome)
			}
			if x.Outcome == OutcomeError && x.Command != "" {
				t.Errorf("a tool that never ran has a command line %q", x.Command)
			}
		})
	}

	// A runner that knows the tool is missing is not asked to run it.
	r := &scripted{run: func(_ context.Context, c host.Cmd) (host.Result, error) {
		t.Errorf("ran %s", c)
		return host.Result{}, nil
	}}
	res, err := Run(context.Background(), fixtureHost(t, looking{r, nil}), spec)
	if err == nil || len(res) != 1 || res[0].Outcome != OutcomeError || !strings.Contains(res[0].Reason, "rping is not installed") {
		t.Errorf("missing rping: %+v %v", res, err)
	}
	// A tree the inventory cannot read is Run's own error.
	root := t.TempDir()
	sysfsTree(t, root, map[string]string{"sys/class/infiniband": "not a directory"})
	fsys, ferr := host.NewRootFS(root)
	if ferr != nil {
		t.Fatal(ferr)
	}
	bad := &host.Host{FS: fsys, Runner: r, Kernel: scriptedKernel{}}
	if res, err := Run(context.Background(), bad, spec); err == nil || res != nil {
		t.Errorf("unreadable inventory: %v %v", res, err)
	}
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// TestPingStoppedAfterAWarning: ping printed its header and a warning on
// stderr (a real run's, testdata/real/ping-warning), then the runner
// stopped it before its statistics: the probe ran and got no answer; the
// warning does not make it one that could not run.
func TestPingStoppedAfterAWarning(t *testing.T) {
	spec := parseSpec(t, "version: 1\nprobes:\n  - name: p\n    ping: {to: 192.0.2.2, interface: rfa1, count: 1, timeout: 1s}\n")
	real := sample(t, "ping-warning")
	header := real.Stdout[:strings.Index(string(real.Stdout), "\n")+1]
	h := fixtureHost(t, &scripted{run: func(_ context.Context, c host.Cmd) (host.Result, error) {
		return host.Result{}, &host.ExitError{Cmd: c, Code: -1, Stdout: header, Stderr: real.Stderr, Err: host.ErrTimeout}
	}})
	res, err := Run(context.Background(), h, spec)
	if err != nil || len(res) != 1 || res[0].Outcome != OutcomeFailed || res[0].Reason != "no answer from 192.0.2.2 within 1s" {
		t.Errorf("%+v %v", res, err)
	}
}
