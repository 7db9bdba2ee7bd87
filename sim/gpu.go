package sim

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/rdmaform/rdmaform/sim/mlxemu"
)

// The simulated PCI hierarchy of a GPU node: bridges (root ports and the
// ports of PCI Express switches) and GPUs, laid out in sysfs as the
// kernel lays them out (drivers/pci/probe.c names a device's directory
// after its address under its parent bridge's directory, the root bus's
// directory /sys/devices/pciDDDD:BB being the host bridge's;
// drivers/pci/bus.c links /sys/bus/pci/devices/ADDR to it), each with
// the attributes drivers/pci/pci-sysfs.c gives every function: class,
// vendor, device, numa_node and config.
//
// A function's parent is the bridge whose secondary bus is the
// function's bus (a VF shares its PF's). A function on a bus no bridge
// of the state leads to sits directly under /sys/devices/pci0000:00, as
// on the profiles without a hierarchy.

// Bridge is one PCI-to-PCI bridge: a root port or a switch port.
type Bridge struct {
	PCI string `yaml:"pci"` // 0000:17:01.0
	// Secondary is the bus below the bridge, with its domain: 0000:18.
	Secondary string `yaml:"secondary"`
	// Kind is the port type of its PCI Express capability.
	Kind     BridgeKind `yaml:"kind"`
	Vendor   string     `yaml:"vendor"` // 0x1000
	DeviceID string     `yaml:"device"` // 0xc030
	NUMANode int        `yaml:"numa_node,omitempty"`
	// ACSCap is the ACS Capability register; 0: the bridge has no ACS
	// extended capability (a switch's upstream port).
	ACSCap uint16 `yaml:"acs_capability,omitempty"`
	// ACSControl is the ACS Control register now. The kernel sets it at
	// every boot (bootACS).
	ACSControl uint16 `yaml:"acs_control,omitempty"`
}

// BridgeKind is a bridge's PCI Express Device/Port Type.
type BridgeKind string

// The port types a bridge of the simulator has.
const (
	RootPort       BridgeKind = "root-port"
	UpstreamPort   BridgeKind = "upstream"
	DownstreamPort BridgeKind = "downstream"
)

// portType is the Device/Port Type field of the PCI Express Capabilities
// register (PCI Express Base 4.0, 7.5.3.2).
func (k BridgeKind) portType() uint16 {
	switch k {
	case RootPort:
		return 0x4
	case UpstreamPort:
		return 0x5
	case DownstreamPort:
		return 0x6
	}
	return 0
}

// GPU is one GPU's PCI function.
type GPU struct {
	PCI      string `yaml:"pci"`
	Vendor   string `yaml:"vendor"` // 0x10de
	DeviceID string `yaml:"device"` // 0x2330
	// Class is the class code as sysfs prints it: 0x030200 (3D
	// controller) or 0x030000 (VGA).
	Class    string `yaml:"class"`
	NUMANode int    `yaml:"numa_node,omitempty"`
}

// ACS Capability/Control bits (PCI Express Base 4.0, 7.7.8.2-3), the
// simulator's own names.
const (
	acsSV = 0x01 // Source Validation
	acsTB = 0x02 // Translation Blocking
	acsRR = 0x04 // P2P Request Redirect
	acsCR = 0x08 // P2P Completion Redirect
	acsUF = 0x10 // Upstream Forwarding
	acsEC = 0x20 // P2P Egress Control
	acsDT = 0x40 // Direct Translated P2P
)

// bootACS is what the kernel writes at boot in the ACS Control register
// of a port when an IOMMU driver asked for ACS (pci_acs_enable):
// pci_std_enable_acs in drivers/pci/pci.c sets Source Validation, P2P
// Request and Completion Redirect and Upstream Forwarding where the
// capability has them, Translation Blocking only on external-facing or
// untrusted ports or with ATS off (none here), and leaves Egress Control
// as the reset left it: 0.
func bootACS(capBits uint16) uint16 { return capBits & (acsSV | acsRR | acsCR | acsUF) }

