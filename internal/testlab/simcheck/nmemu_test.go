package simcheck_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/providers/ipoib/nmcli"
	"github.com/rdmaform/rdmaform/sim/nmemu"
)

// With an IPoIB device on the simulated host, up succeeds, the P_Key child
// appears, down and delete remove it, and the state survives JSON.
func TestActivationOnSimulatedDevice(t *testing.T) {
	st := &nmemu.State{Devices: []nmemu.Device{{Name: "ib0", LinkLayer: "InfiniBand"}, {Name: "ib1", LinkLayer: "Ethernet"}}}
	c := &nmcli.Client{Run: emuRunner(st)}
	ctx := t.Context()
	a, err := c.Add(ctx, storage())
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Add(ctx, child())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Up(ctx, a); err != nil {
		t.Fatalf("up on ib0: %v", err)
	}
	if err := c.Up(ctx, b); err != nil {
		t.Fatalf("up of P_Key child: %v", err)
	}
	if !hasDevice(st, "ib0.8002") {
		t.Errorf("P_Key child not created: %+v", st.Devices)
	}
	ps, err := c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !ps[0].Active || ps[0].Device != "ib0" || !ps[1].Active || ps[1].Device != "ib0.8002" {
		t.Errorf("active state not read back: %+v", ps)
	}
	o, _, x := nmemu.Run(nmcli.ListArgs(), st, nil)
	want := "ib0-storage:5eed0000-0000-4000-8000-000000000001:infiniband:ib0:yes:activated\nib0.8002:5eed0000-0000-4000-8000-000000000002:infiniband:ib0.8002:yes:activated\n"
	if x != 0 || string(o) != want {
		t.Errorf("list = %d %q", x, o)
	}
	o, _, _ = nmemu.Run(nmcli.DownArgs(b), st, nil)
	if string(o) != "Connection 'ib0.8002' successfully deactivated (D-Bus active path: /org/freedesktop/NetworkManager/ActiveConnection/2)\n" {
		t.Errorf("down = %q", o)
	}
	if hasDevice(st, "ib0.8002") {
		t.Errorf("P_Key child left after down")
	}

	p := nmcli.Profile{Name: "eth-port", InterfaceName: "ib1", PKey: -1}
	u, err := c.Add(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	_, e, x := nmemu.Run(nmcli.UpArgs(u), st, nil)
	if x != 4 || string(e) != "Error: Connection activation failed: No suitable device found for this connection (device ib0 not available because profile is not compatible with device (mismatching interface name)).\n" {
		t.Errorf("up on an Ethernet port = %d %q", x, e)
	}

	js, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back nmemu.State
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(st, &back); d != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", d)
	}
}

func TestNotRunning(t *testing.T) {
	st := &nmemu.State{NotRunning: true}
	c := &nmcli.Client{Run: emuRunner(st)}
	if _, err := c.List(t.Context()); !nmcli.IsNotRunning(err) {
		t.Errorf("List: %v, want not running", err)
	}
	_, e, x := nmemu.Run(nmcli.RunningArgs(), st, nil)
	if x != 8 || string(e) != "Error: NetworkManager is not running.\n" {
		t.Errorf("general = %d %q", x, e)
	}
}

func hasDevice(st *nmemu.State, name string) bool {
	for _, d := range st.Devices {
		if d.Name == name {
			return true
		}
	}
	return false
}
