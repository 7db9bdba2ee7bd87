package sim

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// SR-IOV on the simulated host follows drivers/pci/iov.c: the PF has the
// capability when its firmware has SRIOV_EN=True (current value), with
// sriov_totalvfs = the firmware's current NUM_OF_VFS; sriov_numvfs obeys
// sriov_numvfs_store (see reference/qos-sriov.md §2.1):
//
//   - the value is parsed as kstrtou16 does (base 0, one trailing newline);
//   - above sriov_totalvfs: ERANGE;
//   - the same value as now: success, nothing happens;
//   - 0: the VFs go away;
//   - N while M != 0 VFs are enabled: EBUSY ("M VFs already enabled.
//     Disable before enabling N VFs" in dmesg).
//
// Enabling N VFs creates virtfn0..N-1 links to the VF PCI functions and,
// when drivers_autoprobe is 1, a netdev per VF (the VF driver binds).

// SRIOVState is a physical function's runtime SR-IOV state.
type SRIOVState struct {
	NumVFs int `yaml:"num_vfs"`
	// NoAutoprobe is sriov_drivers_autoprobe=0 (the kernel's default is 1).
	NoAutoprobe bool       `yaml:"no_autoprobe,omitempty"`
	VFs         []*VFState `yaml:"vfs,omitempty"`
	// Dmesg keeps the kernel's messages about this PF, newest last.
	Dmesg []string `yaml:"dmesg,omitempty"`
	// NoGUIDReadback: the kernel does not report VF GUIDs (before 5.5,
	// no ndo_get_vf_guid): ip link shows no "node guid".
	NoGUIDReadback bool `yaml:"no_guid_readback,omitempty"`
	// Rebinds counts VF driver unbind/bind cycles.
	Rebinds int `yaml:"rebinds,omitempty"`
}

// VFState is one virtual function's settings as the PF driver keeps them
// (ip link show PF lists them on vf lines).
type VFState struct {
	MAC       string `yaml:"mac"`
	NodeGUID  string `yaml:"node_guid,omitempty"`
	PortGUID  string `yaml:"port_guid,omitempty"`
	Trust     bool   `yaml:"trust,omitempty"`
	Spoofchk  bool   `yaml:"spoofchk"`
	LinkState string `yaml:"link_state"` // auto, enable, disable
	// Unbound: the VF has no driver (autoprobe off, or unbound by hand).
	Unbound bool `yaml:"unbound,omitempty"`
}

// VF PCI functions follow the PF at First VF Offset 2, VF Stride 1 (the
// ConnectX layout: 0000:3b:00.0 has VFs 0000:3b:00.2, .3, ...).
const (
	vfOffset = 2
	vfStride = 1
)

// sriovCap returns whether the PF at pci has SR-IOV and its TotalVFs.
func (st *State) sriovCap(pci string) (bool, int) {
	for _, a := range st.Firmware {
		if a.BDF != pci {
			continue
		}
		en, num := a.Param("SRIOV_EN"), a.Param("NUM_OF_VFS")
		if en == nil || en.Current != 1 || num == nil {
			return false, 0
		}
		return true, int(num.Current)
	}
	return false, 0
}

// VFAddress is the PCI address of VF i of the PF at pci.
func VFAddress(pci string, i int) string {
	dom, rest, _ := strings.Cut(pci, ":")
	var bus, dev, fn int
	if _, err := fmt.Sscanf(rest, "%x:%x.%x", &bus, &dev, &fn); err != nil {
		return ""
	}
	rid := bus<<8 | dev<<3 | fn
	rid += vfOffset + vfStride*i
	return fmt.Sprintf("%s:%02x:%02x.%x", dom, rid>>8&0xff, rid>>3&0x1f, rid&7)
}

// vfNetdevName is the netdev name of VF i of a PF netdev (ens1f0np0 gives
// ens1f0v0, as systemd names VF netdevs).
func vfNetdevName(pf string, i int) string {
	base := pf
	if j := strings.LastIndex(base, "np"); j > 0 {
		if _, err := strconv.Atoi(base[j+2:]); err == nil {
			base = base[:j]
		}
	}
	return fmt.Sprintf("%sv%d", base, i)
}

