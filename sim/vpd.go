package sim

// renderVPD writes a PCI function's Vital Product Data the way a
// ConnectX card's flash holds it (the layout of the VPD tables in
// Mellanox's adapter user manuals: an identifier string, a read-only
// section with PN, EC, SN, V0 and the RV checksum, a read-write section
// with V1, YA and the free RW area, the end tag), as the kernel's sysfs
// vpd file shows it. Fields are space-padded to the manuals' fixed sizes
// (PN 21 bytes, SN 24), as real cards print them ("MCX4421A-ACQN        ").
// It is the simulator's own writer: rdmaform's reader (inventory.ParseVPD)
// is checked against it and against a capture's layout.
func renderVPD(product, pn, sn string) []byte {
	var ro []byte
	ro = vpdKeyword(ro, "PN", pad(pn, 21))
	ro = vpdKeyword(ro, "EC", "A1")
	ro = vpdKeyword(ro, "SN", pad(sn, 24))
	ro = vpdKeyword(ro, "V0", pad("PCIeGen4 x16", 16))
	id := vpdLargeTag(0x82, []byte(product))
	// RV holds the checksum byte that makes the sum of every byte from
	// the start through it zero, then the reserved rest (here none).
	head := append(append([]byte{}, id...), 0x90, 0, 0)
	roLen := len(ro) + 4
	head[len(id)+1], head[len(id)+2] = byte(roLen), byte(roLen>>8)
	head = append(head, ro...)
	head = append(head, 'R', 'V', 1)
	var sum byte
	for _, b := range head {
		sum += b
	}
	head = append(head, -sum)
	var rw []byte
	rw = vpdKeyword(rw, "V1", pad("N/A", 6))
	rw = vpdKeyword(rw, "YA", pad("N/A", 32))
	rw = vpdKeyword(rw, "RW", string(make([]byte, 64)))
	out := append(head, vpdLargeTag(0x91, rw)...)
	return append(out, 0x78)
}

func vpdLargeTag(tag byte, body []byte) []byte {
	return append([]byte{tag, byte(len(body)), byte(len(body) >> 8)}, body...)
}

func vpdKeyword(b []byte, kw, val string) []byte {
	b = append(b, kw[0], kw[1], byte(len(val)))
	return append(b, val...)
}

func pad(s string, n int) string {
	for len(s) < n {
		s += " "
	}
	return s
}
