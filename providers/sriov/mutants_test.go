package sriov

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/plan"
)

// TestCountAboveTotalWithStagedNumVFs: a count above sriov_totalvfs waits
// for a NUM_OF_VFS staged for the next boot that covers it, at the limit
// (staged 16, count 16); one past it (17) is an error saying the staged
// value is not enough.
func TestCountAboveTotalWithStagedNumVFs(t *testing.T) {
	for _, tc := range []struct {
		num  string
		want string
	}{
		{"16", "deferred: waits for NUM_OF_VFS=16 on 0000:3b:00.0 (reboot); sriov_totalvfs is 8 now"},
		{"17", "error: 0000:3b:00.0 allows at most 8 VFs (sriov_totalvfs, from firmware NUM_OF_VFS); raise NUM_OF_VFS to at least 17 (firmware: params: {NUM_OF_VFS: 17}) and reboot; NUM_OF_VFS=16 staged for the next boot is not enough"},
	} {
		req := pfRequest(t, "sriov: {num_vfs: "+tc.num+"}\n", false)
		facts := plan.NewFacts()
		facts.StageParam("0000:3b:00.0", "NUM_OF_VFS", "16")
		prop := (&Provider{}).Plan(req, &Observed{PFs: map[int]*PF{0: ethPF()}}, facts)
		var got []string
		for _, d := range prop.Deferred {
			got = append(got, "deferred: "+d.Reason)
		}
		for _, e := range prop.Errors {
			got = append(got, "error: "+e.Message)
		}
		if strings.Join(got, "\n") != tc.want || len(prop.Changes) != 0 {
			t.Errorf("num_vfs %s: %q and %d changes, want %q", tc.num, got, len(prop.Changes), tc.want)
		}
	}
}

// TestPortGUIDAloneRebinds: a new port GUID alone also needs the VF's
// driver bound again (an InfiniBand VF takes either GUID only then), so
// the change rebinds and lists the VF's netdev as disrupted.
func TestPortGUIDAloneRebinds(t *testing.T) {
	req := pfRequest(t, "sriov:\n      num_vfs: 2\n      vfs:\n        - {vf: 1, port_guid: \"02:00:00:00:00:00:01:02\"}\n", true)
	pf := ibPF()
	pf.VFNetdev = []string{"ib0v0", "ib0v1"}
	prop := (&Provider{}).Plan(req, &Observed{PFs: map[int]*PF{0: pf}}, plan.NewFacts())
	if len(prop.Changes) != 1 || len(prop.Errors) != 0 {
		t.Fatalf("changes %v, errors %v; want one change", prop.Changes, prop.Errors)
	}
	c := prop.Changes[0]
	pl, err := plan.PayloadOf[*vfPayload](c)
	if err != nil || !pl.rebind || strings.Join(c.Disrupts, ",") != "ib0v1" {
		t.Errorf("payload %+v (%v), disrupts %v; want a rebind disrupting ib0v1", pl, err, c.Disrupts)
	}
}

// TestRevertOfACreatedVF: settings of a VF its own plan created are not
// put back one by one: the count's revert takes the VF away (an
// unconfirmed apply says so once, for the count).
func TestRevertOfACreatedVF(t *testing.T) {
	req := pfRequest(t, "sriov:\n      num_vfs: 2\n      vfs:\n        - {vf: 1, mac: \"02:00:00:00:00:61\"}\n", false)
	for _, tc := range []struct {
		name    string
		numVFs  int
		reverts []string
	}{
		{"created by the plan", 0, []string{"sriov[0000:3b:00.0]"}},
		{"there before", 2, []string{"sriov_vf[0000:3b:00.0/1]"}},
	} {
		pf := ethPF()
		pf.NumVFs = tc.numVFs
		prop := (&Provider{}).Plan(req, &Observed{PFs: map[int]*PF{0: pf}}, plan.NewFacts())
		var got []string
		for _, c := range prop.Changes {
			back, err := (&Provider{}).Revert(c)
			if err != nil {
				t.Fatal(err)
			}
			if back != nil {
				got = append(got, back.Address.String())
			}
		}
		if strings.Join(got, " ") != strings.Join(tc.reverts, " ") {
			t.Errorf("%s: reverts %q, want %q", tc.name, got, tc.reverts)
		}
	}
}

// TestRevertOfACountChange: putting back 8 VFs after a change to 4 is
// two writes, 0 then 8 (the kernel refuses a second non-zero count with
// EBUSY); putting back 0 is one.
func TestRevertOfACountChange(t *testing.T) {
	for _, tc := range []struct {
		before, after int
		writes        []int
	}{{8, 4, []int{0, 8}}, {0, 4, []int{0}}, {8, 0, []int{8}}} {
		req := pfRequest(t, fmt.Sprintf("sriov: {num_vfs: %d}\n", tc.after), false)
		pf := ethPF()
		pf.NumVFs = tc.before
		prop := (&Provider{}).Plan(req, &Observed{PFs: map[int]*PF{0: pf}}, plan.NewFacts())
		if len(prop.Changes) != 1 {
			t.Fatalf("%d -> %d: changes %v", tc.before, tc.after, prop.Changes)
		}
		back, err := (&Provider{}).Revert(prop.Changes[0])
		if err != nil || back == nil {
			t.Fatalf("revert: %v %v", back, err)
		}
		pl, err := plan.PayloadOf[*payload](back)
		if err != nil || fmt.Sprint(pl.writes) != fmt.Sprint(tc.writes) {
			t.Errorf("%d -> %d: revert writes %v (%v), want %v", tc.before, tc.after, pl.writes, err, tc.writes)
		}
	}
}
