// Package sriov manages the runtime SR-IOV virtual functions of a
// physical function through sysfs: sriov_numvfs and
// sriov_drivers_autoprobe under /sys/bus/pci/devices/PCI. The VFs last
// until the next boot (the boot unit creates them again); how many a PF
// can have (sriov_totalvfs) is set by firmware (SRIOV_EN, NUM_OF_VFS),
// which the firmware provider changes for the next boot.
//
// The kernel's rules (drivers/pci/iov.c, sriov_numvfs_store) shape every
// change: a count above sriov_totalvfs fails with ERANGE, the same count
// is a no-op, and a non-zero count while VFs are enabled fails with EBUSY,
// so going from N to M (both non-zero) is one change made of two writes,
// 0 then M.
package sriov

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/ipoib/nmcli"
	"github.com/rdmaform/rdmaform/schema"
)

// Provider is the SR-IOV provider.
type Provider struct{}

var _ plan.TypedProvider[*Observed, any] = (*Provider)(nil)

// New is the provider as plan.Build and apply take it.
func New() plan.Provider { return plan.Adapt[*Observed, any](&Provider{}) }

// Name implements plan.Provider.
func (*Provider) Name() string { return "sriov" }

// Kind is the kind of this provider's addresses.
const Kind = "sriov"

// Address is the plan address of a PF's SR-IOV state.
func Address(pci string) plan.Address { return plan.Addr(Kind, pci) }

// Dir is the sysfs directory of a PCI function.
func Dir(pci string) string { return "/sys/bus/pci/devices/" + pci }

// PF is what sysfs says of one physical function.
type PF struct {
	// NoCapability: the function has no sriov_* files (SRIOV_EN is off in
	// firmware, or it is not an SR-IOV physical function).
	NoCapability bool
	TotalVFs     int
	NumVFs       int
	Autoprobe    bool
	// VFs are the PCI addresses of the enabled VFs (virtfnN links), in order.
	VFs []string
	// VFNetdevs are the netdevs of the VFs (what disabling them removes).
	VFNetdevs []string
	// VFNetdev[i] is the netdev of VF i ("" when it has none).
	VFNetdev []string
	// Netdev is the PF's own netdev, the one VF settings are made on, and
	// IB says it is an IPoIB netdev (an InfiniBand PF).
	Netdev string
	IB     bool
	// VFInfo is what the PF's driver says of each VF (ip -j link show),
	// read when the spec sets VFs; nil otherwise.
	VFInfo map[int]VFInfo
	// Port is the number of the PF's first RDMA port (its link layer is
	// the PF's).
	Port int
	// MAC is the PF netdev's MAC (an Ethernet PF), and GUIDs its node and
	// port GUID (an InfiniBand PF), in ip link's form, read when the spec
	// sets VFs: a VF must not take its PF's address.
	MAC   string
	GUIDs []string
	// VFsOffline: the PF has VFs but the host is a --root tree, which has
	// no kernel to ask for their settings.
	VFsOffline bool
}

// Observed maps a spec device index to its PF.
type Observed struct {
	PFs map[int]*PF
	// NMOwners are NetworkManager profiles with an sriov setting, by
	// their interface name: a second owner of that PF's VF count.
	NMOwners map[string]nmcli.SRIOVOwner
}

// Observe implements plan.TypedProvider: three small sysfs reads per PF and a
// listing of its virtfn links; nothing is written.
//
// Equivalent to: cat /sys/bus/pci/devices/PCI/sriov_{totalvfs,numvfs,drivers_autoprobe}
func (p *Provider) Observe(ctx context.Context, h *host.Host, req *plan.Request) (*Observed, error) {
	obs := &Observed{PFs: map[int]*PF{}}
	for i, d := range req.Spec.Devices {
		if (d.SRIOV == nil && !req.Full) || req.Devices[i] == nil || req.Devices[i].PCI == "" {
			continue
		}
		pf, err := Read(h, req.Devices[i].PCI)
		if err != nil {
			return nil, err
		}
		obs.PFs[i] = pf
		inv := req.Devices[i]
		if len(inv.Ports) > 0 {
			pf.Port = inv.Ports[0].Num
			pf.IB = inv.Ports[0].LinkLayer == linklayer.InfiniBand
			for _, n := range inv.Ports[0].Netdevs {
				if !strings.Contains(n, ".") {
					pf.Netdev = n
					break
				}
			}
		}
		if !req.Full && len(d.SRIOV.VFs) > 0 {
			pf.MAC, pf.GUIDs = pfAddresses(h, req, inv, pf)
		}
		wantVFs := req.Full || len(d.SRIOV.VFs) > 0
		pf.VFsOffline = wantVFs && pf.NumVFs > 0 && h.Offline()
		if wantVFs && pf.NumVFs > 0 && pf.Netdev != "" && !h.Offline() {
			pf.VFInfo, err = ReadVFs(ctx, h, req.NetdevNow(pf.Netdev))
			if err != nil && !(req.Full && errors.Is(err, host.ErrNotFound)) {
				return nil, err // show without ip keeps the count alone
			}
		}
	}
	if len(obs.PFs) == 0 {
		return nil, nil
	}
	if !h.Offline() && !req.Full {
		owners, err := nmOwners(ctx, h)
		if err != nil {
			return nil, err
		}
		obs.NMOwners = owners
	}
	return obs, nil
}