var (
	numVFsRE    = regexp.MustCompile(`^/sys/bus/pci/devices/([^/]+)/sriov_numvfs$`)
	autoprobeRE = regexp.MustCompile(`^/sys/bus/pci/devices/([^/]+)/sriov_drivers_autoprobe$`)
	pciDrvRE    = regexp.MustCompile(`^/sys/bus/pci/drivers/([^/]+)/(bind|unbind)$`)
)

// kstrtou16 parses as the kernel does: base 0, one trailing newline.
func kstrtou16(data string) (int, syscall.Errno) {
	s := strings.TrimSuffix(data, "\n")
	n, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, syscall.ERANGE
		}
		return 0, syscall.EINVAL
	}
	if n > 0xffff {
		return 0, syscall.ERANGE
	}
	return int(n), 0
}

// pfNetdev is the netdev of the PF's first port.
func (st *State) pfNetdev(d *Device) *Netdev {
	if len(d.Ports) == 0 {
		return nil
	}
	return st.portNetdev(d, d.Ports[0])
}

// writeNumVFs is sriov_numvfs_store.
func (st *State) writeNumVFs(name, pci, data string) error {
	d := st.DeviceByPCI(pci)
	ok, total := st.sriovCap(pci)
	if d == nil && ok && st.unprobed(pci) {
		// sriov_numvfs_store: no driver bound to the PF.
		return perr("write", name, syscall.ENOENT)
	}
	if d == nil || !ok {
		return perr("open", name, syscall.ENOENT)
	}
	n, errno := kstrtou16(data)
	if errno != 0 {
		return perr("write", name, errno)
	}
	if n > total {
		return perr("write", name, syscall.ERANGE)
	}
	if d.SRIOV == nil {
		d.SRIOV = &SRIOVState{}
	}
	s := d.SRIOV
	if n == s.NumVFs {
		return nil
	}
	if n == 0 {
		st.disableVFs(d)
		return nil
	}
	if s.NumVFs != 0 {
		s.Dmesg = append(s.Dmesg, fmt.Sprintf("%s: %d VFs already enabled. Disable before enabling %d VFs", pci, s.NumVFs, n))
		return perr("write", name, syscall.EBUSY)
	}
	s.NumVFs = n
	s.VFs = nil
	for i := 0; i < n; i++ {
		// VF GUIDs start zeroed; an Ethernet VF's MAC too until set.
		vf := &VFState{MAC: "00:00:00:00:00:00", Spoofchk: true, LinkState: "auto", Unbound: s.NoAutoprobe}
		if len(d.Ports) > 0 && d.Ports[0].LinkLayer == "InfiniBand" {
			vf.NodeGUID, vf.PortGUID = "00:00:00:00:00:00:00:00", "00:00:00:00:00:00:00:00"
			vf.Spoofchk = false
		}
		s.VFs = append(s.VFs, vf)
	}
	st.syncVFNetdevs(d)
	return nil
}

func (st *State) disableVFs(d *Device) {
	d.SRIOV.NumVFs = 0
	d.SRIOV.VFs = nil
	st.syncVFNetdevs(d)
}

// syncVFNetdevs gives each bound VF of d its netdev (new ones come up
// down, as the kernel registers them) and removes the others; netdevs of
// VFs that stay keep their state.
func (st *State) syncVFNetdevs(d *Device) {
	pf := st.pfNetdev(d)
	want := map[string]int{}
	if d.SRIOV != nil && pf != nil {
		for i, vf := range d.SRIOV.VFs {
			if !vf.Unbound {
				want[VFAddress(d.PCI, i)] = i
			}
		}
	}
	var keep []*Netdev
	have := map[string]bool{}
	for _, n := range st.Netdevs {
		if n.VFOf == d.PCI {
			if _, ok := want[n.PCI]; !ok {
				continue
			}
			have[n.PCI] = true
		}
		keep = append(keep, n)
	}
	st.Netdevs = keep
	if d.SRIOV == nil || pf == nil {
		return
	}
	for i, vf := range d.SRIOV.VFs {
		addr := VFAddress(d.PCI, i)
		if vf.Unbound || have[addr] {
			continue
		}
		nd := &Netdev{Name: vfNetdevName(pf.Name, i), Kind: pf.Kind, MTU: pf.MTU, VFOf: d.PCI, PCI: addr}
		if pf.Kind == "ipoib" {
			nd.Mode, nd.PKey = "datagram", 0xffff
			nd.MAC = "00:00:10:87:fe:80:00:00:00:00:00:00:" + vf.PortGUID
		} else {
			nd.MAC = vf.MAC
		}
		st.Netdevs = append(st.Netdevs, nd)
	}
}