// busOf is the domain and bus of a PCI address: 0000:18 of 0000:18:00.0.
func busOf(pci string) string {
	if i := strings.LastIndexByte(pci, ':'); i > 0 {
		return pci[:i]
	}
	return pci
}

// bridgeOf returns the bridge whose secondary bus is pci's bus, or nil.
func (s *State) bridgeOf(pci string) *Bridge {
	bus := busOf(pci)
	for _, b := range s.Bridges {
		if b.Secondary == bus {
			return b
		}
	}
	return nil
}

// Bridge returns the bridge at a PCI address, or nil.
func (s *State) Bridge(pci string) *Bridge {
	for _, b := range s.Bridges {
		if b.PCI == pci {
			return b
		}
	}
	return nil
}

// pciDir is the sysfs directory of a PCI function: under its parent
// bridge's, up to the host bridge of its root bus.
func (s *State) pciDir(pci string) string {
	var chain []string
	cur := pci
	for i := 0; i < 64; i++ {
		b := s.bridgeOf(cur)
		if b == nil {
			break
		}
		chain = append(chain, b.PCI)
		cur = b.PCI
	}
	if len(chain) == 0 && s.Bridge(pci) == nil {
		return pciDir(pci)
	}
	// The top bridge sits on a root bus: its host bridge is pciDDDD:BB.
	dir := "/sys/devices/pci" + busOf(cur)
	for i := len(chain) - 1; i >= 0; i-- {
		dir += "/" + chain[i]
	}
	return dir + "/" + pci
}

// renderHierarchy writes the bridges and GPUs.
func (s *State) renderHierarchy(t *tree) {
	for _, b := range s.Bridges {
		d := s.pciDir(b.PCI)
		t.file(d+"/class", "0x060400\n")
		t.file(d+"/vendor", b.Vendor+"\n")
		t.file(d+"/device", b.DeviceID+"\n")
		t.file(d+"/numa_node", fmt.Sprintf("%d\n", b.NUMANode))
		t.file(d+"/config", string(bridgeConfig(b)))
		t.link("/sys/bus/pci/devices/"+b.PCI, rel("/sys/bus/pci/devices/"+b.PCI, d))
	}
	for _, g := range s.GPUs {
		d := s.pciDir(g.PCI)
		t.file(d+"/class", g.Class+"\n")
		t.file(d+"/vendor", g.Vendor+"\n")
		t.file(d+"/device", g.DeviceID+"\n")
		t.file(d+"/numa_node", fmt.Sprintf("%d\n", g.NUMANode))
		t.file(d+"/config", string(gpuConfig(g)))
		t.link("/sys/bus/pci/devices/"+g.PCI, rel("/sys/bus/pci/devices/"+g.PCI, d))
	}
}

// The simulated config space of a bridge (offsets are the simulator's
// own): a type 1 header, the PCI Express capability at 0x40 (the only
// one of the list), AER at 0x100 and, on a port with ACS, the ACS
// extended capability at 0x148 (Capability at +4, Control at +6).
const (
	simBridgeExp = 0x40
	simAER       = 0x100
	simACS       = 0x148
)

func hex16(s string) uint16 {
	v, _ := strconv.ParseUint(s, 0, 16)
	return uint16(v)
}

// extHeader is an extended capability header: ID, version 1 or 2, next.
func extHeader(id, ver uint16, next int) uint32 {
	return uint32(id) | uint32(ver)<<16 | uint32(next)<<20
}

