package words

import "testing"

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "changes", 1: "change", 2: "changes"} {
		if got := Plural(n, "change", "changes"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestPrintable: what would split a line, reach the terminal as an
// escape sequence or hide what a string holds is escaped; the rest,
// spaces and non-ASCII letters included, is left as it is.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"node1":                    "node1",
		"":                         "",
		"a b":                      "a b",
		"Größe 5 µs":               "Größe 5 µs",
		"a\nb":                     `a\nb`,
		"a\tb":                     `a\tb`,
		"a\rb":                     `a\rb`,
		"a\x00b":                   `a\x00b`,
		"\x1b[31mred\x1b[0m":       `\x1b[31mred\x1b[0m`,
		"\x1b]0;title\x07":         `\x1b]0;title\x07`,
		"del\x7f":                  `del\x7f`,
		"c1\u0085":                 `c1\x85`,
		"nbsp\u00a0":               `nbsp\xa0`,
		"rtl\u202egnp.exe":         `rtl\u202egnp.exe`,
		"bad\xffutf8":              `bad\xffutf8`,
		"the replacement \ufffd":   `the replacement \ufffd`, // told from a byte that is not UTF-8
		`a\nb`:                     `a\\nb`,
		"tag\U000e0041":            `tag\U000e0041`,
		"line 1\u2028line 2":       `line 1\u2028line 2`,
		"emoji \U0001F600 is fine": "emoji \U0001F600 is fine",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
