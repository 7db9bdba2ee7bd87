package ipoib_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/nmlab"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/ipoib"
	"github.com/rdmaform/rdmaform/schema"
	"github.com/rdmaform/rdmaform/sim"
)

// labHost is rdmaform's provider on a rooted host whose sysfs is a
// ConnectX-6 on InfiniBand (ib0, ib1; rendered by the simulator) and
// whose commands are real: nmcli talks to the lab's NetworkManager.
type labHost struct {
	t   *testing.T
	lab *nmlab.Lab
	h   *host.Host
}

func newLabHost(t *testing.T) *labHost {
	lab := nmlab.Start(t)
	st, err := sim.NewState("cx6-vpi-ib", "node1", 0)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "root")
	if _, err := sim.Create(dir, st); err != nil {
		t.Fatal(err)
	}
	// The provider never runs nmcli: a guard stands for it on PATH.
	h, err := host.NewRooted(dir, lab.GuardedEnv())
	if err != nil {
		t.Fatal(err)
	}
	return &labHost{t: t, lab: lab, h: h}
}

var providersUnderTest = []plan.Provider{ipoib.New()}

func (l *labHost) plan(spec string) *plan.Plan {
	l.t.Helper()
	s, rep := schema.Parse("host.yaml", []byte(spec))
	if len(rep) > 0 {
		l.t.Fatalf("spec: %v", rep)
	}
	res, err := plan.Build(context.Background(), l.h, s, providersUnderTest)
	if err != nil {
		l.t.Fatal(err)
	}
	if len(res.Plan.Errors) > 0 {
		l.t.Fatalf("plan findings: %v", res.Plan.Errors)
	}
	return res.Plan
}

func (l *labHost) apply(p *plan.Plan) apply.Outcome {
	return apply.Run(context.Background(), l.h, p, providersUnderTest, apply.Options{})
}

// capture is show's spec of the host, by the provider under test.
func (l *labHost) capture() *schema.Spec {
	l.t.Helper()
	c, err := plan.Capture(context.Background(), l.h, providersUnderTest, plan.CaptureOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	return c.Spec
}

// show reads a profile back with nmcli itself, field by field.
func (l *labHost) show(name string, fields ...string) (map[string]string, int) {
	r := l.lab.Nmcli("-t", "-f", strings.Join(fields, ","), "connection", "show", "id", name)
	got := map[string]string{}
	for _, line := range strings.Split(string(r.Stdout), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			got[k] = v
		}
	}
	return got, r.Exit
}

