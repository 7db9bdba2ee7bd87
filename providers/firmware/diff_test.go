package firmware

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/firmware/mlxfmt"
	"github.com/rdmaform/rdmaform/schema"
)

// request parses a spec for the one-card host below: a dual-port mlx5 VPI
// card with functions 0000:3b:00.0 (mlx5_0) and 0000:3b:00.1 (mlx5_1).
func request(t *testing.T, specYAML string) *plan.Request {
	t.Helper()
	spec, rep := schema.Parse("host.yaml", []byte(specYAML))
	if len(rep) > 0 {
		t.Fatalf("spec: %v", rep)
	}
	inv := &inventory.Inventory{Devices: []*inventory.Device{
		{Name: "mlx5_0", PCI: "0000:3b:00.0", Ports: []*inventory.Port{{Num: 1, LinkLayer: "InfiniBand"}}},
		{Name: "mlx5_1", PCI: "0000:3b:00.1", Ports: []*inventory.Port{{Num: 1, LinkLayer: "InfiniBand"}}},
	}}
	req := &plan.Request{Spec: spec, Inv: inv, Devices: make([]*inventory.Device, len(spec.Devices))}
	for i := range spec.Devices {
		kind, val := spec.Devices[i].Selector()
		req.Devices[i] = inv.Find(kind, val)
	}
	return req
}

// row is a queried parameter: current and next boot as the tool prints them.
func row(name, current, next string) mlxfmt.Param {
	return mlxfmt.Param{Name: name, Default: mlxfmt.ParseValue(current), Current: mlxfmt.ParseValue(current), NextBoot: mlxfmt.ParseValue(next)}
}

func observed(rows ...mlxfmt.Param) *Observed {
	a := &AdapterObs{Tool: MLXConfig, Device: "0000:3b:00.0", Info: mlxfmt.DeviceInfo{Type: "ConnectX6"},
		Params: map[string]mlxfmt.Param{}, Unknown: map[string]*mlxfmt.ToolError{}}
	for _, r := range rows {
		a.Params[r.Name] = r
	}
	return &Observed{Adapters: map[int]*AdapterObs{0: a}}
}

const oneParam = `version: 1
devices:
  - pci: "0000:3b:00.0"
    firmware:
      params:
        %s: %s
`

func spec1(name, value string) string {
	return strings.Replace(strings.Replace(oneParam, "%s", name, 1), "%s", value, 1)
}

// summary is what a test compares: changes with their attributes and set
// arguments, pending items, findings' paths, and staged links.
type summary struct {
	Changes  []string
	Sets     []string
	Pending  []string
	Findings []string
	Staged   []string
}

func summarize(prop plan.Proposal, facts *plan.Facts) summary {
	var s summary
	for _, c := range prop.Changes {
		for _, a := range c.Attributes {
			s.Changes = append(s.Changes, c.Address.String()+" "+c.Activation.String()+" "+a.Name+": "+a.Before+" -> "+a.After)
		}
		s.Sets = append(s.Sets, strings.Join(c.Payload.(*payload).sets, " "))
	}
	for _, p := range prop.Pending {
		s.Pending = append(s.Pending, p.Address.String()+" "+p.Attribute+" "+p.Current+" -> "+p.NextBoot)
	}
	for _, f := range prop.Errors {
		s.Findings = append(s.Findings, f.Path)
	}
	for _, pci := range []string{"0000:3b:00.0", "0000:3b:00.1"} {
		if st, ok := facts.LinkAtBoot(pci, 1); ok {
			s.Staged = append(s.Staged, pci+"/1 "+string(st.To)+" "+st.Reason())
		}
	}
	return s
}

