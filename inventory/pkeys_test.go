package inventory

import "testing"

// TestPortGUIDOfGID: GID 0 of an InfiniBand port as sysfs writes it
// (the first: ibsim's Hca1 port 1 in the subnet manager lab, whose
// PortGuid smpquery nodeinfo prints as 0x0000000000100001; the others are
// made up to cover the forms) gives the port GUID.
func TestPortGUIDOfGID(t *testing.T) {
	for gid, want := range map[string]string{
		"fe80:0000:0000:0000:0000:0000:0010:0001": "0x0000000000100001",
		"fe80:0000:0000:0000:0c42:a103:0065:7f92": "0x0c42a10300657f92",
		"fe80:0000:0000:0000:0000:0000:0000:0000": "",
		"fe80::1": "",
		"fe80:0000:0000:0000:zzzz:0000:0000:0001": "",
	} {
		if got := PortGUIDOfGID(gid); got != want {
			t.Errorf("PortGUIDOfGID(%q) = %q, want %q", gid, got, want)
		}
	}
}
