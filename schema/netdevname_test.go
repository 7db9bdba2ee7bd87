package schema

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// yamlQuote writes s as a YAML double-quoted scalar: every byte that
// is not printable ASCII, and the quote and backslash, as an escape, so
// that the spec carries exactly the bytes of s.
func yamlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\x%02x", r)
		case r > 0x7f:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// pad makes a name of exactly n bytes around c: c, then 'a's.
func pad(c string, n int) string { return c + strings.Repeat("a", n-len(c)) }

// TestNetdevNameSafeInUdevRule: devices[].names.netdev is written into
// a udev rule's NAME="..." (59-rdmaform-names.rules), so a name is
// taken only when it is safe there, and refused at its own
// file:line:col otherwise. Each character class: the printable ASCII
// characters udev reads as plain text load in a 15-byte name (the
// kernel's limit, IFNAMSIZ 16 with the NUL) and are refused at 16; each
// character udev reads in a value (the quote ending it, the backslash
// escaping it, $ and % beginning a substitution), each one the kernel
// refuses (/, :, white space), control characters, DEL and bytes past
// ASCII (udev replaces them at boot) is refused, at the start, middle
// and end of a 15-byte name. A rail template is held to the same rule.
func TestNetdevNameSafeInUdevRule(t *testing.T) {
	spec := func(v string) string {
		return "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    names: {netdev: " + yamlQuote(v) + "}\n"
	}
	const at = "$.devices[0].names.netdev"
	const pos = "host.yaml:4:21"
	findings := func(t *testing.T, src string) []string {
		t.Helper()
		_, rep := Parse("host.yaml", []byte(src))
		var out []string
		for _, f := range rep {
			out = append(out, f.Pos.String()+" "+f.Path+": "+f.Message)
		}
		return out
	}
	// Every printable ASCII character udev takes as it is, in classes.
	var punct []string
	for c := byte(0x21); c < 0x7f; c++ {
		if (c < '0' || c > '9') && (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && !strings.ContainsRune(`"\$%/:`, rune(c)) {
			punct = append(punct, string(c))
		}
	}
	good := []string{strings.Repeat("a", 15), strings.Repeat("Z", 15), "e" + strings.Repeat("9", 14)}
	for _, c := range punct {
		if c == "-" {
			good = append(good, pad("a-", 15), strings.Repeat("b", 14)+c) // a leading '-' is an option
			continue
		}
		good = append(good, pad(c, 15), strings.Repeat("b", 14)+c)
	}
	for _, name := range good {
		t.Run("takes "+strconv.Quote(name), func(t *testing.T) {
			if len(name) != 15 {
				t.Fatalf("test name %q is %d bytes", name, len(name))
			}
			if f := findings(t, spec(name)); len(f) != 0 {
				t.Fatalf("%q refused: %v", name, f)
			}
			if f := findings(t, spec(name+"x")); len(f) != 1 || !strings.Contains(f[0], pos+" "+at+": ") || !strings.Contains(f[0], "15-byte") {
				t.Fatalf("%q (16 bytes) not refused at %s as too long: %v", name+"x", pos, f)
			}
		})
	}
	bad := []struct{ class, chars string }{
		{"the quote that ends a udev value", `"`},
		{"the backslash that escapes in a udev value", `\`},
		{"udev's substitution characters", `$%`},
		{"what the kernel refuses", "/: \t\n\r\v\f"},
		{"control characters and DEL", "\x00\x01\x1b\x1f\x7f"},
		{"bytes past ASCII", "é\u00a0"},
	}
	for _, b := range bad {
		for _, r := range b.chars {
			c := string(r)
			for _, name := range []string{pad(c, 15), "ab" + c + strings.Repeat("c", 15-2-len(c)), strings.Repeat("d", 15-len(c)) + c} {
				t.Run(b.class+" "+strconv.Quote(name), func(t *testing.T) {
					f := findings(t, spec(name))
					if len(f) != 1 || !strings.HasPrefix(f[0], pos+" "+at+": ") {
						t.Fatalf("%q not refused at %s %s: %v", name, pos, at, f)
					}
				})
			}
		}
	}
	// The issue's own injection, and udev's substitutions.
	for _, name := range []string{`a",RUN+="x`, `$kernel`, `%k`, `a\`, `eth$$`, `eth%%`} {
		t.Run("refuses "+strconv.Quote(name), func(t *testing.T) {
			if f := findings(t, spec(name)); len(f) != 1 || !strings.HasPrefix(f[0], pos+" "+at+": ") {
				t.Fatalf("%q not refused at %s: %v", name, pos, f)
			}
		})
	}
	// Rail templates: the same rule, on the template with its first rail.
	tmpl := func(v string) string {
		return "version: 1\ndevices:\n  - match: {part_number: MCX755106AS-HEAT}\n    names: {netdev: " + yamlQuote(v) + "}\n"
	}
	for _, name := range []string{`r{rail}",RUN+="x`, `$kernel{rail}`, `%k{rail}`, `rail{rail}\`, "r\u00e9{rail}", "rail{rail} "} {
		t.Run("refuses the template "+strconv.Quote(name), func(t *testing.T) {
			if f := findings(t, tmpl(name)); len(f) != 1 || !strings.HasPrefix(f[0], pos+" "+at+": ") {
				t.Fatalf("template %q not refused at %s: %v", name, pos, f)
			}
		})
	}
	for _, name := range []string{"r!#&'()*+,;<=>{rail}", "abcdefghijklmn{rail}"} {
		if f := findings(t, tmpl(name)); len(f) != 0 {
			t.Errorf("template %q refused: %v", name, f)
		}
	}
}

// TestCheckNetdevNameSelectsOnlyGivenNames: the udev rule is for the
// names rdmaform gives. A netdev a spec selects (interfaces[].name,
// ipoib parent, rxe netdev) is named by the kernel, and is held to the
// kernel's rules only: CheckNetdev takes what CheckNetdevName refuses.
func TestCheckNetdevNameSelectsOnlyGivenNames(t *testing.T) {
	for _, n := range []string{"eth$1", "eth%1", `eth"1`, `eth\1`} {
		if m := CheckNetdev(n); m != "" {
			t.Errorf("CheckNetdev(%q) = %q", n, m)
		}
		if m := CheckNetdevName(n); m == "" {
			t.Errorf("CheckNetdevName(%q) took it", n)
		}
	}
}

// TestNetdevNamePattern: the JSON Schema's pattern of names.netdev (what
// an editor, and the Kubernetes API server through the CRD, check) takes
// a character exactly where CheckNetdevName does: every byte, and a
// character past ASCII, in the middle of a name, and '-' first; the
// braces of a rail template too. (Length, "." and ".." are the
// validator's alone.)
func TestNetdevNamePattern(t *testing.T) {
	f, ok := reflect.TypeOf(Names{}).FieldByName("Netdev")
	if !ok {
		t.Fatal("no Names.Netdev")
	}
	re := regexp.MustCompile(f.Tag.Get("pattern"))
	for c := 0; c < 0x100; c++ {
		name := "a" + string([]byte{byte(c)}) + "b"
		if c >= 0x80 {
			name = "a" + string(rune(c)) + "b"
		}
		if got, want := re.MatchString(name), CheckNetdevName(name) == ""; got != want {
			t.Errorf("%q: the pattern takes it %v, CheckNetdevName %v", name, got, want)
		}
	}
	if !re.MatchString("rail{rail}") {
		t.Error("the pattern refuses a rail template")
	}
	for _, name := range []string{"-ab", "ab-", "a-b"} {
		if got, want := re.MatchString(name), CheckNetdevName(name) == ""; got != want {
			t.Errorf("%q: the pattern takes it %v, CheckNetdevName %v", name, got, want)
		}
	}
}