// changes renders a plan's changes as "ACTION ADDRESS name=before->after".
func changes(p *plan.Plan) []string {
	var out []string
	for _, c := range p.Changes {
		s := c.Action.String() + " " + c.Address.String()
		for _, a := range c.Attributes {
			s += " " + a.Name + "=" + a.Before + "->" + a.After
		}
		out = append(out, s)
	}
	return out
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

const labSpec = `version: 1
ipoib:
  - name: ib0-storage
    parent: ib0
    pkey: 0x8002
    mtu: 2000
    ipv4: {addresses: [192.0.2.1/24], gateway: 192.0.2.254, dns: [192.0.2.253]}
    ipv6: {addresses: ["2001:db8:1::1/64"]}
    state: down
`

func TestRealNetworkManager(t *testing.T) {
	l := newLabHost(t)
	if r := l.lab.Nmcli("connection", "add", "type", "infiniband", "con-name", "site-ib1", "ifname", "ib1", "infiniband.mtu", "1800"); r.Exit != 0 {
		t.Fatalf("adding the unmanaged profile: %s", r.Stderr)
	}
	fields := []string{"connection.id", "connection.interface-name", "connection.autoconnect", "infiniband.mtu", "infiniband.transport-mode",
		"infiniband.p-key", "infiniband.parent", "ipv4.method", "ipv4.addresses", "ipv4.gateway", "ipv4.dns",
		"ipv6.method", "ipv6.addresses", "ipv6.gateway", "ipv6.dns"}
	theirs, _ := l.show("site-ib1", fields...)

	// Create: every field reads back as the spec says.
	p := l.plan(labSpec)
	if len(p.Changes) != 1 || p.Changes[0].Action != plan.Create {
		t.Fatalf("plan: %q, want one create", changes(p))
	}
	if out := l.apply(p); out.Err != nil {
		t.Fatalf("apply: %v", out.Err)
	}
	want := map[string]string{
		"connection.id": "ib0-storage", "connection.interface-name": "ib0.8002", "connection.autoconnect": "no",
		"infiniband.mtu": "2000", "infiniband.transport-mode": "datagram", "infiniband.p-key": "0x8002", "infiniband.parent": "ib0",
		"ipv4.method": "manual", "ipv4.addresses": "192.0.2.1/24", "ipv4.gateway": "192.0.2.254", "ipv4.dns": "192.0.2.253",
		"ipv6.method": "manual", "ipv6.addresses": "2001:db8:1::1/64", "ipv6.gateway": "", "ipv6.dns": "",
	}
	got, _ := l.show("ib0-storage", fields...)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("profile after create (-want +got):\n%s", diff)
	}
	if p := l.plan(labSpec); len(p.Changes) != 0 {
		t.Errorf("plan after create: %q, want none", changes(p))
	}

	// Modify: only what differs.
	spec := strings.Replace(labSpec, "mtu: 2000", "mtu: 1500", 1)
	spec = strings.Replace(spec, "[192.0.2.1/24]", "[192.0.2.1/24, 192.0.2.2/24]", 1)
	p = l.plan(spec)
	if diff := cmp.Diff([]string{"update ipoib[ib0-storage] mtu=2000->1500 ipv4.addresses=192.0.2.1/24->192.0.2.1/24,192.0.2.2/24"}, changes(p)); diff != "" {
		t.Errorf("modify plan (-want +got):\n%s", diff)
	}
	if out := l.apply(p); out.Err != nil {
		t.Fatalf("apply: %v", out.Err)
	}
	want["infiniband.mtu"], want["ipv4.addresses"] = "1500", "192.0.2.1/24, 192.0.2.2/24"
	got, _ = l.show("ib0-storage", fields...)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("profile after modify (-want +got):\n%s", diff)
	}
	if p := l.plan(spec); len(p.Changes) != 0 {
		t.Errorf("plan after modify: %q, want none", changes(p))
	}

	// Activation fails here (no IPoIB device): the error names the
	// connection, the command and NetworkManager's message; the profile
	// is kept and the next plan says it is not up.
	up := strings.Replace(spec, "state: down", "state: up", 1) + "  - name: ib1-new\n    parent: ib1\n    state: up\n"
	p = l.plan(up)
	if diff := cmp.Diff([]string{
		"update ipoib[ib0-storage] autoconnect=false->true state=down->up",
		"create ipoib[ib1-new] interface=->ib1 mode=->datagram mtu=->auto ipv4.method=->disabled ipv6.method=->disabled state=->up",
	}, changes(p)); diff != "" {
		t.Errorf("activation plan (-want +got):\n%s", diff)
	}
	out := l.apply(p)
	if diff := cmp.Diff([]plan.Address{plan.Addr("ipoib", "ib0-storage"), plan.Addr("ipoib", "ib1-new")}, out.Failed); diff != "" {
		t.Errorf("failed changes (-want +got):\n%s", diff)
	}
	var ce *ipoib.ConnError
	if !errors.As(out.Err, &ce) || ce.Step != ipoib.StepUp || ce.UUID == "" || !ipoib.IsActivationFailed(ce) {
		t.Fatalf("error %v: want a *ConnError of a failed activation", out.Err)
	}
	for _, w := range []string{`connection "ib0-storage" (uuid `, "activation failed; the saved profile is kept", "NetworkManager ActivateConnection: org.freedesktop.NetworkManager.UnknownDevice: ", "(NetworkManager could not activate it on this host)"} {
		if !strings.Contains(out.Err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, out.Err)
		}
	}
	for _, name := range []string{"ib0-storage", "ib1-new"} {
		if _, code := l.show(name, "connection.id"); code != 0 {
			t.Errorf("profile %s gone after the failed activation (nmcli exit %d)", name, code)
		}
	}
	p = l.plan(up)
	if diff := cmp.Diff([]string{"update ipoib[ib0-storage] state=down->up", "update ipoib[ib1-new] state=down->up"}, changes(p)); diff != "" {
		t.Errorf("plan after the failed activation (-want +got):\n%s", diff)
	}

	// Absent: both go, and the plan after is empty.
	gone := "version: 1\nipoib:\n  - name: ib0-storage\n    parent: ib0\n    state: absent\n  - name: ib1-new\n    parent: ib1\n    state: absent\n"
	p = l.plan(gone)
	if len(p.Changes) != 2 {
		t.Fatalf("delete plan: %q", changes(p))
	}
	if out := l.apply(p); out.Err != nil {
		t.Fatalf("apply: %v", out.Err)
	}
	for _, name := range []string{"ib0-storage", "ib1-new"} {
		if _, code := l.show(name, "connection.id"); code != 10 {
			t.Errorf("nmcli connection show id %s: exit %d after delete, want 10", name, code)
		}
	}
	if p := l.plan(gone); len(p.Changes) != 0 {
		t.Errorf("plan after delete: %q, want none", changes(p))
	}

	// The profile rdmaform does not manage is as it was.
	after, code := l.show("site-ib1", fields...)
	if code != 0 {
		t.Fatalf("unmanaged profile gone")
	}
	if diff := cmp.Diff(theirs, after); diff != "" {
		t.Errorf("unmanaged profile changed (-before +after):\n%s", diff)
	}
	if len(keys(after)) != len(fields) {
		t.Errorf("unmanaged profile read back %d fields, want %d", len(after), len(fields))
	}
}

