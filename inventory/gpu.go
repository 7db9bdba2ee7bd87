package inventory

import (
	"encoding"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/host"
)

// GPU is one GPU of the host: a PCI function of class 0x0302 (3D
// controller) or 0x0300 (VGA) from NVIDIA (0x10de) or AMD (0x1002).
type GPU struct {
	PCI    string `json:"pci"`    // BusPCI entry
	Vendor string `json:"vendor"` // BusPCI/BDF/vendor: 0x10de
	// NUMANode is BusPCI/BDF/numa_node; -1 when the kernel knows none.
	NUMANode int `json:"numa_node"`
	// path is where the function sits: its host bridge (pciDDDD:BB), the
	// bridges from the root port down, and the function itself.
	path []string
}

// Relation is how a GPU and an RDMA device's PCI function are connected,
// in the vocabulary of nvidia-smi topo -m, whose legend reads (as printed
// by the driver's nvidia-smi): "PIX = Connection traversing at most a
// single PCIe bridge", "PXB = Connection traversing multiple PCIe bridges
// (without traversing the PCIe Host Bridge)", "PHB = Connection
// traversing PCIe as well as a PCIe Host Bridge (typically the CPU)",
// "NODE = Connection traversing PCIe as well as the interconnect between
// PCIe Host Bridges within a NUMA node", "SYS = Connection traversing
// PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)".
// NVML's nvmlGpuTopologyLevel_t says the same of its levels SINGLE ("all
// devices that only need traverse a single PCIe switch"), MULTIPLE,
// HOSTBRIDGE, NODE and SYSTEM. A switch counts as one bridge: its
// upstream port and the downstream ports the path crosses.
type Relation int

// The relations, nearest first.
const (
	RelationPIX Relation = iota + 1
	RelationPXB
	RelationPHB
	RelationNODE
	RelationSYS
)

// String is nvidia-smi's name of the relation.
func (r Relation) String() string {
	switch r {
	case RelationPIX:
		return "PIX"
	case RelationPXB:
		return "PXB"
	case RelationPHB:
		return "PHB"
	case RelationNODE:
		return "NODE"
	case RelationSYS:
		return "SYS"
	}
	return "relation(" + strconv.Itoa(int(r)) + ")"
}

var _ encoding.TextMarshaler = Relation(0)

// MarshalText writes the relation by name in JSON.
func (r Relation) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// BelowHostBridge reports whether the path stays below one host bridge
// (PIX, PXB, PHB): the bridges on it are all the traffic crosses.
func (r Relation) BelowHostBridge() bool {
	return r == RelationPIX || r == RelationPXB || r == RelationPHB
}

// Affinity is one GPU as an RDMA device's PCI function sees it.
type Affinity struct {
	GPU      string   `json:"gpu"` // the GPU's PCI address
	Relation Relation `json:"relation"`
	// Bridges are the PCI bridges between the function and the GPU, from
	// the function's side: below their common bridge, the common bridge,
	// then down to the GPU; for PHB, NODE and SYS each side's bridges up
	// to its root port.
	Bridges []string `json:"bridges"`
}

