package mlxfmt

import (
	"fmt"
	"strings"
)

// Columns says which value columns a table shows. Next Boot is shown by
// every query; Default and Current only with -e and when the firmware can
// report them; New only in a set.
type Columns struct {
	Default, Current, NextBoot, New bool
}

// Param is one parsed table row. Values of columns the table does not show
// are KindAbsent.
type Param struct {
	Name     string
	Default  Value
	Current  Value
	NextBoot Value
	New      Value
	// Modified is the '*' mark: Next Boot differs from Default or Current.
	// Use Current versus NextBoot, not this, to detect a pending reboot.
	Modified bool
	// ReadOnly is the 'RO' mark (mstflint 4.25+).
	ReadOnly bool
}

// Pending reports whether a value is staged for the next boot: both columns
// shown and Next Boot differs from Current.
func (p Param) Pending() bool {
	if p.Current.Kind == KindAbsent || p.NextBoot.Kind == KindAbsent {
		return false
	}
	return !sameValue(p.Current, p.NextBoot)
}

// Query is the parsed output of one device's query (or set table).
type Query struct {
	Device  DeviceInfo
	Columns Columns
	// Params in output order.
	Params []Param
	// NoDefault and NoCurrent: the output said "Device Firmware does not
	// support reading default/current configurations".
	NoDefault, NoCurrent bool
}

// Param returns the named parameter (exact name, e.g. LINK_TYPE_P1).
func (q Query) Param(name string) (Param, bool) {
	for _, p := range q.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// ParseQuery reads the output of `mlxconfig/mstconfig -d DEV [-e] q [NAMES]`
// (or the table of a set) in any layout G1..G6. It never relies on column
// positions: it finds "Configurations:", learns the columns from the header
// names, splits rows on whitespace (values never contain spaces, and a value
// wider than its cell is followed by a single space), and strips a leading
// '*', 'RO' or '*RO' mark. Rows end at an empty line, a footer, a set's
// prompt or progress (for outputs whose blank lines were dropped), or an
// -E-, -W- or -I- line. Only the first device is read (rdmaform always passes -d).
//
// When the output holds an -E- line, the returned error is its *ToolError,
// and Query holds whatever was printed before it (the device block, for an
// unknown parameter).
func ParseQuery(out []byte) (Query, error) {
	var q Query
	lines := strings.Split(string(out), "\n")
	seenDevice, inTable, tableDone, haveHeader := false, false, false, false
	for i, raw := range lines {
		line := strings.TrimRight(raw, " \t\r")
		if e := lineError(line); e != nil {
			return q, e
		}
		if strings.HasPrefix(line, "Device Firmware does not support reading ") {
			what := strings.TrimPrefix(line, "Device Firmware does not support reading ")
			q.NoDefault = q.NoDefault || strings.Contains(what, "default")
			q.NoCurrent = q.NoCurrent || strings.Contains(what, "current")
			inTable = false
			continue
		}
		if inTable {
			if line == "" || strings.HasPrefix(line, "The '") || strings.HasPrefix(line, "-I-") || endsTable(line) {
				inTable, tableDone = false, true
				continue
			}
			p, err := parseRow(line, q.Columns)
			if err != nil {
				return q, fmt.Errorf("mlxfmt: line %d: %w", i+1, err)
			}
			q.Params = append(q.Params, p)
			continue
		}
		if tableDone {
			continue
		}
		switch {
		case strings.HasPrefix(line, "Device #"):
			if seenDevice {
				tableDone = true // a second device: rdmaform reads only the first
				continue
			}
			seenDevice = true
		case strings.HasPrefix(line, "Device type:"):
			q.Device.Type = strings.TrimSpace(strings.TrimPrefix(line, "Device type:"))
		case strings.HasPrefix(line, "Name:"):
			q.Device.Name = strings.TrimSpace(strings.TrimPrefix(line, "Name:"))
		case strings.HasPrefix(line, "Description:"):
			q.Device.Description = strings.TrimSpace(strings.TrimPrefix(line, "Description:"))
		case strings.HasPrefix(line, "Device:"):
			q.Device.Device = strings.TrimSpace(strings.TrimPrefix(line, "Device:"))
		case strings.HasPrefix(line, "PCI device:"):
			// The ConnectX-3-era tools' name for the same line.
			q.Device.Device = strings.TrimSpace(strings.TrimPrefix(line, "PCI device:"))
		case strings.HasPrefix(line, "Configurations:"):
			q.Columns = headerColumns(strings.Fields(strings.TrimPrefix(line, "Configurations:")))
			haveHeader, inTable = true, true
		}
	}
	if !haveHeader {
		return q, ErrNoTable
	}
	return q, nil
}

// endsTable reports a line that follows a table when the tool's blank
// lines were dropped (some wrappers, and the ConnectX-3-era documentation):
// the set's prompt, its progress, a warning.
func endsTable(line string) bool {
	t := strings.TrimSpace(line)
	return strings.Contains(t, "(y/n) [n] :") || strings.HasPrefix(t, "Applying...") || strings.HasPrefix(t, "-W-")
}

// lineError finds an -E- marker; prompts may precede it on the same line.
func lineError(line string) *ToolError {
	if strings.HasPrefix(line, "-E-") {
		return ParseErrorLine(line)
	}
	if strings.HasPrefix(line, " ") && strings.Contains(line, "? (y/n) [n] : -E-") {
		return ParseErrorLine(line[strings.Index(line, "-E-"):])
	}
	return nil
}

func headerColumns(f []string) Columns {
	var c Columns
	for i, w := range f {
		switch w {
		case "Default":
			c.Default = true
		case "Current":
			c.Current = true
		case "Next":
			if i+1 < len(f) && f[i+1] == "Boot" {
				c.NextBoot = true
			}
		case "New":
			c.New = true
		}
	}
	return c
}

func parseRow(line string, c Columns) (Param, error) {
	f := strings.Fields(line)
	var p Param
	if len(f) > 0 {
		switch f[0] {
		case "*":
			p.Modified = true
			f = f[1:]
		case "RO":
			p.ReadOnly = true
			f = f[1:]
		case "*RO":
			p.Modified, p.ReadOnly = true, true
			f = f[1:]
		}
	}
	var slots []*Value
	if c.Default {
		slots = append(slots, &p.Default)
	}
	if c.Current {
		slots = append(slots, &p.Current)
	}
	if c.NextBoot {
		slots = append(slots, &p.NextBoot)
	}
	if c.New {
		slots = append(slots, &p.New)
	}
	if len(f) != len(slots)+1 {
		return Param{}, fmt.Errorf("row %q has %d values, the header names %d columns", line, max(len(f)-1, 0), len(slots))
	}
	p.Name = f[0]
	for i, s := range slots {
		*s = ParseValue(f[i+1])
	}
	return p, nil
}

// DeviceInfo is the "Device #1:" block of a query or set.
type DeviceInfo struct {
	Type        string // "Device type:", e.g. ConnectX6
	Name        string // "Name:", board part number or N/A
	Description string // "Description:"
	Device      string // "Device:" ("PCI device:" on ConnectX-3-era tools), exactly what was passed to -d
}

// sameValue compares two values the way the tool decides the '*' mark: by
// number when both have one.
func sameValue(a, b Value) bool {
	an, aok := a.Number()
	bn, bok := b.Number()
	if aok && bok {
		return an == bn
	}
	return a.String() == b.String()
}
