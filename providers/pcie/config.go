package pcie

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Config space offsets (PCI Local Bus 3.0, PCI Express Base 4.0 §7.5).
const (
	statusReg   = 0x06 // Status; bit 4: Capabilities List
	capPtrReg   = 0x34 // Capabilities Pointer
	capIDExp    = 0x10 // PCI Express capability ID
	devCtlOff   = 0x08 // Device Control, from the PCI Express capability
	maxCapSteps = 48   // (256-64)/4 capabilities at most: a loop guard
)

// ErrNoExpress marks a function without a PCI Express capability (a
// conventional PCI function, or an integrated one without it).
var ErrNoExpress = errors.New("no PCI Express capability (ID 0x10) in the capability list")

// ParseDevCtl walks a config space's capability list from 0x34 to the PCI
// Express capability and returns its offset and Device Control register
// (little endian, at capability+8). A config space shorter than 64
// bytes (what an unprivileged read of sysfs gets) is an error, as is a
// list that loops or points outside what was read.
func ParseDevCtl(cfg []byte) (cap int, devctl uint16, err error) {
	if len(cfg) < 0x40 {
		return 0, 0, fmt.Errorf("only %d bytes of config space (rdmaform reads it as root: the header alone is 64)", len(cfg))
	}
	if binary.LittleEndian.Uint16(cfg[0:2]) == 0xffff {
		return 0, 0, errors.New("vendor ID 0xffff: the function does not answer (removed or in reset)")
	}
	if binary.LittleEndian.Uint16(cfg[statusReg:])&0x10 == 0 {
		return 0, 0, ErrNoExpress
	}
	ptr := int(cfg[capPtrReg] &^ 3)
	for i := 0; ptr != 0; i++ {
		if i == maxCapSteps {
			return 0, 0, errors.New("the capability list does not end (a loop)")
		}
		if ptr < 0x40 || ptr+2 > len(cfg) {
			return 0, 0, fmt.Errorf("a capability at %#x, outside the %d bytes read", ptr, len(cfg))
		}
		if cfg[ptr] == capIDExp {
			if ptr+devCtlOff+2 > len(cfg) {
				return 0, 0, fmt.Errorf("the PCI Express capability at %#x ends past the %d bytes read", ptr, len(cfg))
			}
			return ptr, binary.LittleEndian.Uint16(cfg[ptr+devCtlOff:]), nil
		}
		ptr = int(cfg[ptr+1] &^ 3)
	}
	return 0, 0, ErrNoExpress
}

// WithMaxReadRequest is devctl with the Max Read Request Size set to size
// bytes (128..4096, a power of two), the other bits kept.
func WithMaxReadRequest(devctl uint16, size int) uint16 {
	code := 0
	for 128<<code < size {
		code++
	}
	return devctl&^0x7000 | uint16(code)<<12
}