// pciAddr is a PCI address as sysfs names a function's directory.
var pciAddr = regexp.MustCompile(`^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

// hostBridge is a root bus's directory under /sys/devices.
var hostBridge = regexp.MustCompile(`^pci[0-9a-f]{4,8}:[0-9a-f]{2}$`)

// pciPath reads where a PCI function sits from its BusPCI link: the
// link's target ends in devices/pciDDDD:BB/BRIDGE/.../BDF (the kernel
// places a device under its parent bridge). ok is false when the link
// cannot be read or has another form (a virtual function of a VM with no
// host bridge directory, a fixture tree without links).
func pciPath(f host.FS, pci string) (p []string, ok bool) {
	link, err := f.Readlink(path.Join(BusPCI, pci))
	if err != nil {
		return nil, false
	}
	parts := strings.Split(path.Clean(link), "/")
	for i, s := range parts {
		if hostBridge.MatchString(s) {
			p = parts[i:]
			break
		}
	}
	if len(p) < 2 || p[len(p)-1] != pci {
		return nil, false
	}
	for _, s := range p[1:] {
		if !pciAddr.MatchString(s) {
			return nil, false
		}
	}
	return p, true
}

// discoverGPUs finds the host's GPUs and, for every RDMA device with a
// PCI function, its bridges up to the root port and its relation to each
// GPU. Nothing here fails the inventory: a function whose attributes or
// link cannot be read is left out, and a device without a readable path
// gets no bridges and no affinity.
func discoverGPUs(f host.FS, inv *Inventory) {
	entries, err := f.ReadDir(BusPCI)
	if err != nil {
		return
	}
	for _, e := range entries {
		pci := e.Name()
		if !pciAddr.MatchString(pci) {
			continue
		}
		vendor := attrAt(f, path.Join(BusPCI, pci, "vendor"))
		if vendor != "0x10de" && vendor != "0x1002" {
			continue
		}
		class, err := strconv.ParseUint(attrAt(f, path.Join(BusPCI, pci, "class")), 0, 32)
		if err != nil || (class>>8 != 0x0302 && class>>8 != 0x0300) {
			continue
		}
		g := &GPU{PCI: pci, Vendor: vendor, NUMANode: -1}
		if n, err := strconv.Atoi(attrAt(f, path.Join(BusPCI, pci, "numa_node"))); err == nil && n >= 0 {
			g.NUMANode = n
		}
		g.path, _ = pciPath(f, pci)
		inv.GPUs = append(inv.GPUs, g)
	}
	sort.Slice(inv.GPUs, func(i, j int) bool { return inv.GPUs[i].PCI < inv.GPUs[j].PCI })
	for _, d := range inv.Devices {
		if d.PCI == "" || d.Parent != "" {
			continue
		}
		d.Bridges, d.GPUAffinity, _ = pathOf(f, d.PCI, d.NUMANode, inv.GPUs)
	}
}

// FunctionPath reads where any PCI function sits (an RDMA device's, a
// GPU's, an NVMe drive's): the bridges above it, nearest first, to its
// root port, and its relation to each GPU of the inventory but itself.
// ok is false when the function is not there or its BusPCI link has no
// host bridge directory.
func (inv *Inventory) FunctionPath(f host.FS, pci string) (bridges []string, gpus []Affinity, ok bool) {
	numa := -1
	if n, err := strconv.Atoi(attrAt(f, path.Join(BusPCI, pci, "numa_node"))); err == nil && n >= 0 {
		numa = n
	}
	return pathOf(f, pci, numa, inv.GPUs)
}

func pathOf(f host.FS, pci string, numa int, gpus []*GPU) (bridges []string, aff []Affinity, ok bool) {
	if !pciAddr.MatchString(pci) {
		return nil, nil, false
	}
	p, ok := pciPath(f, pci)
	if !ok {
		return nil, nil, false
	}
	for i := len(p) - 2; i >= 1; i-- {
		bridges = append(bridges, p[i])
	}
	for _, g := range gpus {
		if g.path == nil || g.PCI == pci {
			continue
		}
		aff = append(aff, affinity(p, numa, g))
	}
	return bridges, aff, true
}

// affinity is the relation of the function at path a (NUMA node numa) to
// a GPU, and the bridges between them.
func affinity(a []string, numa int, g *GPU) Affinity {
	b := g.path
	ba, bb := a[1:len(a)-1], b[1:len(b)-1]
	out := Affinity{GPU: g.PCI, Bridges: []string{}}
	up := func(bs []string) {
		for i := len(bs) - 1; i >= 0; i-- {
			out.Bridges = append(out.Bridges, bs[i])
		}
	}
	if a[0] != b[0] {
		up(ba)
		out.Bridges = append(out.Bridges, bb...)
		out.Relation = RelationSYS
		// numa_node -1: the kernel knows one node (or none): the same.
		if numa == g.NUMANode || numa < 0 || g.NUMANode < 0 {
			out.Relation = RelationNODE
		}
		return out
	}
	k := 0
	for k < len(ba) && k < len(bb) && ba[k] == bb[k] {
		k++
	}
	if k == 0 {
		up(ba)
		out.Bridges = append(out.Bridges, bb...)
		out.Relation = RelationPHB
		return out
	}
	up(ba[k:])
	out.Bridges = append(out.Bridges, ba[k-1])
	out.Bridges = append(out.Bridges, bb[k:]...)
	out.Relation = RelationPIX
	if len(ba)-k > 1 || len(bb)-k > 1 {
		out.Relation = RelationPXB
	}
	return out
}

// GPU returns the GPU at a PCI address, or nil.
func (inv *Inventory) GPU(pci string) *GPU {
	for _, g := range inv.GPUs {
		if g.PCI == pci {
			return g
		}
	}
	return nil
}

// AffinityText is an RDMA device's nearest GPUs for people, those of its
// nearest relation: "GPU 0000:19:00.0 PIX"; "" without GPUs.
func (d *Device) AffinityText() string {
	if len(d.GPUAffinity) == 0 {
		return ""
	}
	best := d.GPUAffinity[0].Relation
	for _, a := range d.GPUAffinity {
		best = min(best, a.Relation)
	}
	var parts []string
	for _, a := range d.GPUAffinity {
		if a.Relation == best {
			parts = append(parts, a.GPU)
		}
	}
	return "GPU " + strings.Join(parts, " ") + " " + best.String()
}
