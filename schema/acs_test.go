package schema

import (
	"fmt"
	"strings"
	"testing"
)

// TestACSSpec: acs's fields at their limits and one past, with the
// finding at the value's path: the control value 0 and 0xffff (hex as
// YAML writes it) against -1 and 0x10000, 32 bridges against 33; a
// bridge that is no PCI address or is given twice, and an acs block that
// asks nothing.
func TestACSSpec(t *testing.T) {
	dev := func(acs string) string {
		return "version: 1\ndevices:\n  - pci: \"0000:18:00.0\"\n    acs: " + acs + "\n"
	}
	bridges := func(n int) string {
		var b []string
		for i := 0; i < n; i++ {
			b = append(b, fmt.Sprintf("{pci: \"0000:%02x:00.0\", control: 0x11}", i))
		}
		return "{bridges: [" + strings.Join(b, ", ") + "]}"
	}
	for _, c := range []struct {
		name, spec, path, msg string // msg "": no finding
	}{
		{"control 0", dev(`{bridges: [{pci: "0000:17:00.0", control: 0}]}`), "", ""},
		{"control 0xffff", dev(`{bridges: [{pci: "0000:17:00.0", control: 0xffff}]}`), "", ""},
		{"control -1", dev(`{bridges: [{pci: "0000:17:00.0", control: -1}]}`), "$.devices[0].acs.bridges[0].control", "-1"},
		{"control 0x10000", dev(`{bridges: [{pci: "0000:17:00.0", control: 0x10000}]}`), "$.devices[0].acs.bridges[0].control", "65536"},
		{"32 bridges", dev(bridges(32)), "", ""},
		{"33 bridges", dev(bridges(33)), "$.devices[0].acs.bridges", "33 bridges: at most 32"},
		{"peer_to_peer", dev(`{peer_to_peer: true}`), "", ""},
		{"nothing asked", dev(`{peer_to_peer: false}`), "$.devices[0].acs", "give peer_to_peer: true or bridges"},
		{"not an address", dev(`{bridges: [{pci: "17:00", control: 0}]}`), "$.devices[0].acs.bridges[0].pci", `"17:00" is not a PCI address`},
		{"twice", dev(`{bridges: [{pci: "17:00.0", control: 0}, {pci: "0000:17:00.0", control: 1}]}`), "$.devices[0].acs.bridges[1].pci", "bridge 0000:17:00.0 is already given at $.devices[0].acs.bridges[0]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, rep := Parse("t.yaml", []byte(c.spec))
			if c.msg == "" {
				if len(rep) != 0 {
					t.Errorf("findings: %v", rep)
				}
				return
			}
			for _, f := range rep {
				if f.Path == c.path && strings.Contains(f.Message, c.msg) {
					if f.Pos.Line == 0 {
						t.Errorf("no position: %v", f)
					}
					return
				}
			}
			t.Errorf("no finding %q at %s: %v", c.msg, c.path, rep)
		})
	}
}
