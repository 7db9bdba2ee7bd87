package mlxfmt

import (
	"fmt"
	"strings"
)

// Layout is the version family of the mlxconfig/mstconfig table layout. The
// families differ in cell widths, header alignment, row prefix, the rule for
// the space between cells, read-only marks and error wording (see
// reference/formats.md §1.4). The zero value is LayoutUnknown.
type Layout int

const (
	LayoutUnknown Layout = iota
	// G1 is mstflint ≤ 4.21 (Debian 12's mstconfig): 16-wide cells, 36-wide names.
	G1
	// G2 is 4.22–4.24: 44-wide names.
	G2
	// G3 is 4.25: 8-character row prefix with RO marks.
	G3
	// G4 is 4.26–4.30: 20-wide cells, always one space between cells.
	G4
	// G5 is 4.31–4.35 (MFT 4.3x): like G4 with a wider header.
	G5
	// G6 is 4.36+: 33-wide cells, 48-wide names, header cells left-aligned.
	G6
)

// Layouts lists every known family, oldest first.
func Layouts() []Layout { return []Layout{G1, G2, G3, G4, G5, G6} }

// String returns "G1".."G6", or "unknown".
func (l Layout) String() string {
	switch l {
	case LayoutUnknown:
		return "unknown"
	case G1, G2, G3, G4, G5, G6:
		return fmt.Sprintf("G%d", int(l))
	}
	return fmt.Sprintf("Layout(%d)", int(l))
}

// ParseLayout reads "G1".."G6" (any case).
func ParseLayout(s string) (Layout, error) {
	for _, l := range Layouts() {
		if strings.EqualFold(s, l.String()) {
			return l, nil
		}
	}
	return LayoutUnknown, fmt.Errorf("mlxfmt: unknown layout %q (want G1..G6)", s)
}

// MarshalText writes the layout as "G1".."G6" in JSON and YAML.
func (l Layout) MarshalText() ([]byte, error) {
	if l < G1 || l > G6 {
		return nil, fmt.Errorf("mlxfmt: cannot marshal %v", l)
	}
	return []byte(l.String()), nil
}

// UnmarshalText reads "G1".."G6".
func (l *Layout) UnmarshalText(b []byte) error {
	v, err := ParseLayout(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// geometry holds the printf widths of one family.
type geometry struct {
	info      int // "%-Ns%-Ns" of the Device #1 block
	nameWidth int // %-Ns of the parameter name
	cell      int // %-Ns of a value cell
	// spaceIfWider: G1–G3 print a space between cells only when the previous
	// cell printed more than cell characters; G4+ print one when it printed
	// at least cell characters, which is always.
	strictGreater bool
	marks         bool // G3+: 8-char prefix "%s%s     " with RO marks
	// Header right-alignment widths (G1–G5): no -e, and with -e the first
	// column, the middle column and Next Boot.
	hdrOnly, hdrFirst, hdrMid, hdrNext int
	leftHeader                         bool // G6: "%-56s" then "%-33s" cells
}

func (l Layout) geometry() geometry {
	switch l {
	case G1:
		return geometry{info: 16, nameWidth: 36, cell: 16, strictGreater: true, hdrOnly: 38, hdrFirst: 36, hdrMid: 16, hdrNext: 18}
	case G2:
		return geometry{info: 16, nameWidth: 44, cell: 16, strictGreater: true, hdrOnly: 46, hdrFirst: 44, hdrMid: 16, hdrNext: 18}
	case G3:
		return geometry{info: 16, nameWidth: 44, cell: 16, strictGreater: true, marks: true, hdrOnly: 46, hdrFirst: 44, hdrMid: 16, hdrNext: 18}
	case G4:
		return geometry{info: 20, nameWidth: 44, cell: 20, marks: true, hdrOnly: 41, hdrFirst: 39, hdrMid: 21, hdrNext: 23}
	case G6:
		return geometry{info: 20, nameWidth: 48, cell: 33, marks: true, leftHeader: true}
	}
	// G5, and the unknown layout rendered as the most common MFT family.
	return geometry{info: 20, nameWidth: 44, cell: 20, marks: true, hdrOnly: 46, hdrFirst: 44, hdrMid: 20, hdrNext: 18}
}

// newUnknownParamWording reports whether the family says
// "Failed to find Param / TLV with name 'X' port 0 module -1" (mstflint 4.34+)
// rather than "Unknown Parameter: X". G5 spans 4.31–4.35; rdmaform treats it
// as the newer wording, which current MFT 4.3x releases print.
func (l Layout) newUnknownParamWording() bool { return l >= G5 }

// openFailureTwice reports whether a failed device open is printed twice on
// the query path (mstflint 4.36+).
func (l Layout) openFailureTwice() bool { return l == G6 }
