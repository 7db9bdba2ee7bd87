package sriov

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/nmlab"
	"github.com/rdmaform/rdmaform/providers/ipoib/nmcli"
)

// TestRealNMOwners: on a real NetworkManager, the profiles with an sriov
// setting (one with total-vfs 4, one with the setting at its default 0)
// are the owners, a profile without the setting is not; read over D-Bus,
// no nmcli run (the guard on PATH).
func TestRealNMOwners(t *testing.T) {
	lab := nmlab.Start(t)
	for _, args := range [][]string{
		{"connection", "add", "type", "infiniband", "con-name", "plain", "ifname", "ib1", "connection.autoconnect", "no"},
		{"connection", "add", "type", "infiniband", "con-name", "vfs", "ifname", "ib0", "connection.autoconnect", "no", "sriov.total-vfs", "4"},
		{"connection", "add", "type", "infiniband", "con-name", "zero", "ifname", "ib2", "connection.autoconnect", "no", "sriov.total-vfs", "0"},
	} {
		if r := lab.Nmcli(args...); r.Exit != 0 {
			t.Fatalf("nmcli %v: %s", args, r.Stderr)
		}
	}
	h, err := host.NewRooted(t.TempDir(), lab.GuardedEnv())
	if err != nil {
		t.Fatal(err)
	}
	got, err := nmOwners(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	for k, o := range got {
		o.UUID = ""
		got[k] = o
	}
	want := map[string]nmcli.SRIOVOwner{
		"ib0": {Name: "vfs", Interface: "ib0", TotalVFs: "4"},
		"ib2": {Name: "zero", Interface: "ib2", TotalVFs: "0"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("owners (-want +got):\n%s", d)
	}
}
