package inventory_test

import (
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/inventory"
)

// mellanoxVPD lays out a card's VPD as the VPD tables of Mellanox's
// adapter user manuals give it (for instance "Table 12 - MH[QR]H19C-X[STN]R
// VPD" of the ConnectX-2 VPI user manual, rev 1.6, p. 22:
// https://manualshive.com/en/manual/mellanox-technologies/mhqh19b-xsr/1768337?page=22):
// the ID string (0x82), VPD-R (0x90) with PN (21 bytes, space-padded), EC
// (2), SN (24, space-padded), V0 (16) and RV (the checksum byte), VPD-W
// (0x91) with V1 (6), YA (32) and RW (the free rest), the end tag 0x78.
// The values are a ConnectX-3's as lspci -vvv decodes its VPD ("[PN] Part
// number: MCX354A-FCBT", "[EC] Engineering changes: AC", "[V0] Vendor
// specific: PCIe Gen3 x8"; the serial is the fixture's own).
func mellanoxVPD(id, pn, sn string) []byte {
	kw := func(k, v string, n int) []byte {
		v += strings.Repeat(" ", max(0, n-len(v)))
		return append([]byte{k[0], k[1], byte(len(v))}, v...)
	}
	large := func(tag byte, body []byte) []byte {
		return append([]byte{tag, byte(len(body)), byte(len(body) >> 8)}, body...)
	}
	ro := append(append(append(kw("PN", pn, 21), kw("EC", "AC", 2)...), kw("SN", sn, 24)...), kw("V0", "PCIe Gen3 x8", 16)...)
	head := large(0x82, []byte(id))
	head = append(head, large(0x90, append(ro, 'R', 'V', 1, 0))...)
	var sum byte
	for _, b := range head[:len(head)-1] {
		sum += b
	}
	head[len(head)-1] = -sum
	rw := append(append(kw("V1", "N/A", 6), kw("YA", "N/A", 32)...), append([]byte{'R', 'W', 105}, make([]byte, 105)...)...)
	return append(append(head, large(0x91, rw)...), 0x78)
}

func TestParseVPD(t *testing.T) {
	card := mellanoxVPD("CX354A - ConnectX-3 QSFP", "MCX354A-FCBT", "MT1604K01234")
	want := inventory.VPD{ProductName: "CX354A - ConnectX-3 QSFP", PartNumber: "MCX354A-FCBT", Serial: "MT1604K01234"}
	for _, tc := range []struct {
		name    string
		data    []byte
		want    inventory.VPD
		wantErr string
	}{
		{name: "card", data: card, want: want},
		// An older kernel's sysfs file runs on past the end tag.
		{name: "after the end tag", data: append(append([]byte{}, card...), 0xff, 0xff, 0x90, 0x40), want: want},
		// What follows the end tag is no part of the VPD, even when it
		// reads as a resource.
		{name: "a resource after the end tag", data: append(append([]byte{}, card...), 0x90, 5, 0, 'P', 'N', 2, 'X', 'Y'), want: want},
		{name: "unprogrammed", data: []byte{0xff, 0xff, 0xff, 0xff}},
		{name: "zeros", data: make([]byte, 16)},
		{name: "empty"},
		// No end tag: what the resources hold is still read.
		{name: "no end tag", data: card[:len(card)-1], want: want},
		// A small resource before the ID string is skipped by its length.
		{name: "small resource", data: append([]byte{0x22, 'x', 'y'}, card...), want: want},
		// A length at the data's end, and one byte past it.
		{name: "ID string to the last byte", data: []byte{0x82, 3, 0, 'a', 'b', 'c'}, want: inventory.VPD{ProductName: "abc"}},
		{name: "ID string one byte past the end", data: []byte{0x82, 4, 0, 'a', 'b', 'c'}, wantErr: "4 bytes long, past the data's end (6 bytes)"},
		{name: "length cut off", data: []byte{0x82, 4}, wantErr: "its length is cut off"},
		{name: "keyword to its resource's end", data: []byte{0x90, 5, 0, 'P', 'N', 2, 'A', 'B', 0x78}, want: inventory.VPD{PartNumber: "AB"}},
		{name: "keyword one byte past its resource's end", data: []byte{0x90, 5, 0, 'P', 'N', 3, 'A', 'B', 0x78}, wantErr: `keyword "PN" at offset 3 is 3 bytes long`},
		// What was read before a broken resource is kept.
		{name: "broken after the ID", data: append(mellanoxVPD("X", "P", "S")[:4], 0x90, 0xff, 0x00), want: inventory.VPD{ProductName: "X"}, wantErr: "past the data's end"},
		// Bytes that are not printable ASCII are no part of a value.
		{name: "control bytes", data: []byte{0x90, 6, 0, 'S', 'N', 3, 'A', 0, 'B', 0x78}, want: inventory.VPD{Serial: "AB"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := inventory.ParseVPD(tc.data)
			if got != tc.want {
				t.Errorf("ParseVPD = %+v, want %+v", got, tc.want)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one with %q", err, tc.wantErr)
			}
		})
	}
}

func FuzzParseVPD(f *testing.F) {
	f.Add(mellanoxVPD("CX354A - ConnectX-3 QSFP", "MCX354A-FCBT", "MT1604K01234"))
	f.Add([]byte{0x82, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = inventory.ParseVPD(data) // never panics
	})
}
