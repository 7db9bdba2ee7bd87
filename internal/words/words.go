// Package words holds the small helpers rdmaform's messages share.
package words

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Plural is one when n is 1, else many: "1 change", "2 changes".
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Printable is s as text output may show a string rdmaform does not
// control (a host name from an inventory, a value from a hand-edited
// file): every rune that is not printable (control characters such as
// newline, tab, NUL and ESC, which would split a line or reach the
// terminal as an escape sequence; DEL; Unicode format characters such
// as a right-to-left override) is written as a Go escape (\n, \t, \x1b,
// \u202e), a byte that is not UTF-8 as \xNN, and a backslash as \\, so
// that the output is one line that says exactly what the string holds.
// A string with nothing to escape comes back as it is.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if r == '\\' || r == utf8.RuneError || !unicode.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case unicode.IsPrint(r) && r != utf8.RuneError:
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
		i += n
	}
	return b.String()
}
