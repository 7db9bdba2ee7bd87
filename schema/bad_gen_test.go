package schema

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBadSpecsGenerated feeds Parse malformed specs too big to commit:
// each must give at least one finding with a line and column, without a
// panic and without hanging (a generous bound, for a hung parser, not a
// benchmark).
func TestBadSpecsGenerated(t *testing.T) {
	const tenMB = 10 << 20
	tests := []struct {
		name string
		data func() []byte
		want string // a substring of a finding
	}{{
		name: "10000 nested flow lists",
		data: func() []byte {
			return []byte("version: 1\nhost: " + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + "\n")
		},
		want: "error: $",
	}, {
		name: "10000 nested block mappings",
		data: func() []byte {
			var b strings.Builder
			b.WriteString("version: 1\nhost:\n")
			for i := 0; i < 10000; i++ {
				b.WriteString(strings.Repeat(" ", i+1) + "k:\n")
			}
			return []byte(b.String())
		},
		want: "error: $",
	}, {
		name: "10 MB of modules",
		data: func() []byte {
			var b strings.Builder
			b.WriteString("version: 1\nmodules:\n")
			for b.Len() < tenMB {
				b.WriteString("  - ib_ipoib\n")
			}
			b.WriteString("  - \"a/b\"\n")
			return []byte(b.String())
		},
		want: "larger than the 4194304 bytes rdmaform reads",
	}, {
		name: "just under the size limit: a 4 MB hostname",
		data: func() []byte {
			return []byte("version: 1\nhost:\n  hostname: " + strings.Repeat("h", 4<<20-64) + "\n")
		},
		want: "is not a valid hostname",
	}, {
		name: "10 MB of one scalar",
		data: func() []byte {
			return []byte("version: 1\nhost:\n  hostname: " + strings.Repeat("h", tenMB) + "\n")
		},
		want: "larger than the 4194304 bytes rdmaform reads",
	}, {
		name: "10 MB of garbage bytes",
		data: func() []byte {
			b := make([]byte, tenMB)
			for i := range b {
				b[i] = byte(i*131 + i>>8)
			}
			return b
		},
		want: "error: $",
	}, {
		name: "alias bomb",
		data: func() []byte {
			var b strings.Builder
			b.WriteString("version: 1\nx0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
			for i := 1; i < 12; i++ {
				b.WriteString("x" + itoa(i) + ": &a" + itoa(i) + " [" + strings.TrimSuffix(strings.Repeat("*a"+itoa(i-1)+", ", 10), ", ") + "]\n")
			}
			b.WriteString("modules: *a11\n")
			return []byte(b.String())
		},
		want: "error: $",
	}, {
		name: "10000 duplicate keys",
		data: func() []byte {
			return []byte("version: 1\n" + strings.Repeat("modules: [ib_ipoib]\n", 10000))
		},
		want: "duplicate key",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := tt.data()
			done := make(chan Report, 1)
			go func() {
				_, rep := Parse("gen.yaml", data)
				done <- rep
			}()
			var rep Report
			select {
			case rep = <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("Parse did not return within a minute")
			}
			if len(rep) == 0 {
				t.Fatal("no finding for a bad spec")
			}
			for _, f := range rep {
				if f.Pos.Line < 1 || f.Pos.Col < 1 {
					t.Errorf("finding without a position: %s", f)
				}
			}
			var all []string
			for _, f := range rep {
				all = append(all, f.String())
			}
			if got := strings.Join(all, "\n"); !strings.Contains(got, tt.want) {
				t.Errorf("no finding says %q:\n%.2000s", tt.want, got)
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
