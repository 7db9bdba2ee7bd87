package acs

import (
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readHex reads a config space captured as hex bytes (testdata/PROVENANCE.md).
func readHex(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	out, err := hex.DecodeString(strings.Join(strings.Fields(string(b)), ""))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestParseACSOnQEMU: the walk on real config spaces of QEMU 7.2's
// emulated ports: the root port's ACS after AER at 0x148 (Capability
// 0x005f, Control 0 after reset); the xio3130 downstream port has none.
func TestParseACSOnQEMU(t *testing.T) {
	for name, want := range map[string]Cap{
		"qemu-7.2-pcie-root-port.hex":     {Offset: 0x148, Bits: 0x005f, Control: 0},
		"qemu-7.2-xio3130-downstream.hex": {},
	} {
		cfg := readHex(t, name)
		if len(cfg) != 4096 {
			t.Fatalf("%s: %d bytes", name, len(cfg))
		}
		got, err := ParseACS(cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}
