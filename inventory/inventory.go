// Package inventory discovers the RDMA devices of a host from sysfs: each
// adapter's identity, its ports and their state, and the netdevs that
// belong to each port. It reads through the host's rooted FS only.
package inventory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/portstate"
)

// Sysfs paths.
const (
	ClassInfiniband = "/sys/class/infiniband"
	ClassNet        = "/sys/class/net"
	BusPCI          = "/sys/bus/pci/devices"
)

// Inventory is every RDMA device of a host.
type Inventory struct {
	Devices []*Device // sorted by name
	// GPUs are the host's GPUs, by PCI address (gpu.go).
	GPUs []*GPU `json:"gpus,omitempty"`
}

// Device is one RDMA device (/sys/class/infiniband/<name>).
type Device struct {
	Name     string `json:"name"`                // mlx5_0
	PCI      string `json:"pci,omitempty"`       // device symlink basename; "" for rxe
	NodeGUID string `json:"node_guid,omitempty"` // node_guid
	FWVer    string `json:"fw_ver,omitempty"`    // fw_ver
	HCAType  string `json:"hca_type,omitempty"`  // hca_type (MT4123)
	NodeType string `json:"node_type,omitempty"` // node_type ("1: CA")
	// PSID is the adapter's firmware identity (sysfs board_id: mlx5 copies
	// the PSID from the firmware's QUERY_ADAPTER answer, mlx4 from its
	// VSD); a firmware image must carry the same. "" for rxe.
	PSID string `json:"psid,omitempty"`
	// PartNumber and Serial are the card's part number and serial number,
	// the PN and SN keywords of its PCI VPD (BusPCI/BDF/vpd, root only);
	// "" when the function has no VPD or it cannot be read.
	PartNumber string `json:"part_number,omitempty"`
	Serial     string `json:"serial,omitempty"`
	// NUMANode is the PCI function's NUMA node (BusPCI/BDF/numa_node);
	// -1 when the kernel knows none (one node, or no PCI function).
	NUMANode int `json:"numa_node"`
	// Parent is the netdev of a software device (rxe's parent file).
	Parent string  `json:"parent,omitempty"`
	Ports  []*Port `json:"ports"`
	// Bridges are the PCI bridges above the function, nearest first, to
	// its root port (from its BusPCI link); GPUAffinity its relation to
	// each GPU (gpu.go).
	Bridges     []string   `json:"bridges,omitempty"`
	GPUAffinity []Affinity `json:"gpu_affinity,omitempty"`
}

// Port is one port (/sys/class/infiniband/<dev>/ports/<n>).
type Port struct {
	Num       int                 `json:"port"`
	State     portstate.State     `json:"state"`      // state, name part: ACTIVE
	PhysState portstate.Phys      `json:"phys_state"` // phys_state, name part: LinkUp
	LinkLayer linklayer.LinkLayer `json:"link_layer"` // link_layer: InfiniBand, Ethernet
	Rate      string              `json:"rate"`       // rate: "100 Gb/sec (4X EDR)"
	LID       int                 `json:"lid"`        // lid (hex in sysfs)
	SMLID     int                 `json:"sm_lid"`     // sm_lid (hex in sysfs)
	// GUID is an InfiniBand port's GUID, the low 64 bits of gids/0, as
	// opensm and ibstat -p write it (0x0002c903000a1b2c); "" elsewhere.
	GUID string `json:"port_guid,omitempty"`
	// Netdevs are the netdevs on this port (IPoIB interfaces, the RoCE
	// netdev, rxe's parent), sorted.
	Netdevs []string `json:"netdevs,omitempty"`
	// GIDs are the port's GID table entries in use, by index (Ethernet
	// ports only: on them the types say which RoCE versions the port can
	// use).
	GIDs []GID `json:"gids,omitempty"`
}

// GID types as gid_attrs/types/N names them.
const (
	GIDRoCEv1 = "IB/RoCE v1"
	GIDRoCEv2 = "RoCE v2"
)

// GID is one entry of a port's GID table in use.
type GID struct {
	Index  int    `json:"index"`            // N of gids/N
	GID    string `json:"gid"`              // gids/N: fe80:0000:...
	Type   string `json:"type"`             // gid_attrs/types/N: "IB/RoCE v1" or "RoCE v2"
	Netdev string `json:"netdev,omitempty"` // gid_attrs/ndevs/N
}

// SubnetManagerPresent reports whether a subnet manager answers on an
// InfiniBand port: the port is ACTIVE (it reaches ACTIVE only once an SM
// has configured it) and sysfs sm_lid names the SM's LID (non-zero).
// Ethernet ports have no subnet manager and report false.
func (p *Port) SubnetManagerPresent() bool {
	return p != nil && p.LinkLayer == linklayer.InfiniBand && p.State == portstate.Active && p.SMLID != 0
}

