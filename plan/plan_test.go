package plan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/schema"
)

func samplePlan() *Plan {
	p := &Plan{
		Changes: []*Change{
			{Address: Addr("rxe", "rxe0"), Action: Create, Activation: Runtime, stage: 4,
				Source: &Source{File: "host.yaml", Line: 31, Col: 5}, Attributes: []Attr{{Name: "netdev", After: "enp1s0"}}},
			{Address: Addr("firmware", "0000:81:00.0"), Action: Update, Activation: NextBoot, stage: 0,
				Source: &Source{File: "host.yaml", Line: 7, Col: 9}, Attributes: []Attr{{Name: "LINK_TYPE_P1", Before: "IB", After: "ETH"}}},
		},
		Pending:  []Pending{{Address: Addr("firmware", "0000:82:00.0"), Attribute: "NUM_OF_VFS", Current: "0", NextBoot: "8"}},
		Deferred: []Deferred{{Address: Addr("ipoib", "ib0-storage"), Reason: "waits for LINK_TYPE_P1=IB on 0000:82:00.0 (reboot)"}},
	}
	p.Finish()
	return p
}

// TestTextMatchesDesign renders the example of DESIGN.md §2.
func TestTextMatchesDesign(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, samplePlan(), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	want := `  ~ firmware[0000:81:00.0]                       after reboot   # host.yaml:7:9
      LINK_TYPE_P1: IB -> ETH
  + rxe[rxe0]                                    not persistent # host.yaml:31:5
      netdev: enp1s0
  ! firmware[0000:82:00.0] NUM_OF_VFS staged for next boot (current 0, next 8)
  ? ipoib[ib0-storage] waits for LINK_TYPE_P1=IB on 0000:82:00.0 (reboot)

Plan: 1 to add, 1 to change, 0 to remove. Reboot required.
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
}

func TestColourOnlyWhenAsked(t *testing.T) {
	var plain, color bytes.Buffer
	WriteText(&plain, samplePlan(), TextOptions{})
	WriteText(&color, samplePlan(), TextOptions{Color: true})
	if strings.Contains(plain.String(), "\x1b[") {
		t.Error("plain text has escape sequences")
	}
	if !strings.Contains(color.String(), "\x1b[33m~\x1b[0m") {
		t.Error("colour text has no coloured update mark")
	}
}

func TestJSONShape(t *testing.T) {
	b, err := samplePlan().JSON()
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got["format_version"] != float64(1) {
		t.Errorf("format_version = %v", got["format_version"])
	}
	first := got["changes"].([]any)[0].(map[string]any)
	if first["address"] != "firmware[0000:81:00.0]" || first["action"] != "update" || first["activation"] != "next-boot" {
		t.Errorf("first change = %v (changes are ordered by stage)", first)
	}
	src := first["source"].(map[string]any)
	if src["file"] != "host.yaml" || src["line"] != float64(7) || src["col"] != float64(9) {
		t.Errorf("source = %v", src)
	}
	sum := got["summary"].(map[string]any)
	if diff := cmp.Diff(map[string]any{"add": 1.0, "change": 1.0, "remove": 0.0, "reboot_required": true}, sum); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	// Round trip: the JSON form decodes back to the same plan.
	var back Plan
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Changes[0].Action != Update || back.Changes[0].Activation != NextBoot {
		t.Errorf("round trip lost action/activation: %+v", back.Changes[0])
	}
}

func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Plan
		want int
	}{
		{"empty", Plan{}, ExitOK},
		{"changes", Plan{Changes: []*Change{{Address: Addr("x", "a")}}}, ExitChanges},
		{"changes and pending", Plan{Changes: []*Change{{Address: Addr("x", "a")}}, Pending: []Pending{{}}}, ExitChanges},
		{"only pending", Plan{Pending: []Pending{{}}}, ExitReboot},
		{"only deferred", Plan{Deferred: []Deferred{{}}}, ExitReboot},
		{"errors win", Plan{Changes: []*Change{{Address: Addr("x", "a")}}, Errors: []schema.Finding{{Message: "x"}}}, ExitError},
	} {
		if got := tc.p.ExitCode(); got != tc.want {
			t.Errorf("%s: exit %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestSummaryLine(t *testing.T) {
	p := &Plan{}
	p.Finish()
	if got := SummaryLine(p); got != "No changes. The host matches the spec." {
		t.Errorf("empty plan: %q", got)
	}
	p = &Plan{Deferred: []Deferred{{Address: Addr("x", "a")}}}
	p.Finish()
	if got := SummaryLine(p); got != "Plan: 0 to add, 0 to change, 0 to remove. 1 deferred until a reboot." {
		t.Errorf("deferred only: %q", got)
	}
}
