package pcie

import (
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"
)

// realConfig is the config space of the kernel lab's virtio-net function
// on a PCIe root port of QEMU's q35 machine, as the guest read it
// (testdata/real/pcie, PROVENANCE.md): its PCI Express capability is the
// last of the list (0x34 -> 0xdc MSI-X -> ... -> 0x40).
func realConfig(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../../testdata/real/pcie/virtio-net-q35.hex")
	if err != nil {
		t.Fatal(err)
	}
	out, err := hex.DecodeString(strings.Join(strings.Fields(string(b)), ""))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestParseDevCtlReal(t *testing.T) {
	cfg := realConfig(t)
	cap, devctl, err := ParseDevCtl(cfg)
	if err != nil || cap != 0x40 || devctl != 0 {
		t.Fatalf("ParseDevCtl = %#x, %#04x, %v; want 0x40, 0x0000 (the walk 0x34 -> 0xdc -> ... -> 0x7c -> 0x40)", cap, devctl, err)
	}
	if got := (&Func{Cap: cap, DevCtl: devctl}).MaxReadRequest(); got != 128 {
		t.Errorf("MaxReadRequest = %d, want 128", got)
	}
}

// TestParseDevCtlRefuses: what is not a readable PCI Express function is
// an error that says why, never a value.
func TestParseDevCtlRefuses(t *testing.T) {
	good := realConfig(t)
	mod := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return b
	}
	for _, c := range []struct {
		name string
		cfg  []byte
		want string
	}{
		{"unprivileged read", good[:63], "only 63 bytes of config space"},
		{"gone", mod(func(b []byte) { b[0], b[1] = 0xff, 0xff }), "vendor ID 0xffff"},
		{"no capability list", mod(func(b []byte) { b[6] = 0 }), "no PCI Express capability"},
		{"conventional", mod(func(b []byte) { b[0x40] = 0x05 }), "no PCI Express capability"},
		{"loop", mod(func(b []byte) { b[0x40], b[0x41] = 0x05, 0xdc }), "does not end"},
		{"outside", mod(func(b []byte) { b[0x34] = 0x30 }), "a capability at 0x30, outside"},
		{"cut", good[:0x44], "a capability at 0xdc, outside the 68 bytes"},
	} {
		if _, _, err := ParseDevCtl(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestMaxReadRequestEncoding: each size is bits 14:12 = log2(size/128),
// the other bits kept; the reserved encodings read as 0.
func TestMaxReadRequestEncoding(t *testing.T) {
	for code, size := range []int{128, 256, 512, 1024, 2048, 4096} {
		v := WithMaxReadRequest(0xffff, size) // a reserved encoding before: every bit cleared first
		if v != 0x8fff|uint16(code)<<12 {
			t.Errorf("%d: %#04x", size, v)
		}
		if got := (&Func{DevCtl: v}).MaxReadRequest(); got != size {
			t.Errorf("%d reads back as %d", size, got)
		}
	}
	for _, v := range []uint16{0x6000, 0x7000} {
		if got := (&Func{DevCtl: v}).MaxReadRequest(); got != 0 {
			t.Errorf("reserved %#04x reads as %d", v, got)
		}
	}
}

// TestParseDevCtlReservedPointerBits: the two low bits of every
// capability pointer are reserved (PCI Local Bus 3.0 §6.7: software
// masks them); a next pointer with them set still leads to the PCI
// Express capability.
func TestParseDevCtlReservedPointerBits(t *testing.T) {
	cfg := realConfig(t)
	if cfg[0x7c] != 0x01 || cfg[0x7d] != 0x40 {
		t.Fatalf("the capture changed: the power management capability at 0x7c is %#x -> %#x", cfg[0x7c], cfg[0x7d])
	}
	cfg[0x7d] |= 3 // 0x7c's next pointer: 0x43, read as 0x40
	cfg[0x34] |= 3 // the list's head: 0xdf, read as 0xdc
	cap, devctl, err := ParseDevCtl(cfg)
	if err != nil || cap != 0x40 || devctl != 0 {
		t.Fatalf("ParseDevCtl = %#x, %#04x, %v; want 0x40, 0x0000 with the reserved bits masked", cap, devctl, err)
	}
}

// TestParseDevCtlCutAtDeviceControl: a read that ends inside the PCI
// Express capability is refused unless it holds all of Device Control
// (capability+8, two bytes): one byte short is an error naming the cut,
// exactly enough reads the register.
func TestParseDevCtlCutAtDeviceControl(t *testing.T) {
	cfg := realConfig(t)
	cfg[0x34] = 0x40                  // the PCI Express capability first (its next is 0)
	cfg[0x48], cfg[0x49] = 0x10, 0x20 // Device Control 0x2010
	end := 0x40 + 8 + 2               // one past Device Control's last byte
	for _, n := range []int{end - 2, end - 1} {
		if _, _, err := ParseDevCtl(cfg[:n]); err == nil || !strings.Contains(err.Error(), "the PCI Express capability at 0x40 ends past the "+strconv.Itoa(n)+" bytes read") {
			t.Errorf("%d bytes: %v, want the capability named as cut", n, err)
		}
	}
	for _, n := range []int{end, end + 1} {
		if cap, devctl, err := ParseDevCtl(cfg[:n]); err != nil || cap != 0x40 || devctl != 0x2010 {
			t.Errorf("%d bytes: %#x, %#04x, %v; want 0x40, 0x2010", n, cap, devctl, err)
		}
	}
}
