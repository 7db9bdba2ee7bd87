package plan

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTextSpellsBooleansAsJSON: a firmware boolean that mlxconfig prints
// as False and a spec writes as true is spelt one way in text, as JSON
// writes it (false -> true), in a change and in a pending item; values
// that are not all booleans keep their spelling (True next to 1 is not
// a boolean attribute, IB and ETH are names).
func TestTextSpellsBooleansAsJSON(t *testing.T) {
	p := &Plan{
		Changes: []*Change{{Address: Addr("firmware", "0000:3b:00.0"), Action: Update, Activation: NextBoot,
			Attributes: []Attr{
				{Name: "SRIOV_EN", Before: "False", After: "true"},
				{Name: "DCBX_WILLING_P1", Before: "True", After: "FALSE"},
				{Name: "ODD", Before: "True", After: "1"},
				{Name: "LINK_TYPE_P1", Before: "IB", After: "ETH"},
			}}},
		Pending: []Pending{{Address: Addr("firmware", "0000:3b:00.0"), Attribute: "SRIOV_EN", Current: "False", NextBoot: "True"}},
	}
	p.Finish()
	var b bytes.Buffer
	if err := WriteText(&b, p, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	want := `  ~ firmware[0000:3b:00.0]                       after reboot
      SRIOV_EN: false -> true
      DCBX_WILLING_P1: true -> false
      ODD: True -> 1
      LINK_TYPE_P1: IB -> ETH
  ! firmware[0000:3b:00.0] SRIOV_EN staged for next boot (current false, next true)

Plan: 0 to add, 1 to change, 0 to remove. Reboot required.
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
}
