package acs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Config space offsets (PCI Express Base 4.0, 7.6 and 7.7.8).
const (
	extCapStart = 0x100  // the first extended capability
	extCapIDACS = 0x000d // Access Control Services
	acsCapOff   = 0x04   // ACS Capability Register, from the capability
	acsCtlOff   = 0x06   // ACS Control Register
	maxExtSteps = (4096 - 256) / 4
)

// ACS Control bits (PCI Express Base 4.0, 7.7.8.3; Linux's PCI_ACS_*).
const (
	SourceValidation    = 0x0001
	TranslationBlocking = 0x0002
	RequestRedirect     = 0x0004
	CompletionRedirect  = 0x0008
	UpstreamForwarding  = 0x0010
	EgressControl       = 0x0020
	DirectTranslated    = 0x0040
)

// P2PMask is what peer_to_peer turns off: P2P Request Redirect, P2P
// Completion Redirect and P2P Egress Control.
const P2PMask = RequestRedirect | CompletionRedirect | EgressControl

// ErrNoExtended marks a config space too short to hold extended
// capabilities: a conventional PCI bridge, or a read without root.
var ErrNoExtended = errors.New("no extended config space (a conventional PCI function, or read without root: it holds 4096 bytes)")

// Cap is where a function's ACS capability is and what it holds.
type Cap struct {
	// Offset of the ACS extended capability; 0: the function has none.
	Offset  int
	Bits    uint16 // ACS Capability Register
	Control uint16 // ACS Control Register
}

// ParseACS walks a config space's extended capabilities from 0x100 to
// the ACS capability (ID 0x000D). A function without one returns a zero
// Offset and no error; a list that loops or points outside what was read
// is an error.
func ParseACS(cfg []byte) (Cap, error) {
	if len(cfg) >= 2 && binary.LittleEndian.Uint16(cfg) == 0xffff {
		return Cap{}, errors.New("vendor ID 0xffff: the function does not answer (removed or in reset)")
	}
	if len(cfg) < extCapStart+4 {
		return Cap{}, ErrNoExtended
	}
	off := extCapStart
	for i := 0; ; i++ {
		if i == maxExtSteps {
			return Cap{}, errors.New("the extended capability list does not end (a loop)")
		}
		hdr := binary.LittleEndian.Uint32(cfg[off:])
		if hdr == 0 || hdr == 0xffffffff {
			return Cap{}, nil // no extended capabilities
		}
		if hdr&0xffff == extCapIDACS {
			if off+acsCtlOff+2 > len(cfg) {
				return Cap{}, fmt.Errorf("the ACS capability at %#x ends past the %d bytes read", off, len(cfg))
			}
			return Cap{Offset: off, Bits: binary.LittleEndian.Uint16(cfg[off+acsCapOff:]), Control: binary.LittleEndian.Uint16(cfg[off+acsCtlOff:])}, nil
		}
		next := int(hdr>>20) &^ 3
		if next == 0 {
			return Cap{}, nil
		}
		if next < extCapStart || next+4 > len(cfg) {
			return Cap{}, fmt.Errorf("an extended capability at %#x, outside the %d bytes read", next, len(cfg))
		}
		off = next
	}
}

// bitNames are the ACS bits as lspci -vv names them (ACSCtl: SrcValid
// TransBlk ReqRedir CmpltRedir UpstreamFwd EgressCtrl DirectTrans).
var bitNames = []struct {
	bit  uint16
	name string
}{
	{SourceValidation, "SrcValid"}, {TranslationBlocking, "TransBlk"}, {RequestRedirect, "ReqRedir"},
	{CompletionRedirect, "CmpltRedir"}, {UpstreamForwarding, "UpstreamFwd"}, {EgressControl, "EgressCtrl"},
	{DirectTranslated, "DirectTrans"},
}

// Describe writes a control value for people: 0x001d (SrcValid ReqRedir
// CmpltRedir UpstreamFwd).
func Describe(v uint16) string {
	var on []string
	rest := v
	for _, b := range bitNames {
		if v&b.bit != 0 {
			on = append(on, b.name)
			rest &^= b.bit
		}
	}
	if rest != 0 {
		on = append(on, fmt.Sprintf("0x%04x", rest))
	}
	if len(on) == 0 {
		return fmt.Sprintf("0x%04x (none)", v)
	}
	return fmt.Sprintf("0x%04x (%s)", v, strings.Join(on, " "))
}
