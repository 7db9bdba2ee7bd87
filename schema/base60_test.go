package schema_test

import (
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/schema"
)

// TestPCIAddressAsBase60: a PCI address that arrives as the number YAML
// 1.1 makes of it (PyYAML's, as Ansible passes a content: mapping on:
// 0000:10:00.0 is 600.0, 0000:10:00.1 is 600.1, 0001:10:00.0 is 4200.0;
// the JSON below is what Python's json.dumps writes of them) is refused
// with the cause and the address to quote; other bad addresses get no
// such hint.
func TestPCIAddressAsBase60(t *testing.T) {
	for pci, want := range map[string]string{
		`600.0`:          `"600.0" is not a PCI address (DDDD:BB:DD.F, e.g. 0000:81:00.0); YAML 1.1, which Ansible reads playbooks and variables with, makes the unquoted address 0000:10:00.0 the base-60 number 600.0: quote it (pci: "0000:10:00.0")`,
		`600.1`:          `makes the unquoted address 0000:10:00.1 the base-60 number 600.1: quote it`,
		`4200.0`:         `makes the unquoted address 0001:10:00.0 the base-60 number 4200.0`,
		`3599.7`:         `makes the unquoted address 0000:59:59.7 the base-60 number 3599.7`,
		`"600.0"`:        `makes the unquoted address 0000:10:00.0 the base-60 number 600.0`, // written so by hand: the same hint
		`600.8`:          `"600.8" is not a PCI address (DDDD:BB:DD.F, e.g. 0000:81:00.0)`,
		`600`:            `"600" is not a PCI address (DDDD:BB:DD.F, e.g. 0000:81:00.0)`,
		`"0000:zz:00.0"`: `"0000:zz:00.0" is not a PCI address (DDDD:BB:DD.F, e.g. 0000:81:00.0)`,
	} {
		_, rep := schema.Parse("content.json", []byte(`{"version": 1, "devices": [{"pci": `+pci+`, "ports": [{"port": 1, "roce": {"mode": "v2"}}]}]}`))
		if len(rep) != 1 || rep[0].Path != "$.devices[0].pci" || !strings.Contains(rep[0].Message, want) {
			t.Errorf("pci %s: %v, want one finding holding %q", pci, rep, want)
			continue
		}
		if hint := strings.Contains(rep[0].Message, "base-60"); hint != strings.Contains(want, "base-60") {
			t.Errorf("pci %s: %q: hint %v", pci, rep[0].Message, hint)
		}
	}
}
