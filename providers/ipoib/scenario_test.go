package ipoib_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/sim"
)

// simHost drives a simulated host through the real command line.
type simHost struct {
	t     *testing.T
	dir   string
	calls string
}

func newSim(t *testing.T, profile string) *simHost {
	t.Helper()
	h := &simHost{t: t, dir: filepath.Join(t.TempDir(), "host"), calls: filepath.Join(t.TempDir(), "calls")}
	h.run("", 0, "sim", "new", h.dir, "--profile", profile)
	return h
}

// newSimState creates a simulated host from a prepared state (faults).
func newSimState(t *testing.T, st *sim.State) *simHost {
	t.Helper()
	h := &simHost{t: t, dir: filepath.Join(t.TempDir(), "host"), calls: filepath.Join(t.TempDir(), "calls")}
	if _, err := sim.Create(h.dir, st); err != nil {
		t.Fatal(err)
	}
	return h
}

// run runs rdmaform with the spec on stdin, requires the exit code and
// returns stdout and stderr together.
func (h *simHost) run(spec string, want int, args ...string) string {
	h.t.Helper()
	var out, errb bytes.Buffer
	env := cli.Env{Stdin: strings.NewReader(spec), Stdout: &out, Stderr: &errb,
		Environ: []string{"RDMAFORM_SIM_CALLS=" + h.calls, "NO_COLOR=1"}}
	if args[0] != "sim" {
		args = append([]string{"--sim", h.dir}, args...)
	}
	if got := cli.Run(args, env); got != want {
		h.t.Fatalf("rdmaform %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), got, want, out.String(), errb.String())
	}
	// rdmaform talks to the simulated NetworkManager over its D-Bus
	// door: no (emulated) nmcli runs, in any command.
	b, _ := host.ReadLocalFile(h.calls, nil)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "nmcli") {
			h.t.Errorf("rdmaform %s ran %s", strings.Join(args, " "), l)
		}
	}
	return out.String() + errb.String()
}

func (h *simHost) plan(spec string, want int) string { return h.run(spec, want, "plan", "-f", "-") }

// apply applies the spec and requires the plan after it to be empty.
func (h *simHost) applyThenEmpty(spec string) string {
	h.t.Helper()
	out := h.run(spec, 0, "apply", "-f", "-", "--yes")
	if p := h.plan(spec, 0); !strings.Contains(p, "No changes") {
		h.t.Errorf("plan after apply is not empty:\n%s", p)
	}
	return out
}

// changingCalls returns the NetworkManager D-Bus calls that change
// profiles since the last call; no nmcli may have run.
func (h *simHost) changingCalls() []string {
	h.t.Helper()
	b, _ := host.ReadLocalFile(h.calls, nil)
	if err := host.WriteLocalFile(h.calls, nil, 0o644); err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "nmcli") {
			h.t.Errorf("nmcli ran: %s", l)
		}
		if strings.HasPrefix(l, "NetworkManager ") && !strings.HasPrefix(l, "NetworkManager ListConnections") {
			out = append(out, l)
		}
	}
	return out
}

func (h *simHost) state() *sim.State {
	h.t.Helper()
	s, err := sim.Open(h.dir)
	if err != nil {
		h.t.Fatal(err)
	}
	return s.State()
}

func (h *simHost) tool(args ...string) host.Result {
	h.t.Helper()
	s, err := sim.Open(h.dir)
	if err != nil {
		h.t.Fatal(err)
	}
	r, _ := s.RunTool(context.Background(), args)
	return r
}

// netdev returns the simulated netdev's IPoIB view, or nil.
func (h *simHost) netdev(name string) *sim.Netdev {
	for _, n := range h.state().Netdevs {
		if n.Name == name {
			n.Boot = nil
			return n
		}
	}
	return nil
}

const storage = `version: 1
ipoib:
  - name: ib0-storage
    parent: ib0
    pkey: 0x8002
    mtu: 2000
    ipv4: {addresses: [192.0.2.1/24], gateway: 192.0.2.254, dns: [192.0.2.253]}
    ipv6: {addresses: ["2001:db8:1::1/64"]}
`

const uuid1 = "5eed0000-0000-4000-8000-000000000001"