// TestRealWithoutNetworkManager: with no system bus, and with a bus
// where NetworkManager does not run (the lab's, NetworkManager stopped),
// the plan has one finding, the provider's at the spec's root as with
// nmcli: NetworkManager is not running, with the D-Bus error.
func TestRealWithoutNetworkManager(t *testing.T) {
	st, err := sim.NewState("cx6-vpi-ib", "node1", 0)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "root")
	if _, err := sim.Create(dir, st); err != nil {
		t.Fatal(err)
	}
	lab := nmlab.Start(t)
	lab.StopNetworkManager()
	for _, c := range []struct{ name, bus, want string }{
		{"no bus", "unix:path=" + filepath.Join(t.TempDir(), "no-bus"), "NetworkManager ListConnections: rdmaform.NoSystemBus: connecting to the system bus"},
		{"stopped", lab.Bus(), "NetworkManager ListConnections: org.freedesktop.DBus.Error.ServiceUnknown: The name org.freedesktop.NetworkManager was not provided by any .service files"},
	} {
		h, err := host.NewRooted(dir, []string{"PATH=" + os.Getenv("PATH"), "DBUS_SYSTEM_BUS_ADDRESS=" + c.bus})
		if err != nil {
			t.Fatal(err)
		}
		s, _ := schema.Parse("host.yaml", []byte(labSpec))
		res, err := plan.Build(context.Background(), h, s, providersUnderTest)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Plan.Errors) != 1 {
			t.Fatalf("%s: findings: %v, want one", c.name, res.Plan.Errors)
		}
		f := res.Plan.Errors[0]
		for _, w := range []string{"NetworkManager is not running; the ipoib section needs it (systemctl start NetworkManager)", c.want} {
			if !strings.Contains(f.Message, w) {
				t.Errorf("%s: finding lacks %q:\n%s", c.name, w, f.Message)
			}
		}
		if f.Path != "$" || !strings.HasPrefix(f.Message, "ipoib: ") {
			t.Errorf("%s: finding %s, want the provider's at the spec's root, as with nmcli", c.name, f)
		}
	}
}