// pfAddresses reads the addresses of a PF its VFs must not take: an
// Ethernet PF's MAC, an InfiniBand PF's node GUID and port GUID (the low
// half of its port's GID 0), each in ip link's form. What cannot be read
// is left out.
//
// Equivalent to: cat /sys/class/net/PF/address; cat /sys/class/infiniband/DEV/ports/N/gids/0
func pfAddresses(h *host.Host, req *plan.Request, inv *inventory.Device, pf *PF) (mac string, guids []string) {
	if pf.Netdev == "" {
		return "", nil
	}
	if !pf.IB {
		a, err := host.ReadAttr(h.FS, path.Join(inventory.ClassNet, req.NetdevNow(pf.Netdev), "address"))
		if hw, perr := net.ParseMAC(strings.TrimSpace(a)); err == nil && perr == nil && len(hw) == 6 {
			mac = hw.String()
		}
		return mac, nil
	}
	if g := guidOf(inv.NodeGUID); g != "" {
		guids = append(guids, g)
	}
	gid, err := host.ReadAttr(h.FS, path.Join(inventory.ClassInfiniband, req.RDMANow(inv.Name), "ports", strconv.Itoa(pf.Port), "gids", "0"))
	if groups := strings.Split(strings.TrimSpace(gid), ":"); err == nil && len(groups) == 8 {
		if g := guidOf(strings.Join(groups[4:], ":")); g != "" && !slices.Contains(guids, g) {
			guids = append(guids, g)
		}
	}
	return "", guids
}

// guidOf turns sysfs's GUID form (b859:9f03:0022:626e) into ip link's
// (b8:59:9f:03:00:22:62:6e); "" when s is not a GUID.
func guidOf(s string) string {
	h := strings.ReplaceAll(s, ":", "")
	if len(h) != 16 || strings.Count(s, ":") != 3 {
		return ""
	}
	var parts []string
	for i := 0; i < 16; i += 2 {
		parts = append(parts, h[i:i+2])
	}
	return schema.NormalizeVFGUID(strings.Join(parts, ":"))
}

// nmOwners lists the NetworkManager profiles (InfiniBand and Ethernet)
// that carry an sriov setting: NetworkManager sets the VF count of their
// interface when it activates them, also to 0. A host without
// NetworkManager has none.
//
// Equivalent to: the D-Bus calls Settings.ListConnections, then
// GetSettings of every profile at once (host.NetworkManager).
func nmOwners(ctx context.Context, h *host.Host) (map[string]nmcli.SRIOVOwner, error) {
	if h.NM == nil {
		return nil, nil
	}
	conns, err := h.NM.Connections(ctx)
	if host.IsNMNotRunning(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]nmcli.SRIOVOwner{}
	for _, c := range conns {
		s := c.Settings
		if t := s.String("connection", "type"); t != "infiniband" && t != "802-3-ethernet" {
			continue
		}
		if _, ok := s["sriov"]; !ok {
			continue
		}
		vfs := uint32(0)
		if v, ok := s.Value("sriov", "total-vfs"); ok {
			vfs, _ = v.(uint32)
		}
		o := nmcli.SRIOVOwner{UUID: c.UUID(), Name: s.String("connection", "id"), Interface: s.String("connection", "interface-name"), TotalVFs: strconv.FormatUint(uint64(vfs), 10)}
		out[o.Interface] = o
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// Read reads one PF's SR-IOV state.
func Read(h *host.Host, pci string) (*PF, error) {
	if schema.NormalizePCI(pci) != pci {
		return nil, fmt.Errorf("%q is not a PCI address", pci)
	}
	dir := Dir(pci)
	pf := &PF{}
	total, err := readInt(h, path.Join(dir, "sriov_totalvfs"))
	if errors.Is(err, fs.ErrNotExist) {
		pf.NoCapability = true
		return pf, nil
	}
	if err != nil {
		return nil, err
	}
	pf.TotalVFs = total
	if pf.NumVFs, err = readInt(h, path.Join(dir, "sriov_numvfs")); err != nil {
		return nil, err
	}
	ap, err := readInt(h, path.Join(dir, "sriov_drivers_autoprobe"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	pf.Autoprobe = ap == 1 || errors.Is(err, fs.ErrNotExist)
	for i := 0; i < pf.NumVFs; i++ {
		link := path.Join(dir, fmt.Sprintf("virtfn%d", i))
		target, err := h.FS.Readlink(link)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w (sriov_numvfs is %d)", link, err, pf.NumVFs)
		}
		vf := path.Base(target)
		pf.VFs = append(pf.VFs, vf)
		pf.VFNetdev = append(pf.VFNetdev, "")
		ents, err := h.FS.ReadDir(path.Join(Dir(vf), "net"))
		if err != nil {
			continue // no driver bound, or not a network function
		}
		for _, e := range ents {
			pf.VFNetdevs = append(pf.VFNetdevs, e.Name())
			pf.VFNetdev[i] = e.Name()
		}
	}
	return pf, nil
}

func readInt(h *host.Host, name string) (int, error) {
	s, err := host.ReadAttr(h.FS, name)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a number", name, s)
	}
	return n, nil
}