func bridgeConfig(b *Bridge) []byte {
	c := make([]byte, configSize)
	binary.LittleEndian.PutUint16(c[0:], hex16(b.Vendor))
	binary.LittleEndian.PutUint16(c[2:], hex16(b.DeviceID))
	binary.LittleEndian.PutUint16(c[4:], 0x0407) // I/O, memory, bus master
	binary.LittleEndian.PutUint16(c[6:], 0x0010) // Capabilities List
	c[0x0a], c[0x0b] = 0x04, 0x06                // PCI-to-PCI bridge
	c[0x0e] = 0x01                               // type 1 header
	sec, _ := strconv.ParseUint(b.Secondary[strings.LastIndexByte(b.Secondary, ':')+1:], 16, 8)
	pri, _ := strconv.ParseUint(busOf(b.PCI)[strings.LastIndexByte(busOf(b.PCI), ':')+1:], 16, 8)
	c[0x18], c[0x19], c[0x1a] = byte(pri), byte(sec), byte(sec)
	c[0x34] = simBridgeExp
	c[simBridgeExp], c[simBridgeExp+1] = 0x10, 0x00 // PCI Express, last
	binary.LittleEndian.PutUint16(c[simBridgeExp+2:], 0x0002|b.Kind.portType()<<4)
	next := 0
	if b.ACSCap != 0 {
		next = simACS
	}
	binary.LittleEndian.PutUint32(c[simAER:], extHeader(0x0001, 2, next))
	if b.ACSCap != 0 {
		binary.LittleEndian.PutUint32(c[simACS:], extHeader(0x000d, 1, 0))
		binary.LittleEndian.PutUint16(c[simACS+4:], b.ACSCap)
		binary.LittleEndian.PutUint16(c[simACS+6:], b.ACSControl)
	}
	return c
}

func gpuConfig(g *GPU) []byte {
	c := make([]byte, configSize)
	binary.LittleEndian.PutUint16(c[0:], hex16(g.Vendor))
	binary.LittleEndian.PutUint16(c[2:], hex16(g.DeviceID))
	binary.LittleEndian.PutUint16(c[4:], 0x0406)
	binary.LittleEndian.PutUint16(c[6:], 0x0010)
	cls, _ := strconv.ParseUint(g.Class, 0, 32)
	c[0x09], c[0x0a], c[0x0b] = byte(cls), byte(cls>>8), byte(cls>>16)
	c[0x34] = 0x60
	c[0x60], c[0x61] = 0x10, 0x00
	binary.LittleEndian.PutUint16(c[0x62:], 0x0002) // endpoint
	return c
}

// writeBridgeConfig takes a write to a bridge's config space: bytes that
// cover the ACS Control register set it, the bits its ACS Capability
// lacks reading 0 as the hardware's do; every other byte is read-only
// in the model and ignored.
func (st *State) writeBridgeConfig(name string, b *Bridge, data []byte, off int64) error {
	if off < 0 || off+int64(len(data)) > configSize {
		return perr("write", name, syscall.EINVAL)
	}
	cfg := bridgeConfig(b)
	copy(cfg[off:], data)
	if b.ACSCap != 0 {
		b.ACSControl = binary.LittleEndian.Uint16(cfg[simACS+6:]) & b.ACSCap
	}
	return nil
}

// rebootHierarchy is what a boot does to the hierarchy: the kernel
// enables ACS on every port again.
func (st *State) rebootHierarchy() {
	for _, b := range st.Bridges {
		b.ACSControl = bootACS(b.ACSCap)
	}
}

// gpuPair is one GPU and one NIC function below one PCI Express switch.
type gpuPair struct {
	numa int
	// root is the root bus (its host bridge pci0000:RR); the root port
	// is RR:01.0, the switch's upstream port on RR+1, its downstream
	// ports on RR+2, the NIC on nic and the GPU on nic+1.
	root, nic int
}