func TestSimCreatePKeyChild(t *testing.T) {
	h := newSim(t, "cx6-vpi-ib")
	p := h.plan(storage, 2)
	for _, want := range []string{"+ ipoib[ib0-storage]", "interface: ib0.8002", "pkey: 0x8002", "ipv6.addresses: 2001:db8:1::1/64", "state: up", "Plan: 1 to add, 0 to change, 0 to remove."} {
		if !strings.Contains(p, want) {
			t.Errorf("plan lacks %q:\n%s", want, p)
		}
	}
	h.changingCalls()
	h.applyThenEmpty(storage)
	want := []string{
		"NetworkManager AddConnection2 ib0-storage connection.interface-name=ib0.8002 infiniband.transport-mode=datagram infiniband.parent=ib0 ipv4.method=manual ipv6.method=manual" +
			" infiniband.mtu=2000 infiniband.p-key=0x8002 ipv4.addresses=192.0.2.1/24 ipv4.gateway=192.0.2.254 ipv4.dns=192.0.2.253 ipv6.addresses=2001:db8:1::1/64",
		"NetworkManager ActivateConnection ib0-storage",
	}
	if diff := cmp.Diff(want, h.changingCalls()); diff != "" {
		t.Errorf("NetworkManager calls (-want +got):\n%s", diff)
	}
	wantDev := &sim.Netdev{Name: "ib0.8002", Kind: "ipoib", MTU: 2000, Up: true, MAC: h.netdev("ib0").MAC,
		Addrs: []string{"192.0.2.1/24", "2001:db8:1::1/64"}, Device: "mlx5_0", Port: 1, PKey: 0x8002, Mode: "datagram"}
	if diff := cmp.Diff(wantDev, h.netdev("ib0.8002")); diff != "" {
		t.Errorf("child netdev (-want +got):\n%s", diff)
	}

	// NetworkManager brings it up again after a reboot.
	h.run("", 0, "sim", "reboot", h.dir)
	h.plan(storage, 0)
	if h.netdev("ib0.8002") == nil {
		t.Errorf("ib0.8002 missing after reboot")
	}
}

func TestSimModifyMTUOnly(t *testing.T) {
	h := newSim(t, "cx6-vpi-ib")
	h.applyThenEmpty(storage)
	h.changingCalls()
	spec := strings.Replace(storage, "mtu: 2000", "mtu: 1500", 1)
	p := h.plan(spec, 2)
	for _, want := range []string{"~ ipoib[ib0-storage]", "mtu: 2000 -> 1500", "state: up -> re-activate", "Plan: 0 to add, 1 to change, 0 to remove."} {
		if !strings.Contains(p, want) {
			t.Errorf("plan lacks %q:\n%s", want, p)
		}
	}
	h.applyThenEmpty(spec)
	want := []string{"NetworkManager Update2 ib0-storage infiniband.mtu=1500", "NetworkManager ActivateConnection ib0-storage"}
	if diff := cmp.Diff(want, h.changingCalls()); diff != "" {
		t.Errorf("NetworkManager calls (-want +got):\n%s", diff)
	}
	if got := h.netdev("ib0.8002").MTU; got != 1500 {
		t.Errorf("ib0.8002 MTU %d after apply, want 1500", got)
	}
}

func TestSimDown(t *testing.T) {
	h := newSim(t, "cx6-vpi-ib")
	h.applyThenEmpty(storage)
	h.changingCalls()
	spec := storage + "    state: down\n"
	h.applyThenEmpty(spec)
	want := []string{"NetworkManager Update2 ib0-storage connection.autoconnect=no", "NetworkManager DeactivateConnection ib0-storage"}
	if diff := cmp.Diff(want, h.changingCalls()); diff != "" {
		t.Errorf("NetworkManager calls (-want +got):\n%s", diff)
	}
	if n := h.netdev("ib0.8002"); n != nil {
		t.Errorf("child interface still exists after down: %+v", n)
	}
	// A reboot does not bring it back.
	h.run("", 0, "sim", "reboot", h.dir)
	h.plan(spec, 0)
}

func TestSimAbsent(t *testing.T) {
	h := newSim(t, "cx6-vpi-ib")
	h.applyThenEmpty(storage)
	h.changingCalls()
	spec := storage + "    state: absent\n"
	if p := h.plan(spec, 2); !strings.Contains(p, "- ipoib[ib0-storage]") {
		t.Errorf("plan lacks the delete:\n%s", p)
	}
	h.applyThenEmpty(spec)
	if diff := cmp.Diff([]string{"NetworkManager Delete ib0-storage"}, h.changingCalls()); diff != "" {
		t.Errorf("NetworkManager calls (-want +got):\n%s", diff)
	}
	if st := h.state(); len(st.NM.Profiles) != 0 || h.netdev("ib0.8002") != nil {
		t.Errorf("profile or child interface left: %+v", st.NM.Profiles)
	}
}

func TestSimUnmanagedUntouched(t *testing.T) {
	h := newSim(t, "cx6-vpi-ib")
	if r := h.tool("nmcli", "connection", "add", "type", "infiniband", "con-name", "site-ib1", "connection.interface-name", "ib1", "infiniband.mtu", "1800"); !strings.Contains(string(r.Stdout), "successfully added") {
		t.Fatalf("add: %s %s", r.Stdout, r.Stderr)
	}
	h.tool("nmcli", "connection", "up", "id", "site-ib1")
	before := h.state().NM.Profiles
	h.changingCalls()
	h.applyThenEmpty(storage)
	theirs := before[0].Settings["connection.uuid"]
	calls := h.changingCalls()
	if len(calls) != 2 {
		t.Errorf("nmcli calls: %q, want an add and an up", calls)
	}
	for _, c := range calls {
		if strings.Contains(c, theirs) || strings.Contains(c, "site-ib1") {
			t.Errorf("call touches the unmanaged profile: %s", c)
		}
	}
	after := h.state().NM.Profiles
	if len(after) != 2 {
		t.Fatalf("profiles after apply: %+v", after)
	}
	if diff := cmp.Diff(before[0], after[0]); diff != "" {
		t.Errorf("unmanaged profile changed (-before +after):\n%s", diff)
	}
	if got := h.netdev("ib1").MTU; got != 1800 {
		t.Errorf("ib1 MTU %d, want 1800 (set by the unmanaged profile)", got)
	}
}

