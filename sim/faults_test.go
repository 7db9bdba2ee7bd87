package sim

import (
	"context"
	"strings"
	"testing"
)

// TestDropFault: a dropped operation succeeds without effect (the value
// stays), once with times: 1, and a drop carries nothing that makes it
// fail, hang or kill.
func TestDropFault(t *testing.T) {
	for _, f := range []Fault{
		{Write: "x", Drop: true, Errno: "EIO"},
		{Tool: "dcb", Drop: true, Exit: 1},
		{Tool: "dcb", Drop: true, Hang: true},
		{Tool: "dcb", Drop: true, Stderr: "no"},
		{Tool: "dcb", Drop: true, Stdout: "no"},
		{Netlink: "LinkSetVF", Drop: true, Kill: true},
	} {
		if err := f.Validate(); err == nil || !strings.Contains(err.Error(), "succeeds without effect") {
			t.Errorf("%+v: %v, want refused", f, err)
		}
	}
	st, err := NewState("cx5-roce", "node1", 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Create(t.TempDir(), st)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Host()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []Fault{{Write: "/etc/modules-load.d", Drop: true, Times: 1}, {Tool: "dcb", Match: "pfc set", Drop: true, Times: 1}} {
		if err := s.AddFault(f); err != nil {
			t.Fatal(err)
		}
	}
	file := "/etc/modules-load.d/rdmaform.conf"
	pfc := []string{"dcb", "pfc", "set", "dev", "ens1f0np0", "prio-pfc", "3:on"}
	for i, want := range []struct {
		file bool
		pfc  string
	}{{false, "3:off"}, {true, "3:on"}} {
		if err := h.FS.WriteFile(file, []byte("rdma_ucm\n"), 0o644); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if res, err := h.Run(context.Background(), pfc...); err != nil || len(res.Stdout)+len(res.Stderr) != 0 {
			t.Fatalf("dcb pfc set %d: %v %q %q", i, err, res.Stdout, res.Stderr)
		}
		if _, err := h.FS.ReadFile(file); (err == nil) != want.file {
			t.Errorf("after write %d: reading %s: %v, want it there: %t", i, file, err, want.file)
		}
		res, err := h.Run(context.Background(), "dcb", "pfc", "show", "dev", "ens1f0np0", "prio-pfc")
		if err != nil || !strings.Contains(string(res.Stdout), want.pfc) {
			t.Errorf("after set %d: %q (%v), want %s", i, res.Stdout, err, want.pfc)
		}
	}
}
