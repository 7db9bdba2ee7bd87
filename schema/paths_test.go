package schema

import "testing"

// TestPath: paths as the loader records them in Sources, so a finding
// built with Path lands on its line.
func TestPath(t *testing.T) {
	spec, rep := Parse("host.yaml", []byte("version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    ports:\n      - {port: 1, roce: {tos: 106}}\nmodules: [rdma_cm]\n"))
	if len(rep) > 0 {
		t.Fatal(rep)
	}
	for _, c := range []struct {
		path string
		line int
	}{
		{Path("devices", 0, "ports", 0, "roce"), 5},
		{Path("devices", 0, "pci"), 3},
		{Path("modules", 0), 6},
	} {
		if pos := spec.Src.Lookup(c.path); pos.Line != c.line {
			t.Errorf("%s: line %d, want %d", c.path, pos.Line, c.line)
		}
	}
	if got := Path(); got != "$" {
		t.Errorf("Path() = %q", got)
	}
	if got := Path("devices", 2, "firmware", "params", "LINK_TYPE_P1"); got != "$.devices[2].firmware.params.LINK_TYPE_P1" {
		t.Errorf("got %q", got)
	}
}