// switchedPairs are the NIC buses and NUMA nodes of the 8-GPU node, from
// the NVIDIA DGX H100 User Guide, 1.2.3 Network Modules, Table 6 (ports
// OSFP4P2 ... OSFP1P1: ibp24s0 for GPU 0, ibp64s0 GPU 1, ibp79s0 GPU 2,
// ibp94s0 GPU 3 on CPU 0; ibp154s0 GPU 4, ibp192s0 GPU 5, ibp206s0 GPU
// 6, ibp220s0 GPU 7 on CPU 1), as the public manual at
// https://www.easymanua.ls/nvidia/dgx-h100/manual?p=19 prints it. Which
// GPU is which GPU number is the guide's; the buses of the switch ports
// and of each GPU (the bus after its NIC's) are the simulator's own.
var switchedPairs = []gpuPair{
	{0, 0x15, 0x18}, {0, 0x3d, 0x40}, {0, 0x4c, 0x4f}, {0, 0x5b, 0x5e},
	{1, 0x97, 0x9a}, {1, 0xbd, 0xc0}, {1, 0xcb, 0xce}, {1, 0xd9, 0xdc},
}

// switchedRDMANames are the guide's RDMA device names of those ports, in
// the same order.
var switchedRDMANames = []string{"mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"}

// PCI IDs, as lspci names them from the PCI ID Repository
// (pci-ids.ucw.cz) and as public listings show them: 10de:2330 "GH100
// [H100 SXM5 80GB]" (lspci -nn of H100 nodes); 1000:c030 "Broadcom / LSI
// PEX890xx PCIe Gen 5 Switch"; 8086:352a, the Sapphire Rapids root port
// ("pci 10000:80:01.0: [8086:352a] type 01 class 0x060400" in a kernel
// log posted to linux-pci); 10de:2342, the GH200's GPU (GH100); 10de:22b2,
// the Grace root port (an lspci of a GH200 node: "0000:00:00.0 PCI
// bridge: NVIDIA Corporation Device 22b2", the same at 0002:00:00.0: a
// root port at DDDD:00:00.0 of each PCI domain).
const (
	idH100     = "0x2330"
	idGH200    = "0x2342"
	idPEX890xx = "0xc030"
	idSPRRoot  = "0x352a"
	idGraceRP  = "0x22b2"
)

// downstreamACS is the ACS Capability of a switch's downstream port and
// of a root port: SV, TB, RR, CR, UF, EC and DT.
const downstreamACS = acsSV | acsTB | acsRR | acsCR | acsUF | acsEC | acsDT

// newSwitchedGPUNode is the 8-GPU / 8-NIC node: each GPU and its NIC (a
// single-port ConnectX-7, InfiniBand NDR) below the two downstream ports
// of one PEX890xx switch, below one root port of its own host bridge;
// GPUs 0-3 and their NICs on NUMA node 0, 4-7 on node 1.
func newSwitchedGPUNode(st *State) {
	for i, p := range switchedPairs {
		hb := fmt.Sprintf("0000:%02x", p.root)
		rp := hb + ":01.0"
		usp := fmt.Sprintf("0000:%02x:00.0", p.root+1)
		dspNIC := fmt.Sprintf("0000:%02x:00.0", p.root+2)
		dspGPU := fmt.Sprintf("0000:%02x:01.0", p.root+2)
		st.Bridges = append(st.Bridges,
			&Bridge{PCI: rp, Secondary: fmt.Sprintf("0000:%02x", p.root+1), Kind: RootPort, Vendor: "0x8086", DeviceID: idSPRRoot, NUMANode: p.numa, ACSCap: downstreamACS},
			&Bridge{PCI: usp, Secondary: fmt.Sprintf("0000:%02x", p.root+2), Kind: UpstreamPort, Vendor: "0x1000", DeviceID: idPEX890xx, NUMANode: p.numa},
			&Bridge{PCI: dspNIC, Secondary: fmt.Sprintf("0000:%02x", p.nic), Kind: DownstreamPort, Vendor: "0x1000", DeviceID: idPEX890xx, NUMANode: p.numa, ACSCap: downstreamACS},
			&Bridge{PCI: dspGPU, Secondary: fmt.Sprintf("0000:%02x", p.nic+1), Kind: DownstreamPort, Vendor: "0x1000", DeviceID: idPEX890xx, NUMANode: p.numa, ACSCap: downstreamACS},
		)
		st.GPUs = append(st.GPUs, &GPU{PCI: fmt.Sprintf("0000:%02x:00.0", p.nic+1), Vendor: "0x10de", DeviceID: idH100, Class: "0x030200", NUMANode: p.numa})
		d := cx(switchedRDMANames[i], fmt.Sprintf("0000:%02x:00.0", p.nic), "0x1021", fmt.Sprintf("a088:c203:00%02x:1a00", i), "28.39.1002", "MT_0000000838", 1, "InfiniBand",
			fmt.Sprintf("ibp%ds0", p.nic), fmt.Sprintf("enp%ds0np0", p.nic), "400 Gb/sec (4X NDR)")
		d.NUMANode = p.numa
		d.Ports[0].LID, d.Ports[0].SMLID = 0x100+i, 1
		st.Devices = append(st.Devices, d)
		st.Firmware = append(st.Firmware, card(newConnectX7VPI, mlxemu.G6, []*Device{d})...)
		st.Firmware[len(st.Firmware)-1].NUMA = p.numa
		setVPD([]*Device{d}, "NVIDIA ConnectX-7 Adapter Card, NDR400, Single-port OSFP, PCIe 5.0 x16", "MCX75310AAS-NEAT", fmt.Sprintf("MT2348X%05d", 200+i))
	}
	for _, b := range st.Bridges {
		b.ACSControl = bootACS(b.ACSCap)
	}
}

