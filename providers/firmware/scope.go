package firmware

import "strings"

// CardWide reports whether a parameter, as a spec writes it (NAME,
// NAME_P2, NAME[3]), is one value for the whole adapter whichever of its
// PCI functions a set goes through: its TLV is of class 0 (global) or 1
// (physical port) in mstflint's parameter database. Per-host-function
// parameters (class 3: ROCE_CONTROL, PCI_WR_ORDERING, PF_NUM_OF_VF…) and
// names the table does not know are not: they are set through their own
// function.
func CardWide(name string) bool {
	if i := strings.IndexByte(name, '['); i > 0 {
		name = name[:i]
	}
	if globalParams[name] {
		return true
	}
	if m := portSuffixRE.FindStringSubmatch(name); m != nil {
		return portParams[m[1]]
	}
	return false
}
