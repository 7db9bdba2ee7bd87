package mlxemu

// The emulator's own writer: how mlxconfig/mstconfig and mst print, by
// version family. rdmaform's parser (providers/firmware/mlxfmt) shares no
// code with it, so a layout the parser gets wrong cannot be printed wrong
// the same way here; the tests check this writer against real outputs
// (testdata/real) column for column.

import (
	"fmt"
	"strconv"
	"strings"
)

// Exit codes of mlxconfig/mstconfig (mlxcfg_status.h).
const (
	exitOK      = 0 // success, -h, -v
	exitAborted = 2 // the user did not answer y/yes at the prompt
	exitError   = 3 // any -E- error
)

// ToolError is one -E- message as the tools print it.
type ToolError struct {
	msg string
	// openDevice: the device was never opened, so no table is printed.
	openDevice bool
}

// Line is the error as printed, with its newline.
func (e *ToolError) Line() string { return "-E- " + e.msg + "\n" }

// Message is an -E- line with any message.
func Message(msg string) *ToolError { return &ToolError{msg: msg} }

// OpenDeviceError is "-E- Failed to open the device".
func OpenDeviceError() *ToolError {
	return &ToolError{msg: "Failed to open the device", openDevice: true}
}

// AbortedError is "-E- Aborted by user.".
func AbortedError() *ToolError { return &ToolError{msg: "Aborted by user."} }

// UnknownParamError is the unknown-parameter message in the wording of the
// layout's version.
func UnknownParamError(l Layout, name string) *ToolError {
	if l.newUnknownParamWording() {
		return &ToolError{msg: "Failed to find Param / TLV with name '" + name + "' port 0 module -1"}
	}
	return &ToolError{msg: "Unknown Parameter: " + name}
}

// ReadOnlyError is "-E- Operation is not supported (Read only TLV: tlv)".
func ReadOnlyError(tlv string) *ToolError {
	return &ToolError{msg: "Operation is not supported (Read only TLV: " + tlv + ")"}
}

// TooLargeError is what the tools print after "Applying... Failed!" for a
// value above the parameter's maximum (the quote is the tool's).
func TooLargeError(name string, max int64) *ToolError {
	return &ToolError{msg: "Parameter " + name + "' value is larger than maximum allowed " + strconv.FormatInt(max, 10)}
}

// UnknownValueError is "-E- Unknown value v".
func UnknownValueError(v string) *ToolError { return &ToolError{msg: "Unknown value " + v} }

// Cell is one value of a table as the tool prints it: a plain number,
// TEXT(number), Array[a..b]; the zero Cell is a value the firmware could
// not report, printed N/A.
type Cell struct {
	Text   string
	Num    int64
	HasNum bool
}

// NumCell is a plain number.
func NumCell(n int64) Cell { return Cell{Text: strconv.FormatInt(n, 10), Num: n, HasNum: true} }

// EnumCell is TEXT(number); the tool prints a bare number when the text is
// empty or spells the number.
func EnumCell(text string, n int64) Cell {
	if text == "" || text == strconv.FormatInt(n, 10) {
		return NumCell(n)
	}
	return Cell{Text: text + "(" + strconv.FormatInt(n, 10) + ")", Num: n, HasNum: true}
}

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
	return LayoutUnknown, fmt.Errorf("mlxemu: unknown layout %q (want G1..G6)", s)
}

