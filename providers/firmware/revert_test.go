package firmware_test

import (
	"context"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/firmware"
	"github.com/rdmaform/rdmaform/sim"
)

// TestRevertUnstages: an apply stages KEEP_IB_LINK_UP_P1=1 (ledger entry
// with its value, reboot marker); its revert (what a confirm timeout
// runs) stages back the value that runs, so nothing waits: the ledger
// entry leaves (no entry with an empty value), the marker goes, and the
// plan of the spec shows the change again, not a pending one. A marker
// that names another package stays, without rdmaform.
func TestRevertUnstages(t *testing.T) {
	for _, other := range []bool{false, true} {
		ctx := context.Background()
		st, err := sim.NewState("cx6-vpi-ib", "node1", 0)
		if err != nil {
			t.Fatal(err)
		}
		s, err := sim.Create(t.TempDir(), st)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := s.Host()
		if other {
			// Another package asked for a reboot before the apply.
			if err := h.FS.MkdirAll("/run", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := h.FS.WriteFile(firmware.RebootRequiredPkgs, []byte("linux-image-amd64\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := h.FS.WriteFile(firmware.RebootRequired, []byte("*** System restart required ***\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		spec := parse(t, "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params: {KEEP_IB_LINK_UP_P1: 1}\n")
		p := build(t, h, spec)
		prov := []plan.Provider{firmware.New()}
		out := apply.Run(ctx, h, p, prov, apply.Options{})
		if out.Err != nil || len(out.Applied) != 1 {
			t.Fatalf("apply: %+v", out)
		}
		l, err := firmware.ReadLedger(h.FS)
		if err != nil || len(l.Entries) != 1 || l.Entries[0].Value != "1" {
			t.Fatalf("ledger after the apply: %+v, %v", l, err)
		}
		if m, _ := firmware.ReadRebootMarker(h); !m.Required {
			t.Fatalf("no reboot marker after the apply")
		}
		rev := apply.Revert(ctx, h, p.Changes, prov, apply.Options{})
		if rev.Err != nil || len(rev.Applied) != 1 {
			t.Fatalf("revert: %+v", rev)
		}
		if l, err := firmware.ReadLedger(h.FS); err != nil || len(l.Entries) != 0 {
			t.Errorf("ledger after the revert (other package in the marker: %v): %+v, %v", other, l, err)
		}
		m, err := firmware.ReadRebootMarker(h)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"linux-image-amd64"}; other && (!m.Required || len(m.Packages) != 1 || m.Packages[0] != want[0]) {
			t.Errorf("marker after the revert: %+v, want another package's kept, without rdmaform", m)
		}
		if !other && (m.Required || len(m.Packages) != 0) {
			t.Errorf("marker after the revert: %+v, want none", m)
		}
		if p := build(t, h, spec); len(p.Pending) != 0 || len(p.Changes) != 1 {
			t.Errorf("plan after the revert: %d pending, %d changes; want the change again", len(p.Pending), len(p.Changes))
		}
	}
}

// TestOneResetQueryPerCard: values pending on both functions of one card
// (LINK_TYPE_P1 through .0, LINK_TYPE_P2 through .1) ask the reset tool
// how to activate them once for the card, not once per function (the
// query opens the device, a third of a second on a real adapter); a
// second card gets its own query.
func TestOneResetQueryPerCard(t *testing.T) {
	ctx := context.Background()
	st, err := sim.NewState("gpu-node", "node1", 2)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.Create(t.TempDir(), st)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := s.Host()
	spec := parse(t, `version: 1
devices:
  - pci: "0000:10:00.0"
    firmware:
      params: {LINK_TYPE_P1: ETH}
  - pci: "0000:10:00.1"
    firmware:
      params: {LINK_TYPE_P2: ETH}
  - pci: "0000:20:00.0"
    firmware:
      params: {LINK_TYPE_P1: ETH}
`)
	p := build(t, h, spec)
	if out := apply.Run(ctx, h, p, []plan.Provider{firmware.New()}, apply.Options{}); out.Err != nil {
		t.Fatalf("apply: %v", out.Err)
	}
	n := len(s.Calls())
	p = build(t, h, spec)
	if len(p.Pending) != 3 {
		t.Fatalf("%d pending, want 3: %+v", len(p.Pending), p.Pending)
	}
	queries := map[string]int{}
	for _, c := range s.Calls()[n:] {
		if f := strings.Fields(c); len(f) > 2 && strings.HasSuffix(f[0], "fwreset") && f[len(f)-1] == "query" {
			queries[f[2][:len("0000:10:00")]]++
		}
	}
	if queries["0000:10:00"] != 1 || queries["0000:20:00"] != 1 || len(queries) != 2 {
		t.Errorf("reset queries by card: %v, want one for each of 0000:10:00 and 0000:20:00\n%s", queries, strings.Join(s.Calls()[n:], "\n"))
	}
}