func TestDiff(t *testing.T) {
	tests := []struct {
		name string
		spec string
		obs  *Observed
		want summary
	}{
		{name: "ETH equals ETH(2): nothing to do", spec: spec1("LINK_TYPE_P1", "ETH"), obs: observed(row("LINK_TYPE_P1", "ETH(2)", "ETH(2)"))},
		{name: "eth equals ETH(2)", spec: spec1("LINK_TYPE_P1", "eth"), obs: observed(row("LINK_TYPE_P1", "ETH(2)", "ETH(2)"))},
		{name: "2 equals ETH(2)", spec: spec1("LINK_TYPE_P1", "2"), obs: observed(row("LINK_TYPE_P1", "ETH(2)", "ETH(2)"))},
		{name: "ETH(2) equals ETH(2)", spec: spec1("LINK_TYPE_P1", `"ETH(2)"`), obs: observed(row("LINK_TYPE_P1", "ETH(2)", "ETH(2)"))},
		{name: "true equals True(1)", spec: spec1("SRIOV_EN", "true"), obs: observed(row("SRIOV_EN", "True(1)", "True(1)"))},
		{name: "True(1) equals True(1)", spec: spec1("SRIOV_EN", `"True(1)"`), obs: observed(row("SRIOV_EN", "True(1)", "True(1)"))},
		{name: "1 equals True(1)", spec: spec1("SRIOV_EN", "1"), obs: observed(row("SRIOV_EN", "True(1)", "True(1)"))},
		{
			name: "IB to ETH is a next-boot change that stages the link",
			spec: spec1("LINK_TYPE_P1", "ETH"), obs: observed(row("LINK_TYPE_P1", "IB(1)", "IB(1)")),
			want: summary{
				Changes: []string{"firmware[0000:3b:00.0] next-boot LINK_TYPE_P1: IB -> ETH"},
				Sets:    []string{"LINK_TYPE_P1=ETH"},
				Staged:  []string{"0000:3b:00.0/1 Ethernet waits for LINK_TYPE_P1=ETH on 0000:3b:00.0 (reboot)"},
			},
		},
		{
			name: "LINK_TYPE_P2 is port 1 of the second function",
			spec: spec1("LINK_TYPE_P2", "2"), obs: observed(row("LINK_TYPE_P2", "IB(1)", "IB(1)")),
			want: summary{
				Changes: []string{"firmware[0000:3b:00.0] next-boot LINK_TYPE_P2: IB -> 2"},
				Sets:    []string{"LINK_TYPE_P2=2"},
				Staged:  []string{"0000:3b:00.1/1 Ethernet waits for LINK_TYPE_P2=2 on 0000:3b:00.1 (reboot)"},
			},
		},
		{
			name: "staged but not current is pending, never set again",
			spec: spec1("LINK_TYPE_P1", "eth"), obs: observed(row("LINK_TYPE_P1", "IB(1)", "ETH(2)")),
			want: summary{
				Pending: []string{"firmware[0000:3b:00.0] LINK_TYPE_P1 IB -> ETH"},
				Staged:  []string{"0000:3b:00.0/1 Ethernet waits for LINK_TYPE_P1=eth on 0000:3b:00.0 (reboot)"},
			},
		},
		{
			name: "pending number",
			spec: spec1("NUM_OF_VFS", "8"), obs: observed(row("NUM_OF_VFS", "0", "8")),
			want: summary{Pending: []string{"firmware[0000:3b:00.0] NUM_OF_VFS 0 -> 8"}},
		},
		{
			name: "true is passed as True",
			spec: spec1("SRIOV_EN", "true"), obs: observed(row("SRIOV_EN", "False(0)", "False(0)")),
			want: summary{
				Changes: []string{"firmware[0000:3b:00.0] next-boot SRIOV_EN: False -> true"},
				Sets:    []string{"SRIOV_EN=True"},
			},
		},
		{
			name: "every changed parameter of an adapter in one change, spec order",
			spec: "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params:\n        SRIOV_EN: true\n        NUM_OF_VFS: 8\n        LINK_TYPE_P1: IB\n",
			obs:  observed(row("SRIOV_EN", "False(0)", "False(0)"), row("NUM_OF_VFS", "0", "0"), row("LINK_TYPE_P1", "IB(1)", "IB(1)")),
			want: summary{
				Changes: []string{
					"firmware[0000:3b:00.0] next-boot SRIOV_EN: False -> true",
					"firmware[0000:3b:00.0] next-boot NUM_OF_VFS: 0 -> 8",
				},
				Sets: []string{"SRIOV_EN=True NUM_OF_VFS=8"},
			},
		},
		{
			name: "unknown parameter is a finding at its spec line, no change",
			spec: spec1("LINK_TYPE_P3", "ETH"),
			obs: func() *Observed {
				o := observed()
				o.Adapters[0].Unknown["LINK_TYPE_P3"] = &mlxfmt.ToolError{Kind: mlxfmt.ErrUnknownParam, Param: "LINK_TYPE_P3", Message: "Failed to find Param / TLV with name 'LINK_TYPE_P3' port 0 module -1"}
				return o
			}(),
			want: summary{Findings: []string{"$.devices[0].firmware.params.LINK_TYPE_P3"}},
		},
		{
			name: "read-only parameter is a finding",
			spec: spec1("NUM_OF_VFS", "8"),
			obs: func() *Observed {
				r := row("NUM_OF_VFS", "0", "0")
				r.ReadOnly = true
				return observed(r)
			}(),
			want: summary{Findings: []string{"$.devices[0].firmware.params.NUM_OF_VFS"}},
		},
		{
			name: "an adapter that cannot be read is a finding at its firmware block",
			spec: spec1("NUM_OF_VFS", "8"),
			obs: func() *Observed {
				o := observed()
				o.Adapters[0].Err = mlxfmt.OpenDeviceError()
				return o
			}(),
			want: summary{Findings: []string{"$.devices[0].firmware"}},
		},
		{
			name: "two functions of one card disagreeing on a card parameter",
			spec: "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params:\n        SRIOV_EN: true\n  - pci: \"0000:3b:00.1\"\n    firmware:\n      params:\n        SRIOV_EN: false\n",
			obs: func() *Observed {
				o := observed(row("SRIOV_EN", "True(1)", "True(1)"))
				o.Adapters[1] = o.Adapters[0]
				return o
			}(),
			want: summary{
				Changes:  []string{"firmware[0000:3b:00.1] next-boot SRIOV_EN: True -> false"},
				Sets:     []string{"SRIOV_EN=False"},
				Findings: []string{"$.devices[1].firmware.params.SRIOV_EN"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request(t, tt.spec)
			facts := plan.NewFacts()
			got := summarize(diff(req, tt.obs, facts), facts)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("diff (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnknownParamFindingQuotesTheTool(t *testing.T) {
	req := request(t, spec1("LINK_TYPE_P3", "ETH"))
	o := observed()
	o.Adapters[0].Unknown["LINK_TYPE_P3"] = &mlxfmt.ToolError{Kind: mlxfmt.ErrUnknownParam, Param: "LINK_TYPE_P3", Message: "Failed to find Param / TLV with name 'LINK_TYPE_P3' port 0 module -1"}
	prop := diff(req, o, plan.NewFacts())
	if len(prop.Errors) != 1 {
		t.Fatalf("findings: %v", prop.Errors)
	}
	got := prop.Errors[0].String()
	want := "host.yaml:6:23: error: $.devices[0].firmware.params.LINK_TYPE_P3: mlxconfig does not know parameter LINK_TYPE_P3 on 0000:3b:00.0 (ConnectX6): -E- Failed to find Param / TLV with name 'LINK_TYPE_P3' port 0 module -1"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("finding (-want +got):\n%s", diff)
	}
}

func TestAffectedPort(t *testing.T) {
	mlx4 := &inventory.Device{Name: "mlx4_0", PCI: "0000:81:00.0", Ports: []*inventory.Port{{Num: 1}, {Num: 2}}}
	mlx5 := &inventory.Device{Name: "mlx5_0", PCI: "0000:3b:00.0", Ports: []*inventory.Port{{Num: 1}}}
	tests := []struct {
		name string
		pci  string
		n    int
		dev  *inventory.Device
		want string
	}{
		{"mlx5 P1 is function 0 port 1", "0000:3b:00.0", 1, mlx5, "0000:3b:00.0/1"},
		{"mlx5 P2 is function 1 port 1", "0000:3b:00.0", 2, mlx5, "0000:3b:00.1/1"},
		{"mlx5 P2 asked through function 1", "0000:3b:00.1", 2, mlx5, "0000:3b:00.1/1"},
		{"mlx4 P2 is port 2 of the function", "0000:81:00.0", 2, mlx4, "0000:81:00.0/2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pci, port := AffectedPort(tt.pci, tt.n, tt.dev)
			got := pci + "/" + string(rune('0'+port))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestLinkTypeForms: linklayer.OfLinkType reads every form of a LINK_TYPE
// value the way the firmware parser's comparison does (the tool prints
// IB(1), specs write ib, 1, 0x2, ...).
func TestLinkTypeForms(t *testing.T) {
	for _, v := range []string{"IB", "ib", "Ib", "1", "IB(1)", "0x1", "ETH", "eth", "2", "ETH(2)", "0x2", "VPI", "3", "VPI(3)", "0", "", "IB(2)"} {
		var want linklayer.LinkLayer
		switch {
		case mlxfmt.Equal(v, mlxfmt.Enum("IB", 1)):
			want = linklayer.InfiniBand
		case mlxfmt.Equal(v, mlxfmt.Enum("ETH", 2)):
			want = linklayer.Ethernet
		}
		if got := linklayer.OfLinkType(v); got != want {
			t.Errorf("OfLinkType(%q) = %q; the firmware parser's comparison says %q", v, got, want)
		}
	}
}

// TestPlanActivationFailure: a value staged and not current is pending in
// the boot it was staged in, and when the ledger has no entry for it (or
// one for another value); staged in an earlier boot it is an activation
// failure at its spec line, not pending (no reboot is asked for it), and
// still publishes its staged link, which waits for a firmware reset or a
// power cycle: what needs the link type is deferred as before the reboot,
// not an error of its own (activate -f SPEC resets the card and applies it).
func TestPlanActivationFailure(t *testing.T) {
	entry := func(boot, value string) *Ledger {
		return &Ledger{Entries: []LedgerEntry{{BootID: boot, Device: "0000:3b:00.0", Parameter: "LINK_TYPE_P1", Value: value, Tool: MSTConfig}}}
	}
	for _, tc := range []struct {
		name    string
		ledger  *Ledger
		boot    string
		failure bool
	}{
		{"no ledger", nil, "b1", false},
		{"staged this boot", entry("b1", "ETH"), "b1", false},
		{"another value staged before", entry("b0", "IB"), "b1", false},
		{"another device's entry", &Ledger{Entries: []LedgerEntry{{BootID: "b0", Device: "0000:3b:00.1", Parameter: "LINK_TYPE_P1", Value: "ETH"}}}, "b1", false},
		// A tree without a boot_id (--root of a copy) cannot tell a reboot.
		{"no boot_id", entry("b0", "ETH"), "", false},
		{"staged in an earlier boot", entry("b0", "ETH"), "b1", true},
		// The ledger holds the value as the tool echoes it; the spec asks
		// for the name: the same value, so the failure is raised.
		{"staged as ETH(2) in an earlier boot", entry("b0", "ETH(2)"), "b1", true},
		{"staged as eth in an earlier boot", entry("b0", "eth"), "b1", true},
		{"staged as IB(1) in an earlier boot", entry("b0", "IB(1)"), "b1", false},
		{"staged as ETH(2) this boot", entry("b1", "ETH(2)"), "b1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := request(t, spec1("LINK_TYPE_P1", "ETH"))
			obs := observed(row("LINK_TYPE_P1", "IB(1)", "ETH(2)"))
			obs.Ledger, obs.BootID = tc.ledger, tc.boot
			facts := plan.NewFacts()
			prop := diff(req, obs, facts)
			s := summarize(prop, facts)
			if !tc.failure {
				if len(prop.ActivationFailures) != 0 || len(s.Findings) != 0 || len(s.Pending) != 1 || len(s.Staged) != 1 {
					t.Errorf("want pending only: %+v, failures %+v", s, prop.ActivationFailures)
				}
				return
			}
			if len(s.Pending) != 0 || len(prop.ActivationFailures) != 1 || len(prop.Errors) != 1 {
				t.Fatalf("want one activation failure: %+v, failures %+v", s, prop.ActivationFailures)
			}
			if want := []string{"0000:3b:00.0/1 Ethernet waits for LINK_TYPE_P1=ETH on 0000:3b:00.0 (a reboot did not load it: a firmware reset or a power cycle)"}; !slices.Equal(s.Staged, want) {
				t.Errorf("staged links %q, want %q", s.Staged, want)
			}
			af, f := prop.ActivationFailures[0], prop.Errors[0]
			if af.Current != "IB" || af.Staged != "ETH" || af.BootID != "b0" || af.Tool != MSTConfig || af.Source == nil || af.Source.Line != 6 {
				t.Errorf("activation failure %+v", af)
			}
			if f.Path != "$.devices[0].firmware.params.LINK_TYPE_P1" || !strings.Contains(f.Message, "boot b0") || !strings.Contains(f.Message, "still runs IB") {
				t.Errorf("finding %v", f)
			}
		})
	}
}
