// Package mstsrc checks the src-* cases of testdata/real/mstconfig (the
// mstflint 4.22, 4.25 and 4.26 layouts, of which no capture is public)
// by a second route: it prints the same device and rows with the printf
// formats of mlxconfig/mlxcfg_ui.cpp at each tag, transcribed below from
// Mellanox/mstflint's source. It shares no code with the emulator
// (sim/mlxemu) or rdmaform's parser (providers/firmware/mlxfmt): a layout
// that both got wrong the same way would still differ from these formats.
package mstsrc

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// layout holds what differs between the tags, each as the tag's source
// has it (mlxconfig/mlxcfg_ui.cpp).
type layout struct {
	tag string
	// printOpening: printf("%-16s%-16s\n", "Device type:", devType), ...
	opening string
	// printConfHeader with showDefault and showCurrent (the -e query):
	// printf(header, "Configurations:", "Default", "Current", NEXT_STR).
	header string
	// printSingleParam's row start: before 4.25 the literal
	// "         %-44s" (nine spaces when nothing differs); from 4.25
	// "%s%s     %-44s" with diff " " and readOnly "  ".
	row func(name string) string
	// printValue: "%-16u" for a number, "%-16s" for TEXT(n);
	// printParam prints "N/A" for an unknown value in the same width.
	num, text string
	// PRINT_SPACE_IF_NEEDED(width): a space before the next cell.
	space func(width int) bool
}

const nextStr = "Next Boot" // #define NEXT_STR "Next Boot"

var layouts = map[string]layout{
	"src-g2-cx5-query-e": {
		tag:     "v4.22.0-1",
		opening: "%-16s%-16s\n",
		header:  "%-16s%44s%16s%18s",
		row:     func(n string) string { return fmt.Sprintf("         %-44s", n) },
		num:     "%-16d", text: "%-16s",
		space: func(w int) bool { return w > 16 },
	},
	"src-g3-cx5-query-e": {
		tag:     "v4.25.0-1",
		opening: "%-16s%-16s\n",
		header:  "%-16s%44s%16s%18s",
		row:     func(n string) string { return fmt.Sprintf("%s%s     %-44s", " ", "  ", n) },
		num:     "%-16d", text: "%-16s",
		space: func(w int) bool { return w > 16 },
	},
	"src-g4-cx5-query-e": {
		tag:     "v4.26.0-1",
		opening: "%-20s%-20s\n",
		header:  "%-20s%39s%21s%23s",
		row:     func(n string) string { return fmt.Sprintf("%s%s     %-44s", " ", "  ", n) },
		num:     "%-20d", text: "%-20s",
		space: func(w int) bool { return w >= 20 },
	},
}

// value is one cell: the tool's text for it (strVal; "" for a number)
// and its number.
type value struct {
	text string
	num  uint32
}

// The device and rows are those of the real G1 capture
// testdata/real/mstconfig/issue-sno48-query-e (openshift/sriov-network-
// operator issue #48): what a real ConnectX-5 answered. Default, Current
// and Next Boot are equal in it, so no row has a '*' and no footer follows.
var (
	device = [][2]string{
		{"Device type:", "ConnectX5"},
		{"Name:", "MCX556A-ECA_Ax"},
		{"Description:", "ConnectX-5 VPI adapter card; EDR IB (100Gb/s) and 100GbE; dual-port QSFP28; PCIe3.0 x16; tall bracket; ROHS R6"},
		{"Device:", "0000:02:00.1"},
	}
	rows = []struct {
		name string
		v    value // the same in Default, Current and Next Boot
	}{
		{"MEMIC_BAR_SIZE", value{"", 0}},
		{"MEMIC_SIZE_LIMIT", value{"_256KB", 1}},
	}
)

// render is queryDevCfg's output for `mstconfig -e -d DEV q` at one tag:
// printOpening, printf("\n"), printConfHeader, printf("\n"), then
// printSingleParam per row.
func render(l layout) string {
	var b strings.Builder
	b.WriteString("\nDevice #1:\n")
	b.WriteString("----------\n\n")
	for _, d := range device {
		fmt.Fprintf(&b, l.opening, d[0], d[1])
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, l.header, "Configurations:", "Default", "Current", nextStr)
	b.WriteString("\n")
	// printValue: a plain number when the text is empty or the number
	// itself; otherwise TEXT(number). It returns printf's count.
	printValue := func(v value) int {
		if v.text == "" || v.text == fmt.Sprint(v.num) {
			s := fmt.Sprintf(l.num, v.num)
			b.WriteString(s)
			return len(s)
		}
		s := fmt.Sprintf(l.text, fmt.Sprintf("%s(%d)", v.text, v.num))
		b.WriteString(s)
		return len(s)
	}
	for _, r := range rows {
		b.WriteString(l.row(r.name))
		width := printValue(r.v) // Default
		if l.space(width) {
			b.WriteString(" ")
		}
		width = printValue(r.v) // Current
		if l.space(width) {
			b.WriteString(" ")
		}
		printValue(r.v) // Next Boot
		b.WriteString("\n")
	}
	return b.String()
}

// TestSourceLayouts: each src-* case is, byte for byte, what its tag's
// printf formats print for the real capture's device and rows.
func TestSourceLayouts(t *testing.T) {
	for name, l := range layouts {
		t.Run(name, func(t *testing.T) {
			got, err := os.ReadFile("../../../testdata/real/mstconfig/" + name + ".stdout")
			if err != nil {
				t.Fatal(err)
			}
			if want := render(l); string(got) != want {
				t.Errorf("%s differs from what mstflint %s's formats print:\n--- file\n%q\n--- formats\n%q", name, l.tag, got, want)
			}
		})
	}
}
