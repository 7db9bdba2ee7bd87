package schema

import (
	"reflect"
	"strings"
	"testing"
)

// TestMatchPatterns: the JSON Schema's patterns (the Match struct tags)
// are the ones Validate uses.
func TestMatchPatterns(t *testing.T) {
	typ := reflect.TypeOf(Match{})
	for field, re := range map[string]string{"PartNumber": matchPartNumberRE.String(), "PSID": matchPSIDRE.String(), "Model": matchModelRE.String()} {
		f, _ := typ.FieldByName(field)
		if got := f.Tag.Get("pattern"); got != re {
			t.Errorf("%s: tag pattern %q, Validate uses %q", field, got, re)
		}
	}
}

// TestValidateMatch: devices[].match and optional, each value at its
// limit and one past it.
func TestValidateMatch(t *testing.T) {
	long := func(n int) string { return strings.Repeat("A", n) }
	for _, tc := range []struct {
		name, device, want string // want "" for a valid spec
	}{
		{"psid", "match: {psid: MT_0000000222}", ""},
		{"all three", "match: {part_number: MCX653106A-HDAT, psid: MT_0000000222, model: MT4123}", ""},
		{"optional", "match: {model: MT4123}\n    optional: true", ""},
		{"empty", "match: {}", "3:12: error: $.devices[0].match: give part_number, psid or model"},
		{"with pci", "pci: \"0000:3b:00.0\"\n    match: {psid: X}", "4:12: error: $.devices[0].match: a device with match selects every adapter that matches; it may not also name pci, name, node_guid or netdev"},
		{"with name", "name: mlx5_0\n    match: {psid: X}", "it may not also name pci, name"},
		{"with netdev", "netdev: ens1f0\n    match: {psid: X}", "it may not also name pci, name"},
		{"optional without match", "pci: \"0000:3b:00.0\"\n    optional: true", "4:15: error: $.devices[0].optional: optional is for a device selected by match"},
		{"psid of 16", "match: {psid: " + long(16) + "}", ""},
		{"psid of 17", "match: {psid: " + long(17) + "}", "$.devices[0].match.psid: \"" + long(17) + "\" is not a PSID (1-16 printable ASCII characters, no spaces)"},
		{"psid with a space", "match: {psid: \"MT 1\"}", "is not a PSID"},
		{"psid empty", "match: {psid: \"\"}", "\"\" is not a PSID"},
		{"part number of 64", "match: {part_number: " + long(64) + "}", ""},
		{"part number of 65", "match: {part_number: " + long(65) + "}", "$.devices[0].match.part_number: \"" + long(40) + "...\" is not a part number"},
		{"part number with inner spaces", "match: {part_number: \"CX516A - A\"}", ""},
		{"part number with a trailing space", "match: {part_number: \"CX516A \"}", "is not a part number"},
		{"model of 32", "match: {model: " + long(32) + "}", ""},
		{"model of 33", "match: {model: " + long(33) + "}", "$.devices[0].match.model: \"" + long(33) + "\" is not a model"},
		{"unknown key", "match: {serial: MT1}", "serial"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := "version: 1\ndevices:\n  - " + tc.device + "\n"
			_, rep := Parse("s.yaml", []byte(spec))
			var got []string
			for _, f := range rep {
				got = append(got, f.String())
			}
			all := strings.Join(got, "\n")
			switch {
			case tc.want == "" && len(rep) > 0:
				t.Errorf("%s: want valid, got:\n%s", spec, all)
			case tc.want != "" && !strings.Contains(all, tc.want):
				t.Errorf("%s: want %q, got:\n%s", spec, tc.want, all)
			}
		})
	}
}

// TestWithAliases: an alias gets the positions of its path and of what
// is under it, not of a path that only starts with the same characters.
func TestWithAliases(t *testing.T) {
	spec, rep := Parse("s.yaml", []byte("version: 1\ndevices:\n  - name: a\n    ports: [{port: 1}]\n  - name: b\n  - name: c\n  - name: d\n  - name: e\n  - name: f\n  - name: g\n  - name: h\n  - name: i\n  - name: j\n    ports: [{port: 2}]\n"))
	if len(rep) > 0 {
		t.Fatal(rep)
	}
	src := spec.Src.WithAliases(map[string]string{"$.devices[11]": "$.devices[1]"})
	for path, want := range map[string]string{
		"$.devices[11]":               "s.yaml:5:5",
		"$.devices[11].name":          "s.yaml:5:11",
		"$.devices[1].name":           "s.yaml:5:11", // the original stays
		"$.devices[9].ports[0].port":  "s.yaml:14:20",
		"$.devices[11].ports[0].port": "s.yaml:5:5", // b has no ports: its entry
		"$.devices[0].ports[0].port":  "s.yaml:4:20",
	} {
		if got := src.Lookup(path).String(); got != want {
			t.Errorf("%s at %s, want %s", path, got, want)
		}
	}
	if spec.Src.Has("$.devices[11]") {
		t.Errorf("WithAliases changed the Sources it copied")
	}
}
