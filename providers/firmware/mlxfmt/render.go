package mlxfmt

import (
	"fmt"
	"strings"
)

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
	Default  Value
	Current  Value
	NextBoot Value
	New      Value // set only: the value being written
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
	if r.Err != nil && r.Err.Kind == ErrOpenDevice {
		b.WriteString(r.Err.Line())
		if l.openFailureTwice() {
			b.WriteString(r.Err.Line())
		}
		return []byte(b.String()), ExitError
	}
	if !writeTable(&b, l, r, false) {
		return []byte(b.String()), ExitError
	}
	return []byte(b.String()), ExitOK
}

// RenderSet prints `mlxconfig -d DEV [-e] [-y] set NAME=VALUE...` for one
// device: the table with a New column (rows in command-line order), the
// prompt and its outcome. It returns the tool's exit code: 0 applied,
// 2 aborted, 3 error.
func RenderSet(l Layout, r Report, a Answer) (out []byte, exit int) {
	var b strings.Builder
	if r.Err != nil && r.Err.Kind == ErrOpenDevice {
		b.WriteString(r.Err.Line())
		return []byte(b.String()), ExitError
	}
	if !writeTable(&b, l, r, true) {
		return []byte(b.String()), ExitError
	}
	b.WriteString("\n Apply new Configuration? (y/n) [n] : ")
	switch a {
	case AnswerYesFlag:
		b.WriteString("y\n")
	case AnswerYes:
	default:
		b.WriteString(AbortedError().Line())
		return []byte(b.String()), ExitAborted
	}
	b.WriteString("Applying... Done!\n")
	b.WriteString("-I- Please reboot machine to load new configurations.\n")
	return []byte(b.String()), ExitOK
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
		var cells []Value
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
func cellText(v Value) string {
	if v.Kind == KindAbsent {
		return "N/A"
	}
	return v.String()
}

// sameValue compares two observed values the way the tool decides the '*'
// mark: by number when both have one.
func sameValue(a, b Value) bool {
	an, aok := a.Number()
	bn, bok := b.Number()
	if aok && bok {
		return an == bn
	}
	return a.String() == b.String()
}
