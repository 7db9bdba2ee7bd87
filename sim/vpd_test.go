package sim

import (
	"bytes"
	"testing"
)

// TestRenderVPDChecksum: the RV checksum byte makes the bytes from the
// start through it sum to zero (PCI 3.0, I.3.1.1), as lspci checks it
// ("checksum good"); the image ends with the end tag.
func TestRenderVPDChecksum(t *testing.T) {
	b := renderVPD("CX516A - ConnectX-5 QSFP28", "MCX516A-CCAT", "MT1852K04321")
	i := bytes.Index(b, []byte("RV\x01"))
	if i < 0 {
		t.Fatalf("no RV keyword in %q", b)
	}
	var sum byte
	for _, c := range b[:i+4] {
		sum += c
	}
	if sum != 0 {
		t.Errorf("bytes through the RV checksum sum to %#x, want 0", sum)
	}
	if b[len(b)-1] != 0x78 {
		t.Errorf("last byte %#x, want the end tag 0x78", b[len(b)-1])
	}
}