func TestSimActivationFailureKeepsProfile(t *testing.T) {
	st, err := sim.NewState("cx6-vpi-ib", "node1", 0)
	if err != nil {
		t.Fatal(err)
	}
	const nmMsg = "Connection activation failed: The IP config of the active connection was invalid"
	st.Faults = []sim.Fault{{NM: "ActivateConnection", DBusError: host.NMErrActivationFailed, Stderr: nmMsg + "\n", Times: 1}}
	h := newSimState(t, st)
	out := h.run(storage, 1, "apply", "-f", "-", "--yes")
	for _, want := range []string{
		`ipoib[ib0-storage]: connection "ib0-storage" (uuid ` + uuid1 + `): activation failed; the saved profile is kept and stays down`,
		"NetworkManager ActivateConnection: rdmaform.ActivationFailed: " + nmMsg,
		"NetworkManager could not activate it on this host",
		"Apply: 0 applied, 1 failed, 0 skipped.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("apply output lacks %q:\n%s", want, out)
		}
	}
	p := h.plan(storage, 2)
	if !strings.Contains(p, "~ ipoib[ib0-storage]") || !strings.Contains(p, "state: down -> up") {
		t.Errorf("plan after the failure does not show the connection down:\n%s", p)
	}
	h.applyThenEmpty(storage)
}

func TestSimConnectedMode(t *testing.T) {
	t.Run("refused on enhanced IPoIB", func(t *testing.T) {
		h := newSim(t, "cx6-vpi-ib")
		h.tool("nmcli", "connection", "add", "type", "infiniband", "con-name", "cm", "connection.interface-name", "ib0", "infiniband.transport-mode", "connected")
		r := h.tool("nmcli", "connection", "up", "id", "cm")
		if diff := cmp.Diff("Error: Connection activation failed: InfiniBand device does not support connected mode\n", string(r.Stderr)); diff != "" {
			t.Errorf("stderr (-want +got):\n%s", diff)
		}
		if n := h.netdev("ib0"); n.Mode != "datagram" {
			t.Errorf("ib0 mode %q, want datagram", n.Mode)
		}
		// rdmaform says so at plan time instead of failing at apply.
		spec := "version: 1\nipoib:\n  - name: cm2\n    parent: ib1\n    mode: connected\n"
		if p := h.plan(spec, 1); !strings.Contains(p, "ConnectX-4 and later run IPoIB in datagram mode only") {
			t.Errorf("plan:\n%s", p)
		}
	})
	t.Run("ConnectX-3 runs it", func(t *testing.T) {
		h := newSim(t, "cx3-mlx4")
		spec := "version: 1\nipoib:\n  - name: cm\n    parent: ib0\n    mode: connected\n    mtu: 65520\n    ipv4: {addresses: [10.0.0.1/16]}\n"
		h.applyThenEmpty(spec)
		n := h.netdev("ib0")
		if n.Mode != "connected" || n.MTU != 65520 || !n.Up {
			t.Errorf("ib0 after apply: mode %q MTU %d up %v, want connected 65520 true", n.Mode, n.MTU, n.Up)
		}
	})
}

// TestSimWaitsForFirmware: a port on Ethernet whose firmware is staged to
// InfiniBand defers the connection until the reboot, then creates it.
func TestSimWaitsForFirmware(t *testing.T) {
	h := newSim(t, "cx6-vpi-ib")
	fw := "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params:\n        LINK_TYPE_P1: %s\n"
	h.run(fmt.Sprintf(fw, "ETH"), 3, "apply", "-f", "-", "--yes")
	h.run("", 0, "sim", "reboot", h.dir)
	spec := fmt.Sprintf(fw, "IB") + "ipoib:\n  - name: ib0-storage\n    parent: ib0\n    pkey: 0x8002\n"
	const deferred = "? ipoib[ib0-storage] waits for LINK_TYPE_P1=IB on 0000:3b:00.0 (reboot)"
	if p := h.plan(spec, 2); !strings.Contains(p, deferred) {
		t.Errorf("plan lacks %q:\n%s", deferred, p)
	}
	if out := h.run(spec, 3, "apply", "-f", "-", "--yes"); !strings.Contains(out, deferred) {
		t.Errorf("apply lacks %q:\n%s", deferred, out)
	}
	h.run("", 0, "sim", "reboot", h.dir)
	if p := h.plan(spec, 2); !strings.Contains(p, "+ ipoib[ib0-storage]") {
		t.Errorf("plan after the reboot lacks the connection:\n%s", p)
	}
	h.applyThenEmpty(spec)
	if h.netdev("ib0.8002") == nil {
		t.Errorf("ib0.8002 missing after apply")
	}
}
