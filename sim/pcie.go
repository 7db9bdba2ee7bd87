package sim

import (
	"encoding/binary"
	"regexp"
	"strconv"
	"syscall"
)

// The simulated config space of an adapter's PCI function: the header
// with the Capabilities List bit and pointer, a Power Management
// capability at 0x40 and the PCI Express capability at 0x60 (a ConnectX
// lists more; the offsets here are the simulator's own), 4096 bytes as
// root reads a PCI Express function's sysfs config. Device Control
// (0x68) holds the Max Read Request Size in bits 14:12, the only field a
// write changes; the firmware sets 512 bytes at boot.
const (
	simExpCap  = 0x60
	simDevCtl  = simExpCap + 8
	bootMRRS   = 512
	configSize = 4096
)

var pciConfigRE = regexp.MustCompile(`^/sys/bus/pci/devices/([^/]+)/config$`)

func (d *Device) mrrs() int {
	if d.MaxReadReq == 0 {
		return bootMRRS
	}
	return d.MaxReadReq
}

// configSpace renders a function's config space.
func configSpace(d *Device) []byte {
	b := make([]byte, configSize)
	binary.LittleEndian.PutUint16(b[0:], 0x15b3)
	id, _ := strconv.ParseUint(d.PCIID, 0, 16)
	binary.LittleEndian.PutUint16(b[2:], uint16(id))
	binary.LittleEndian.PutUint16(b[4:], 0x0406) // memory space, bus master, no INTx
	binary.LittleEndian.PutUint16(b[6:], 0x0010) // Capabilities List
	b[0x0b] = 0x02                               // network controller
	b[0x34] = 0x40
	b[0x40], b[0x41] = 0x01, simExpCap // Power Management, next: PCI Express
	binary.LittleEndian.PutUint16(b[0x42:], 0x0003)
	b[simExpCap], b[simExpCap+1] = 0x10, 0x00                  // PCI Express, last
	binary.LittleEndian.PutUint16(b[simExpCap+2:], 0x0002)     // version 2, endpoint
	binary.LittleEndian.PutUint32(b[simExpCap+4:], 0x00008fe2) // Device Capabilities: MPS 512
	code := 0
	for 128<<code < d.mrrs() {
		code++
	}
	binary.LittleEndian.PutUint16(b[simDevCtl:], uint16(code)<<12|0x0010|0x0800) // relaxed ordering, no snoop
	return b
}

// writeConfig takes a write to a function's config space: bytes that
// cover Device Control set the Max Read Request Size (a reserved encoding,
// 6 or 7, is refused with EINVAL, which rdmaform never writes); every
// other byte is read-only in the model and ignored, as hardware ignores
// writes to read-only fields.
func (st *State) writeConfig(name, pci string, data []byte, off int64) error {
	d := st.DeviceByPCI(pci)
	if b := st.Bridge(pci); d == nil && b != nil {
		return st.writeBridgeConfig(name, b, data, off)
	}
	if d == nil {
		return perr("open", name, syscall.ENOENT)
	}
	if off < 0 || off+int64(len(data)) > configSize {
		return perr("write", name, syscall.EINVAL)
	}
	cfg := configSpace(d)
	copy(cfg[off:], data)
	devctl := binary.LittleEndian.Uint16(cfg[simDevCtl:])
	code := int(devctl>>12) & 7
	if code > 5 {
		return perr("write", name, syscall.EINVAL)
	}
	d.MaxReadReq = 128 << code
	return nil
}
