package acs

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// cfg is a 4096-byte config space with extended capabilities at the
// given offsets: each an ID and the next offset.
func cfg(caps ...[3]int) []byte {
	b := make([]byte, 4096)
	binary.LittleEndian.PutUint16(b, 0x1000)
	for _, c := range caps {
		off, id, next := c[0], c[1], c[2]
		binary.LittleEndian.PutUint32(b[off:], uint32(id)|1<<16|uint32(next)<<20)
		if id == extCapIDACS {
			binary.LittleEndian.PutUint16(b[off+4:], 0x007f)
			binary.LittleEndian.PutUint16(b[off+6:], 0x001d)
		}
	}
	return b
}

// TestParseACS: the walk finds the ACS capability first in the list or
// after others, reports none where the list ends or is empty, and
// refuses a loop, a pointer outside what was read, a function that does
// not answer and a config space without the extended part.
func TestParseACS(t *testing.T) {
	answering := cfg()
	binary.LittleEndian.PutUint16(answering, 0xffff)
	for _, c := range []struct {
		name string
		cfg  []byte
		want Cap
		err  string
	}{
		{"first", cfg([3]int{0x100, extCapIDACS, 0}), Cap{Offset: 0x100, Bits: 0x7f, Control: 0x1d}, ""},
		{"after AER and DSN", cfg([3]int{0x100, 0x1, 0x148}, [3]int{0x148, 0x3, 0x2a0}, [3]int{0x2a0, extCapIDACS, 0}), Cap{Offset: 0x2a0, Bits: 0x7f, Control: 0x1d}, ""},
		{"none in the list", cfg([3]int{0x100, 0x1, 0x148}, [3]int{0x148, 0x3, 0}), Cap{}, ""},
		{"no extended capabilities", cfg(), Cap{}, ""},
		{"a loop", cfg([3]int{0x100, 0x1, 0x148}, [3]int{0x148, 0x3, 0x100}), Cap{}, "does not end"},
		{"outside", cfg([3]int{0x100, 0x1, 0x300})[:0x200], Cap{}, "an extended capability at 0x300, outside the 512 bytes"},
		{"below 0x100", cfg([3]int{0x100, 0x1, 0x40}), Cap{}, "an extended capability at 0x40"},
		{"not answering", answering, Cap{}, "vendor ID 0xffff"},
		{"64 bytes", make([]byte, 64), Cap{}, ErrNoExtended.Error()},
		{"256 bytes", make([]byte, 256), Cap{}, ErrNoExtended.Error()},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseACS(c.cfg)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := ParseACS(make([]byte, 100)); !errors.Is(err, ErrNoExtended) {
		t.Errorf("short: %v", err)
	}
}

// TestDescribe: a control value for people, bit names as lspci -vv's
// ACSCtl line, unknown bits in hex.
func TestDescribe(t *testing.T) {
	for v, want := range map[uint16]string{
		0:      "0x0000 (none)",
		0x001d: "0x001d (SrcValid ReqRedir CmpltRedir UpstreamFwd)",
		0x007f: "0x007f (SrcValid TransBlk ReqRedir CmpltRedir UpstreamFwd EgressCtrl DirectTrans)",
		0xff80: "0xff80 (0xff80)",
	} {
		if got := Describe(v); got != want {
			t.Errorf("Describe(%#04x) = %q, want %q", v, got, want)
		}
	}
}