// ConnectX3 is the hca_type of a ConnectX-3 that is not a Pro (PCI
// device 0x1003 = 4099; mlx4_ib prints "MT%d" of the device ID). It has
// RoCE v1 only; the ConnectX-3 Pro (MT4103) has v1 and v2.
const ConnectX3 = "MT4099"

// Supports tells whether the port has a GID of a type (GIDRoCEv1,
// GIDRoCEv2): the kernel refuses a default RoCE mode for which a port has
// no GID (rxe ports have RoCE v2 GIDs only).
func (p *Port) Supports(gidType string) bool {
	for _, g := range p.GIDs {
		if g.Type == gidType {
			return true
		}
	}
	return false
}

// zeroGID is an unused GID table entry.
const zeroGID = "0000:0000:0000:0000:0000:0000:0000:0000"

// RateGbps returns the rate in Gb/s (2.5 for "2.5 Gb/sec (1X SDR)").
func (p *Port) RateGbps() float64 {
	f, _ := strconv.ParseFloat(strings.Fields(p.Rate + " 0")[0], 64)
	return f
}

// Port returns port n, or nil.
func (d *Device) Port(n int) *Port {
	for _, p := range d.Ports {
		if p.Num == n {
			return p
		}
	}
	return nil
}

// Device returns the device called name, or nil.
func (inv *Inventory) Device(name string) *Device {
	for _, d := range inv.Devices {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// Find returns the device a spec selector names (pci, name, node_guid or
// netdev), or nil.
func (inv *Inventory) Find(kind, value string) *Device {
	for _, d := range inv.Devices {
		switch kind {
		case "pci":
			if d.PCI == value {
				return d
			}
		case "name":
			if d.Name == value {
				return d
			}
		case "node_guid":
			if d.NodeGUID == value {
				return d
			}
		case "netdev":
			for _, p := range d.Ports {
				for _, n := range p.Netdevs {
					if n == value {
						return d
					}
				}
			}
		}
	}
	return nil
}

func parseHex(s string) int {
	v, _ := strconv.ParseInt(strings.TrimSpace(s), 0, 32)
	return int(v)
}

// Discover reads every RDMA device and netdev mapping. Devices are read in
// parallel; a device that vanishes while being read is skipped.
func Discover(ctx context.Context, h *host.Host) (*Inventory, error) {
	entries, err := h.FS.ReadDir(ClassInfiniband)
	if errors.Is(err, fs.ErrNotExist) {
		// No RDMA core loaded: no RDMA devices, but the GPUs are there
		// for the PCI functions a spec names (acs on a GPU or a NIC
		// whose driver is not an RDMA one).
		inv := &Inventory{}
		discoverGPUs(h.FS, inv)
		return inv, nil
	}
	if err != nil {
		return nil, err
	}
	devs := make([]*Device, len(entries))
	errs := make([]error, len(entries))
	var wg sync.WaitGroup
	for i, e := range entries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			devs[i], errs[i] = readDevice(h.FS, e.Name())
		}()
	}
	wg.Wait()
	inv := &Inventory{}
	for i, d := range devs {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if d != nil {
			inv.Devices = append(inv.Devices, d)
		}
	}
	sort.Slice(inv.Devices, func(i, j int) bool { return inv.Devices[i].Name < inv.Devices[j].Name })
	if err := mapNetdevs(h, inv); err != nil {
		return nil, err
	}
	discoverGPUs(h.FS, inv)
	return inv, nil
}

