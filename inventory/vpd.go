package inventory

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// VPD is what rdmaform reads of a PCI function's Vital Product Data
// (/sys/bus/pci/devices/BDF/vpd): the product name and the read-only
// keywords PN (part number) and SN (serial number). Every function of an
// adapter shows the same VPD: it is the card's.
type VPD struct {
	ProductName string
	PartNumber  string
	Serial      string
}

// VPD resource tags (PCI Local Bus Specification 3.0, section 6.4 and
// appendix I): a large resource has bit 7 set, its name in bits 0-6 and a
// 16-bit little-endian length; a small resource has its name in bits 3-6
// and its length in bits 0-2.
const (
	vpdLarge    = 0x80
	vpdIDString = 0x02 // large: the product name
	vpdRO       = 0x10 // large: read-only keywords (VPD-R)
	vpdRW       = 0x11 // large: read-write keywords (VPD-W)
	vpdEnd      = 0x0f // small: the end tag (0x78)
)

// ParseVPD reads a VPD image. It stops at the end tag, and at a byte that
// is no resource of the format (the kernel's sysfs file of an older
// kernel runs past the end tag into unprogrammed 0x00 or 0xff bytes). A
// resource or keyword whose length runs past the data is an error; what
// was read before it is returned with it. Values are trimmed of the
// blanks and NUL bytes vendors pad fields with (Mellanox writes PN and SN
// space-padded to their fixed field size).
func ParseVPD(data []byte) (VPD, error) {
	var v VPD
	for i := 0; i < len(data); {
		tag := data[i]
		if tag&vpdLarge == 0 {
			if (tag>>3)&0x0f == vpdEnd {
				return v, nil
			}
			if tag == 0x00 {
				return v, nil // unprogrammed
			}
			n := int(tag & 0x07)
			i += 1 + n
			continue
		}
		if tag == 0xff {
			return v, nil // unprogrammed
		}
		if i+3 > len(data) {
			return v, fmt.Errorf("VPD: resource 0x%02x at offset %d: its length is cut off", tag, i)
		}
		n := int(binary.LittleEndian.Uint16(data[i+1 : i+3]))
		body := i + 3
		if body+n > len(data) {
			return v, fmt.Errorf("VPD: resource 0x%02x at offset %d is %d bytes long, past the data's end (%d bytes)", tag, i, n, len(data))
		}
		switch tag &^ vpdLarge {
		case vpdIDString:
			v.ProductName = vpdText(data[body : body+n])
		case vpdRO, vpdRW:
			if err := vpdKeywords(data[body:body+n], body, &v); err != nil {
				return v, err
			}
		}
		i = body + n
	}
	return v, nil
}

// vpdKeywords reads the keyword list of a VPD-R or VPD-W resource: a
// two-character keyword, a length byte, the value.
func vpdKeywords(b []byte, offset int, v *VPD) error {
	for k := 0; k+3 <= len(b); {
		kw := string(b[k : k+2])
		n := int(b[k+2])
		if k+3+n > len(b) {
			return fmt.Errorf("VPD: keyword %q at offset %d is %d bytes long, past its resource's end", kw, offset+k, n)
		}
		val := b[k+3 : k+3+n]
		switch kw {
		case "PN":
			v.PartNumber = vpdText(val)
		case "SN":
			v.Serial = vpdText(val)
		}
		k += 3 + n
	}
	return nil
}

// vpdText is a VPD string without its padding; bytes that are not
// printable ASCII are dropped (a field is ASCII by the specification).
func vpdText(b []byte) string {
	var s strings.Builder
	for _, c := range b {
		if c >= 0x20 && c < 0x7f {
			s.WriteByte(c)
		}
	}
	return strings.TrimSpace(s.String())
}