// writeAutoprobe is sriov_drivers_autoprobe_store: kstrtobool.
func (st *State) writeAutoprobe(name, pci, data string) error {
	d := st.DeviceByPCI(pci)
	if ok, _ := st.sriovCap(pci); d == nil || !ok {
		return perr("open", name, syscall.ENOENT)
	}
	var on bool
	switch strings.TrimSuffix(data, "\n") {
	case "1", "y", "Y", "on", "yes":
		on = true
	case "0", "n", "N", "off", "no":
	default:
		return perr("write", name, syscall.EINVAL)
	}
	if d.SRIOV == nil {
		d.SRIOV = &SRIOVState{}
	}
	d.SRIOV.NoAutoprobe = !on
	return nil
}

// writeBind binds or unbinds a VF (its PCI address) to the PF's driver:
// an IB VF takes GUIDs set through netlink only when it binds again.
func (st *State) writeBind(name, driver, op, data string) error {
	bdf := strings.TrimSuffix(data, "\n")
	for _, d := range st.Devices {
		if d.SRIOV == nil || driver != d.Driver+"_core" {
			continue
		}
		for i, vf := range d.SRIOV.VFs {
			if VFAddress(d.PCI, i) != bdf {
				continue
			}
			switch {
			case op == "unbind" && vf.Unbound, op == "bind" && !vf.Unbound:
				if op == "unbind" {
					return perr("write", name, syscall.ENODEV)
				}
				return perr("write", name, syscall.EBUSY)
			}
			vf.Unbound = op == "unbind"
			if op == "bind" {
				d.SRIOV.Rebinds++
			}
			st.syncVFNetdevs(d)
			return nil
		}
	}
	return perr("write", name, syscall.ENODEV)
}

// renderSRIOV writes the PF's SR-IOV attributes and virtfn links.
func (s *State) renderSRIOV(t *tree, d *Device) {
	ok, total := s.sriovCap(d.PCI)
	if !ok {
		return
	}
	pd := s.pciDir(d.PCI)
	sr := d.SRIOV
	if sr == nil {
		sr = &SRIOVState{}
	}
	t.file(pd+"/sriov_totalvfs", fmt.Sprintf("%d\n", total))
	t.file(pd+"/sriov_numvfs", fmt.Sprintf("%d\n", sr.NumVFs))
	ap := "1"
	if sr.NoAutoprobe {
		ap = "0"
	}
	t.file(pd+"/sriov_drivers_autoprobe", ap+"\n")
	t.file(pd+"/sriov_offset", fmt.Sprintf("%d\n", vfOffset))
	t.file(pd+"/sriov_stride", fmt.Sprintf("%d\n", vfStride))
	for i, vf := range sr.VFs {
		vd := s.pciDir(VFAddress(d.PCI, i))
		t.file(vd+"/vendor", "0x15b3\n")
		t.link(vd+"/physfn", "../"+d.PCI)
		t.link(fmt.Sprintf("%s/virtfn%d", pd, i), "../"+VFAddress(d.PCI, i))
		t.link("/sys/bus/pci/devices/"+VFAddress(d.PCI, i), rel("/sys/bus/pci/devices/"+VFAddress(d.PCI, i), vd))
		drv := "/sys/bus/pci/drivers/" + d.Driver + "_core"
		t.file(drv+"/bind", "")
		t.file(drv+"/unbind", "")
		if !vf.Unbound {
			t.link(vd+"/driver", rel(vd+"/driver", drv))
		}
	}
}
