package schema

import (
	"strings"
	"testing"
)

// TestExpansionLimitCauseFirst: a spec of exactly maxNodes values is read
// (no limit finding); one value more gives the limit finding, first,
// before the findings the expansion caused, in the report every command
// prints (text) and turns into JSON's errors in that order.
func TestExpansionLimitCauseFirst(t *testing.T) {
	// The root mapping, version's value and the modules list are three
	// values; each module name one more.
	spec := func(values int) []byte {
		return []byte("version: 1\nmodules: [" + strings.Repeat("m, ", values-3) + "]\n")
	}
	if maxNodes != 1048576 {
		t.Fatalf("maxNodes is %d, the docs say 1048576", maxNodes)
	}
	// The boundary, on a small limit (a million values take seconds to
	// parse on a loaded machine).
	defer func(was int) { maxNodes = was }(maxNodes)
	maxNodes = 1000
	const cause = "spec expands to more than 1000 values"
	_, rep := Parse("limit.yaml", spec(maxNodes))
	for _, f := range rep {
		if strings.Contains(f.Message, "expands") {
			t.Fatalf("a spec of exactly %d values: %v", maxNodes, f)
		}
	}
	_, rep = Parse("limit.yaml", spec(maxNodes+1))
	if len(rep) == 0 || !strings.Contains(rep[0].Message, cause) || rep[0].Path != "$" {
		t.Fatalf("a spec of %d values: first finding %v, want the limit", maxNodes+1, rep)
	}

	// An alias bomb: the limit is the first finding, before the findings
	// of the values it repeated.
	var b strings.Builder
	b.WriteString("version: 1\nx: &pfc [3, 3, 3, 3, 3, 3, 3, 3, 3, 3]\n")
	b.WriteString("y: &port {port: 1, qos: {pfc: *pfc}}\n")
	b.WriteString("z: &ports [" + strings.TrimSuffix(strings.Repeat("*port, ", 10), ", ") + "]\n")
	b.WriteString("w: &dev {name: mlx5_0, ports: *ports}\n")
	b.WriteString("devices: [" + strings.TrimSuffix(strings.Repeat("*dev, ", 10), ", ") + "]\n")
	_, rep = Parse("bomb.yaml", []byte(b.String()))
	if len(rep) < 2 || !strings.Contains(rep[0].Message, cause) {
		n := len(rep)
		if n > 3 {
			n = 3
		}
		t.Fatalf("alias bomb: %d findings, first %v; want the limit first", len(rep), rep[:n])
	}
}