// newGraceNode is a Grace Hopper (GH200) node: the GPU reaches the CPU
// over NVLink-C2C and shows on PCI behind a root port of its own PCI
// domain; the two functions of a dual-port ConnectX-7 sit behind a root
// port of domain 0 (the Grace CPU has up to four PCIe Gen5 x16 links for
// NICs: mlcommons/inference_results_v3.1,
// closed/NVIDIA/documentation/start_from_device/dgx-gh200.md). One NUMA
// node holds the CPU and the PCI functions; the domain numbers are the
// simulator's own.
func newGraceNode(st *State) {
	st.Bridges = []*Bridge{
		{PCI: "0000:00:00.0", Secondary: "0000:01", Kind: RootPort, Vendor: "0x10de", DeviceID: idGraceRP, ACSCap: downstreamACS},
		{PCI: "0009:00:00.0", Secondary: "0009:01", Kind: RootPort, Vendor: "0x10de", DeviceID: idGraceRP, ACSCap: downstreamACS},
	}
	for _, b := range st.Bridges {
		b.ACSControl = bootACS(b.ACSCap)
	}
	st.GPUs = []*GPU{{PCI: "0009:01:00.0", Vendor: "0x10de", DeviceID: idGH200, Class: "0x030200"}}
	st.Devices = []*Device{
		cx("mlx5_0", "0000:01:00.0", "0x1021", "a088:c203:0031:7a10", "28.39.1002", "MT_0000000838", 1, "InfiniBand", "ibp1s0f0", "enp1s0f0np0", "400 Gb/sec (4X NDR)"),
		cx("mlx5_1", "0000:01:00.1", "0x1021", "a088:c203:0031:7a11", "28.39.1002", "MT_0000000838", 1, "InfiniBand", "ibp1s0f1", "enp1s0f1np1", "400 Gb/sec (4X NDR)"),
	}
	for i, d := range st.Devices {
		d.Ports[0].LID, d.Ports[0].SMLID = 0x20+i, 1
	}
	st.Firmware = card(newConnectX7VPI, mlxemu.G6, st.Devices)
	setVPD(st.Devices, "NVIDIA ConnectX-7 Adapter Card, 200GbE / NDR200, Dual-port QSFP112, PCIe 5.0x16", "MCX755106AS-HEAT", "MT2421X00777")
}