func readDevice(f host.FS, name string) (*Device, error) {
	base := path.Join(ClassInfiniband, name)
	if _, err := f.Stat(base); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil // vanished while we read
		}
		return nil, fmt.Errorf("%s: %w", base, err)
	}
	attr := func(a string) string {
		s, _ := host.ReadAttr(f, path.Join(base, a))
		return s
	}
	d := &Device{
		Name:     name,
		NodeGUID: attr("node_guid"),
		FWVer:    attr("fw_ver"),
		HCAType:  attr("hca_type"),
		PSID:     attr("board_id"),
		NodeType: attr("node_type"),
		Parent:   attr("parent"),
	}
	if link, err := f.Readlink(path.Join(base, "device")); err == nil {
		d.PCI = path.Base(link)
	}
	d.NUMANode = -1
	if d.PCI != "" && d.Parent == "" {
		readVPD(f, d)
		if n, err := strconv.Atoi(attrAt(f, path.Join(BusPCI, d.PCI, "numa_node"))); err == nil && n >= 0 {
			d.NUMANode = n
		}
	}
	ports, err := f.ReadDir(path.Join(base, "ports"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, pe := range ports {
		n, err := strconv.Atoi(pe.Name())
		if err != nil {
			continue
		}
		pb := path.Join(base, "ports", pe.Name())
		pa := func(a string) string {
			s, _ := host.ReadAttr(f, path.Join(pb, a))
			return s
		}
		port := &Port{
			Num:       n,
			State:     portstate.OfSysfs(pa("state")),
			PhysState: portstate.PhysOfSysfs(pa("phys_state")),
			LinkLayer: linklayer.LinkLayer(pa("link_layer")),
			Rate:      pa("rate"),
			LID:       parseHex(pa("lid")),
			SMLID:     parseHex(pa("sm_lid")),
		}
		if port.LinkLayer == linklayer.Ethernet {
			port.GIDs = readGIDs(f, pb)
		}
		if port.LinkLayer == linklayer.InfiniBand {
			port.GUID = PortGUIDOfGID(pa("gids/0"))
		}
		d.Ports = append(d.Ports, port)
	}
	sort.Slice(d.Ports, func(i, j int) bool { return d.Ports[i].Num < d.Ports[j].Num })
	return d, nil
}

// attrAt reads one sysfs attribute, "" when it cannot be read.
func attrAt(f host.FS, p string) string {
	s, _ := host.ReadAttr(f, p)
	return s
}

// readVPD reads the part number and serial of a PCI function from its
// VPD. A function without VPD, a VPD only root may read, or one that is
// not in the PCI format leaves them empty: they are for people and for
// matching devices, never needed to plan.
func readVPD(f host.FS, d *Device) {
	data, err := f.ReadFile(path.Join(BusPCI, d.PCI, "vpd"))
	if err != nil || len(data) == 0 {
		return
	}
	v, _ := ParseVPD(data)
	d.PartNumber, d.Serial = v.PartNumber, v.Serial
}

// readGIDs reads a port's GID table entries in use. Unused entries are
// all zeros; the kernel answers EINVAL for their types and ndevs, so only
// entries in use are asked for them.
func readGIDs(f host.FS, port string) []GID {
	ents, err := f.ReadDir(path.Join(port, "gids"))
	if err != nil {
		return nil
	}
	var out []GID
	for _, e := range ents {
		i, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		g, err := host.ReadAttr(f, path.Join(port, "gids", e.Name()))
		if err != nil || g == "" || g == zeroGID {
			continue
		}
		typ, err := host.ReadAttr(f, path.Join(port, "gid_attrs/types", e.Name()))
		if err != nil || typ == "" {
			continue // vanished between the reads, or not a RoCE GID
		}
		nd, _ := host.ReadAttr(f, path.Join(port, "gid_attrs/ndevs", e.Name()))
		out = append(out, GID{Index: i, GID: g, Type: typ, Netdev: nd})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Index < out[b].Index })
	return out
}

// mapNetdevs assigns netdevs to ports: a software device's parent; for a
// PCI device, the netdevs of the PCI function by dev_port (port - 1),
// which covers IPoIB (including P_Key children) and RoCE netdevs. On a live
// host rdmamap's answer for each netdev is preferred where it has one.
func mapNetdevs(h *host.Host, inv *Inventory) error {
	for _, d := range inv.Devices {
		if d.Parent != "" && len(d.Ports) > 0 {
			d.Ports[0].Netdevs = []string{d.Parent}
		}
	}
	entries, err := h.FS.ReadDir(ClassNet)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	byPCI := map[string]*Device{}
	for _, d := range inv.Devices {
		if d.PCI != "" {
			byPCI[d.PCI] = d
		}
	}
	for _, e := range entries {
		nd := e.Name()
		base := path.Join(ClassNet, nd)
		var dev *Device
		// rdmamap answers the first device whose GID table lists the
		// netdev; rxe over a RoCE netdev lists it too. A software device's
		// parent is assigned above, so only a hardware answer is taken.
		if name, ok := h.RdmaDeviceForNetdev(nd); ok {
			if d := inv.Device(name); d != nil && d.Parent == "" {
				dev = d
			}
		}
		if dev == nil {
			link, err := h.FS.Readlink(path.Join(base, "device"))
			if err != nil {
				continue // virtual netdev
			}
			dev = byPCI[path.Base(link)]
		}
		if dev == nil || dev.Parent != "" {
			continue
		}
		portNum := 1
		if s, err := host.ReadAttr(h.FS, path.Join(base, "dev_port")); err == nil {
			if v, err := strconv.Atoi(s); err == nil {
				portNum = v + 1
			}
		} else if s, err := host.ReadAttr(h.FS, path.Join(base, "dev_id")); err == nil {
			portNum = parseHex(s) + 1
		}
		if p := dev.Port(portNum); p != nil {
			p.Netdevs = append(p.Netdevs, nd)
		}
	}
	for _, d := range inv.Devices {
		for _, p := range d.Ports {
			sort.Strings(p.Netdevs)
		}
	}
	return nil
}