// TestRealCaptureKeepsAutoconnect: on a real NetworkManager, profiles
// that are inactive with autoconnect yes (the device is absent) and
// inactive with autoconnect no are captured so that planning the capture
// changes nothing, autoconnect included; applying it changes no profile.
func TestRealCaptureKeepsAutoconnect(t *testing.T) {
	l := newLabHost(t)
	for _, args := range [][]string{
		{"connection", "add", "type", "infiniband", "con-name", "auto-yes", "ifname", "ib1"},
		{"connection", "add", "type", "infiniband", "con-name", "auto-no", "ifname", "ib0", "connection.autoconnect", "no"},
	} {
		if r := l.lab.Nmcli(args...); r.Exit != 0 {
			t.Fatalf("nmcli %v: %s", args, r.Stderr)
		}
	}
	before := map[string]map[string]string{}
	for _, n := range []string{"auto-yes", "auto-no"} {
		before[n], _ = l.show(n, "connection.autoconnect", "connection.interface-name")
	}
	text, err := schema.Marshal(l.capture())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name: auto-yes", "autoconnect: true", "name: auto-no"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("the capture lacks %q:\n%s", want, text)
		}
	}
	if strings.Count(string(text), "autoconnect:") != 1 {
		t.Errorf("autoconnect is written for a profile whose state already implies it:\n%s", text)
	}
	p := l.plan(string(text))
	if len(p.Changes) != 0 {
		t.Errorf("plan of the capture: %q, want none\n%s", changes(p), text)
	}
	for _, n := range []string{"auto-yes", "auto-no"} {
		after, _ := l.show(n, "connection.autoconnect", "connection.interface-name")
		if diff := cmp.Diff(before[n], after); diff != "" {
			t.Errorf("%s changed (-before +after):\n%s", n, diff)
		}
	}
}

// TestRealLimitedMember: a limited-membership P_Key, acknowledged in the
// spec, is configured as written on a real NetworkManager (p-key 0x0002,
// child ib0.0002), plans empty after, and show captures it back with
// membership: limited (the capture plans empty too). Made full, it is
// changed to 0x8002 on ib0.8002.
func TestRealLimitedMember(t *testing.T) {
	l := newLabHost(t)
	spec := "version: 1\nipoib:\n  - {name: lim, parent: ib0, pkey: 0x0002, membership: limited, state: down}\n"
	p := l.plan(spec)
	if out := l.apply(p); out.Err != nil {
		t.Fatalf("apply: %v", out.Err)
	}
	fields := []string{"infiniband.p-key", "connection.interface-name", "infiniband.parent"}
	got, _ := l.show("lim", fields...)
	if diff := cmp.Diff(map[string]string{"infiniband.p-key": "0x0002", "connection.interface-name": "ib0.0002", "infiniband.parent": "ib0"}, got); diff != "" {
		t.Errorf("NetworkManager's profile (-want +got):\n%s", diff)
	}
	if p := l.plan(spec); len(p.Changes) != 0 {
		t.Errorf("plan after apply: %q, want none", changes(p))
	}
	text, err := schema.Marshal(l.capture())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "pkey: 0x0002") || !strings.Contains(string(text), "membership: limited") {
		t.Errorf("the capture lacks the limited key:\n%s", text)
	}
	if p := l.plan(string(text)); len(p.Changes) != 0 {
		t.Errorf("plan of the capture: %q, want none\n%s", changes(p), text)
	}
	full := strings.Replace(spec, "membership: limited", "membership: full", 1)
	p = l.plan(full)
	if diff := cmp.Diff([]string{"update ipoib[lim] interface=ib0.0002->ib0.8002 pkey=0x0002->0x8002"}, changes(p)); diff != "" {
		t.Errorf("plan to full membership (-want +got):\n%s", diff)
	}
	if out := l.apply(p); out.Err != nil {
		t.Fatalf("apply: %v", out.Err)
	}
	got, _ = l.show("lim", fields...)
	if got["infiniband.p-key"] != "0x8002" || got["connection.interface-name"] != "ib0.8002" {
		t.Errorf("after the change to full membership: %v", got)
	}
	if p := l.plan(full); len(p.Changes) != 0 {
		t.Errorf("plan after apply: %q, want none", changes(p))
	}
}
