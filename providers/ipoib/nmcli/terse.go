// Package nmcli is rdmaform's NetworkManager vocabulary for IPoIB
// (connection type infiniband): the profile model (Profile, Settings,
// Normalized), whose property names and value forms are the plan's
// language and which the ipoib provider turns into NetworkManager's typed
// D-Bus settings; and nmcli's argument vectors, the parsers for what
// nmcli prints back, typed errors for its exit codes and a Client.
//
// rdmaform runs no nmcli on a host any more (the ipoib and sriov
// providers use host.NetworkManager). The nmcli half stays for what
// checks that: the reference of the keyfile test (the profiles nmcli
// saves, TestRealKeyfilesEqualNmcli), the simulator's nmcli emulation
// checked against the real nmcli (internal/testlab/simcheck; the
// simulator's NetworkManager door drives that emulation), and the
// real-output corpus (testdata/real/nmcli). It runs nothing itself: a
// Runner given by the caller does, always with LC_ALL=C.
//
// Formats are NetworkManager 1.42's, checked against the real daemon in
// this package's tests (see reference/formats.md §6).
package nmcli

import (
	"fmt"
	"strings"
)

// Record is one block of multiline terse output (`nmcli -t -f ... connection
// show uuid U`): field name to value, in the order nmcli printed them.
type Record struct {
	Fields []string          // field names in output order
	Values map[string]string // field name -> value ("" when unset)
}

// Get returns the value of a field and whether nmcli printed it.
func (r Record) Get(field string) (string, bool) {
	v, ok := r.Values[field]
	return v, ok
}

// ParseMultiline splits multiline terse output into records. nmcli prints
// one `field:value` line per field, values unescaped (an IPv6 address keeps
// its colons, so a line is split at its first colon), and separates the
// profiles of one `connection show uuid A uuid B` run with an empty line.
// A field repeating within a block also starts a new record, so output
// without separators is not merged.
func ParseMultiline(out []byte) ([]Record, error) {
	var recs []Record
	var cur *Record
	flush := func() {
		if cur != nil && len(cur.Fields) > 0 {
			recs = append(recs, *cur)
		}
		cur = nil
	}
	for n, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" {
			flush()
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("nmcli terse output line %d: no ':' in %q", n+1, line)
		}
		if cur != nil {
			if _, dup := cur.Values[k]; dup {
				flush()
			}
		}
		if cur == nil {
			cur = &Record{Values: map[string]string{}}
		}
		cur.Fields = append(cur.Fields, k)
		cur.Values[k] = v
	}
	flush()
	return recs, nil
}

// SplitTabular splits one line of tabular terse output (`nmcli -t -f A,B
// connection show`, or `-g`) into its fields: fields are joined by ':' and
// nmcli escapes ':' and '\' inside values as `\:` and `\\`.
func SplitTabular(line string) []string {
	var fields []string
	var b strings.Builder
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\\' && i+1 < len(line):
			i++
			b.WriteByte(line[i])
		case c == ':':
			fields = append(fields, b.String())
			b.Reset()
		default:
			b.WriteByte(c)
		}
	}
	return append(fields, b.String())
}

// ParseTabular parses tabular terse output whose lines must each have
// exactly n fields.
func ParseTabular(out []byte, n int) ([][]string, error) {
	var rows [][]string
	for i, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" {
			continue
		}
		f := SplitTabular(line)
		if len(f) != n {
			return nil, fmt.Errorf("nmcli tabular output line %d: %d fields, want %d: %q", i+1, len(f), n, line)
		}
		rows = append(rows, f)
	}
	return rows, nil
}

// SplitList splits a multi-value property as nmcli prints it: addresses
// joined with ", ", DNS servers with "," (NetworkManager 1.42). Empty gives
// nil.
func SplitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