// MarshalText writes the layout as "G1".."G6" in JSON and YAML.
func (l Layout) MarshalText() ([]byte, error) {
	if l < G1 || l > G6 {
		return nil, fmt.Errorf("mlxemu: cannot marshal %v", l)
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

// DeviceInfo is the "Device #1:" block of a query or set.
type DeviceInfo struct {
	Type        string // "Device type:", e.g. ConnectX6
	Name        string // "Name:", board part number or N/A
	Description string // "Description:"
	Device      string // "Device:", exactly what was passed to -d
}

// Row is one parameter of a table. Absent values (the zero Value) are only
// legal in columns the table does not show.
type Row struct {
	Name     string
	Default  Cell
	Current  Cell
	NextBoot Cell
	New      Cell // set only: the value being written
	ReadOnly bool
}

// Report is what a query or set prints for one device.
type Report struct {
	// Index is N of "Device #N:" (a query without -d lists every device);
	// 0 prints 1.
	Index  int
	Device DeviceInfo
	// Verbose is -e: show the Default and Current columns.
	Verbose bool
	// NoDefault and NoCurrent: the firmware cannot report that column; with
	// Verbose it is left out and a "Device Firmware does not support reading
	// ..." line follows the table.
	NoDefault, NoCurrent bool
	Rows                 []Row
	// Err ends the output early. ErrOpenDevice prints only the -E- line (the
	// device was never opened); any other error prints the device block and
	// the Configurations header first, as the tool does for an unknown
	// parameter, a read-only TLV or an unknown value.
	Err *ToolError
	// ApplyErr, for a set: the write failed after the prompt was answered.
	ApplyErr *ToolError
	// PowerCycle, for a set that succeeded: the firmware refused the warm
	// boot trigger, so the closing notice asks for a power cycle.
	PowerCycle bool
}

func (r Report) showDefault() bool { return r.Verbose && !r.NoDefault }
func (r Report) showCurrent() bool { return r.Verbose && !r.NoCurrent }

// Answer is how the "Apply new Configuration?" prompt of a set was answered.
type Answer int

const (
	// AnswerYesFlag is -y: the tool prints "y" itself.
	AnswerYesFlag Answer = iota
	// AnswerYes is "y" or "yes" read from stdin (not echoed to stdout).
	AnswerYes
	// AnswerNo is anything else read from stdin: nothing is written.
	AnswerNo
)

// String names the answer.
func (a Answer) String() string {
	switch a {
	case AnswerYesFlag:
		return "-y"
	case AnswerYes:
		return "yes"
	case AnswerNo:
		return "no"
	}
	return fmt.Sprintf("Answer(%d)", int(a))
}

// RenderQuery prints `mlxconfig -d DEV [-e] q [NAMES...]` for one device,
// byte for byte in the layout's version, and returns the tool's exit code.
func RenderQuery(l Layout, r Report) (out []byte, exit int) {
	var b strings.Builder
	if r.Err != nil && r.Err.openDevice {
		b.WriteString(r.Err.Line())
		if l.openFailureTwice() {
			b.WriteString(r.Err.Line())
		}
		return []byte(b.String()), exitError
	}
	if !writeTable(&b, l, r, false) {
		return []byte(b.String()), exitError
	}
	return []byte(b.String()), exitOK
}

// RenderSet prints `mlxconfig -d DEV [-e] [-y] set NAME=VALUE...` for one
// device: the table with a New column (rows in command-line order), the
// prompt and its outcome. It returns the tool's exit code: 0 applied,
// 2 aborted, 3 error.
func RenderSet(l Layout, r Report, a Answer) (out []byte, exit int) {
	var b strings.Builder
	if r.Err != nil && r.Err.openDevice {
		b.WriteString(r.Err.Line())
		return []byte(b.String()), exitError
	}
	if !writeTable(&b, l, r, true) {
		return []byte(b.String()), exitError
	}
	b.WriteString("\n Apply new Configuration? (y/n) [n] : ")
	switch a {
	case AnswerYesFlag:
		b.WriteString("y\n")
	case AnswerYes:
	default:
		b.WriteString(AbortedError().Line())
		return []byte(b.String()), exitAborted
	}
	if r.ApplyErr != nil {
		// The firmware refused the write after the prompt.
		b.WriteString("Applying... Failed!\n" + r.ApplyErr.Line())
		return []byte(b.String()), exitError
	}
	b.WriteString("Applying... Done!\n")
	if r.PowerCycle {
		b.WriteString("-I- Please power cycle machine to load new configurations.\n")
		return []byte(b.String()), exitOK
	}
	b.WriteString("-I- Please reboot machine to load new configurations.\n")
	return []byte(b.String()), exitOK
}

// writeTable writes the device block, the header, and unless r.Err is set
// the rows and footers. It reports false when it stopped at r.Err.
func writeTable(b *strings.Builder, l Layout, r Report, withNew bool) bool {
	g := l.geometry()
	info := func(label, value string) {
		fmt.Fprintf(b, "%-*s%-*s\n", g.info, label, g.info, value)
	}
	fmt.Fprintf(b, "\nDevice #%d:\n----------\n\n", max(r.Index, 1))
	info("Device type:", r.Device.Type)
	info("Name:", r.Device.Name)
	info("Description:", r.Device.Description)
	info("Device:", r.Device.Device)
	b.WriteString("\n")

	showDef, showCur := r.showDefault(), r.showCurrent()
	writeHeader(b, g, showDef, showCur, withNew)
	if r.Err != nil {
		b.WriteString(r.Err.Line())
		return false
	}

	differ, readOnly := false, false
	for _, row := range r.Rows {
		star := (showDef && !sameValue(row.NextBoot, row.Default)) ||
			(showCur && !sameValue(row.NextBoot, row.Current))
		differ = differ || star
		ro := g.marks && row.ReadOnly
		readOnly = readOnly || ro
		switch {
		case g.marks:
			mark, roMark := " ", "  "
			if star {
				mark = "*"
			}
			if ro {
				roMark = "RO"
			}
			fmt.Fprintf(b, "%s%s     %-*s", mark, roMark, g.nameWidth, row.Name)
		case star:
			fmt.Fprintf(b, "*        %-*s", g.nameWidth, row.Name)
		default:
			fmt.Fprintf(b, "         %-*s", g.nameWidth, row.Name)
		}
		var cells []Cell
		if showDef {
			cells = append(cells, row.Default)
		}
		if showCur {
			cells = append(cells, row.Current)
		}
		cells = append(cells, row.NextBoot)
		if withNew {
			cells = append(cells, row.New)
		}
		width := 0
		for _, c := range cells {
			if width > g.cell || (!g.strictGreater && width >= g.cell) {
				b.WriteByte(' ')
			}
			s := cellText(c)
			fmt.Fprintf(b, "%-*s", g.cell, s)
			width = max(len(s), g.cell)
		}
		b.WriteString("\n")
	}
	if differ {
		b.WriteString("The '*' shows parameters with next value different from default/current value.\n")
	}
	if readOnly {
		b.WriteString("\nThe 'RO' shows parameters which are for read only and cannot be changed\n")
	}
	if r.Verbose {
		const prefix = "Device Firmware does not support reading "
		switch {
		case r.NoDefault && r.NoCurrent:
			b.WriteString(prefix + "default and current configurations\n")
		case r.NoDefault:
			b.WriteString(prefix + "default configurations\n")
		case r.NoCurrent:
			b.WriteString(prefix + "current configurations\n")
		}
	}
	return true
}

func writeHeader(b *strings.Builder, g geometry, showDef, showCur, withNew bool) {
	if g.leftHeader {
		cols := []string{}
		if showDef {
			cols = append(cols, "Default")
		}
		if showCur {
			cols = append(cols, "Current")
		}
		cols = append(cols, "Next Boot")
		if withNew {
			cols = append(cols, "New")
		}
		fmt.Fprintf(b, "%-56s", "Configurations:")
		for i, c := range cols {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(b, "%-*s", g.cell, c)
		}
		b.WriteString("\n")
		return
	}
	fmt.Fprintf(b, "%-*s", g.info, "Configurations:")
	switch {
	case showDef && showCur:
		fmt.Fprintf(b, "%*s%*s%*s", g.hdrFirst, "Default", g.hdrMid, "Current", g.hdrNext, "Next Boot")
	case showDef:
		fmt.Fprintf(b, "%*s%*s", g.hdrFirst, "Default", g.hdrNext, "Next Boot")
	case showCur:
		fmt.Fprintf(b, "%*s%*s", g.hdrFirst, "Current", g.hdrNext, "Next Boot")
	default:
		fmt.Fprintf(b, "%*s", g.hdrOnly, "Next Boot")
	}
	if withNew {
		b.WriteString("       New")
	}
	b.WriteString("\n")
}

// cellText is what a cell prints; a missing value prints N/A, as the tool
// does for a value it could not read.
func cellText(v Cell) string {
	if v.Text == "" {
		return "N/A"
	}
	return v.Text
}

// sameValue compares two observed values the way the tool decides the '*'
// mark: by number when both have one.
func sameValue(a, b Cell) bool {
	if a.HasNum && b.HasNum {
		return a.Num == b.Num
	}
	return a.Text == b.Text
}

// MSTDeviceName is the /dev/mst node name MFT's `mst start` gives a PCI
// function: mt<PCI device id in decimal>_pciconf<index>, with ".<fn>" when
// the PCI function is not 0. index counts cards with the same device id.
// ConnectX-6 (0x101b), first card, function 1 → "mt4123_pciconf0.1".
func MSTDeviceName(pciDeviceID uint16, index, function int) string {
	name := fmt.Sprintf("mt%d_pciconf%d", pciDeviceID, index)
	if function != 0 {
		name += "." + strconv.Itoa(function)
	}
	return name
}

// MSTEntry is one device row of `mst status -v`.
type MSTEntry struct {
	// DeviceType is e.g. ConnectX6, or NA.
	DeviceType string
	// Rev is the chip revision printed as (rev:N), empty when DeviceType is NA.
	Rev string
	// MST is the /dev/mst node, or "" when the column shows NA (user-level
	// mode, modules not loaded).
	MST string
	// BDF as printed: "3b:00.0", or "0000:3b:00.0" on hosts with a non-zero
	// PCI domain.
	BDF string
	// RDMA is the RDMA device (mlx5_0); empty on eth-only ConnectX-3 ports.
	RDMA string
	// Netdevs without the "net-" prefix, in printed order.
	Netdevs []string
	// NUMA node, -1 when unknown.
	NUMA int
}

// MSTStatus is the output of `mst status -v`.
type MSTStatus struct {
	PCIModuleLoaded     bool // "MST PCI module loaded"
	PCIConfModuleLoaded bool // "MST PCI configuration module loaded"
	Devices             []MSTEntry
}

// RenderMSTStatusVerbose prints `mst status -v` the way MFT does: module
// lines, then the device table with columns DEVICE_TYPE 24, MST 30 (9 when
// no MST node is listed), PCI 10 (16 when a full domain is printed), RDMA 16,
// NET 26 (wider when a NET entry needs it), NUMA; every row is followed by an
// empty line.
func RenderMSTStatusVerbose(s MSTStatus) []byte {
	var b strings.Builder
	b.WriteString("MST modules:\n------------\n")
	b.WriteString(moduleLine("MST PCI module", s.PCIModuleLoaded))
	b.WriteString(moduleLine("MST PCI configuration module", s.PCIConfModuleLoaded))
	b.WriteString("PCI devices:\n------------\n")
	mstW, pciW, netW := 9, 10, 26
	for _, d := range s.Devices {
		if d.MST != "" {
			mstW = 30
		}
		if len(d.BDF) > 9 {
			pciW = 16
		}
		if n := len(netColumn(d)); n >= netW {
			netW = 40
			if n >= netW {
				netW = n + 1
			}
		}
	}
	fmt.Fprintf(&b, "%-24s%-*s%-*s%-16s%-*s%s\n", "DEVICE_TYPE", mstW, "MST", pciW, "PCI", "RDMA", netW, "NET", "NUMA")
	for _, d := range s.Devices {
		typ := "NA"
		if d.DeviceType != "" && d.DeviceType != "NA" {
			typ = d.DeviceType + "(rev:" + d.Rev + ")"
		}
		mst := d.MST
		if mst == "" {
			mst = "NA"
		}
		fmt.Fprintf(&b, "%-24s%-*s%-*s%-16s%-*s%d\n\n", typ, mstW, mst, pciW, d.BDF, d.RDMA, netW, netColumn(d), d.NUMA)
	}
	return []byte(b.String())
}

func moduleLine(name string, loaded bool) string {
	if loaded {
		return "    " + name + " loaded\n"
	}
	return "    " + name + " is not loaded\n"
}

func netColumn(d MSTEntry) string {
	parts := make([]string, len(d.Netdevs))
	for i, n := range d.Netdevs {
		parts[i] = "net-" + n
	}
	return strings.Join(parts, ",")
}
