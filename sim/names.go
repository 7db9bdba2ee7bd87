package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"

	"github.com/rdmaform/rdmaform/host"
)

// The RDMA subsystem's netns mode and renames of RDMA devices and
// netdevs, with the kernel's answers as the kernel lab saw them (Debian's
// 6.1): a mode switch while another network namespace exists is EBUSY in
// both directions; renaming an up netdev is EBUSY; a name in use is
// EEXIST; the rxe device follows its netdev's new name.

// RdmaNetnsMode implements host.Net.
func (n *simNet) RdmaNetnsMode() (string, error) {
	var m string
	err := n.read(func(st *State) error {
		if !st.ModuleLoaded("ib_core") {
			return fmt.Errorf("%w: %w", host.ErrNoRDMA, syscall.EPROTONOSUPPORT)
		}
		m = "shared"
		if st.RdmaNetnsMode == "exclusive" {
			m = "exclusive"
		}
		return nil
	})
	return m, err
}

// RdmaSetNetnsMode implements host.Net.
func (n *simNet) RdmaSetNetnsMode(mode string) error {
	if err := n.sim.inject(faultNetlink, "RdmaSetNetnsMode", mode); err != nil {
		return unlessDropped(err)
	}
	return n.sim.mutate(false, func(st *State) error {
		if !st.ModuleLoaded("ib_core") {
			return fmt.Errorf("%w: %w", host.ErrNoRDMA, syscall.EPROTONOSUPPORT)
		}
		if mode != "shared" && mode != "exclusive" {
			return fmt.Errorf("rdma system set netns %s: %w", mode, syscall.EINVAL)
		}
		cur := "shared"
		if st.RdmaNetnsMode == "exclusive" {
			cur = "exclusive"
		}
		if cur == mode {
			return nil
		}
		if len(st.Netns) > 0 {
			return fmt.Errorf("rdma system set netns %s: %w", mode, syscall.EBUSY)
		}
		st.RdmaNetnsMode = ""
		if mode == "exclusive" {
			st.RdmaNetnsMode = mode
		}
		return nil
	})
}

// LinkSetName implements host.Net.
func (n *simNet) LinkSetName(old, name string) error {
	if err := n.sim.inject(faultNetlink, "LinkSetName", old+" "+name); err != nil {
		return unlessDropped(err)
	}
	return n.sim.mutate(false, func(st *State) error {
		nd := st.Netdev(old)
		if nd == nil {
			return notFound(old)
		}
		if len(name) == 0 || len(name) > 15 || strings.ContainsAny(name, "/: \t\n") || name == "." || name == ".." {
			return fmt.Errorf("ip link set %s name %s: %w", old, name, syscall.EINVAL)
		}
		if old == name {
			return nil
		}
		if nd.Up {
			return fmt.Errorf("ip link set %s name %s: %w", old, name, syscall.EBUSY)
		}
		if st.Netdev(name) != nil {
			return fmt.Errorf("ip link set %s name %s: %w", old, name, syscall.EEXIST)
		}
		st.renameNetdev(nd, name)
		return nil
	})
}

// RdmaDevSetName implements host.Net. Names longer than 63 bytes the
// kernel cuts to 63 without an error (nla_strscpy into
// IB_DEVICE_NAME_MAX), as the kernel lab saw.
func (n *simNet) RdmaDevSetName(old, name string) error {
	if err := n.sim.inject(faultNetlink, "RdmaDevSetName", old+" "+name); err != nil {
		return unlessDropped(err)
	}
	return n.sim.mutate(false, func(st *State) error {
		if !st.ModuleLoaded("ib_core") {
			return fmt.Errorf("%w: %w", host.ErrNoRDMA, syscall.EPROTONOSUPPORT)
		}
		d := st.Device(old)
		if d == nil {
			return fmt.Errorf("rdma dev set %s name %s: %w", old, name, syscall.ENODEV)
		}
		if len(name) > 63 {
			name = name[:63]
		}
		if name == old {
			return nil
		}
		if st.Device(name) != nil {
			return fmt.Errorf("rdma dev set %s name %s: %w", old, name, syscall.EEXIST)
		}
		st.renameDevice(d, name)
		return nil
	})
}

// renameNetdev gives a netdev a new name everywhere the state names it.
func (st *State) renameNetdev(nd *Netdev, name string) {
	old := nd.Name
	if nd.KernelName == "" {
		nd.KernelName = old
	}
	if nd.KernelName == name {
		nd.KernelName = ""
	}
	nd.Name = name
	st.renameSysctl(old, name)
	for _, d := range st.Devices {
		if d.Parent == old {
			d.Parent = name
		}
		for _, p := range d.Ports {
			if p.NetdevIB == old {
				p.NetdevIB = name
			}
			if p.NetdevEth == old {
				p.NetdevEth = name
			}
		}
	}
	if st.DefaultRoute == old {
		st.DefaultRoute = name
	}
}

// renameDevice gives an RDMA device a new name everywhere the state
// names it.
func (st *State) renameDevice(d *Device, name string) {
	old := d.Name
	if d.KernelName == "" {
		d.KernelName = old
	}
	if d.KernelName == name {
		d.KernelName = ""
	}
	d.Name = name
	for _, nd := range st.Netdevs {
		if nd.Device == old {
			nd.Device = name
		}
	}
	cm := map[string]RoceDefaults{}
	for k, v := range st.RdmaCM {
		if dev, port, ok := strings.Cut(k, "/"); ok && dev == old {
			k = name + "/" + port
		}
		cm[k] = v
	}
	if st.RdmaCM != nil {
		st.RdmaCM = cm
	}
	for i, g := range st.CMGroups {
		if g == old {
			st.CMGroups[i] = name
		}
	}
}

// renderNetns shows the named network namespaces under /run/netns (ip
// netns add makes a file there, a bind mount of the namespace).
func (s *State) renderNetns(root string) error {
	dir := filepath.Join(root, "run/netns")
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !contains(s.Netns, e.Name()) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if len(s.Netns) == 0 {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, n := range s.Netns {
		f := filepath.Join(dir, n)
		if _, err := os.Stat(f); err == nil {
			continue
		}
		if err := os.WriteFile(f, nil, 0o444); err != nil {
			return err
		}
	}
	return nil
}

// rebootNames is what a boot does to names and the netns mode: the
// namespaces are gone, ib_core loads with the netns_mode modprobe.d
// gives it, devices and netdevs come up with the kernel's names and udev
// renames those its rules match.
func (s *Sim) rebootNames(st *State) {
	st.Netns = nil
	st.RdmaNetnsMode = ""
	if s.modprobeNetnsMode() == "0" {
		st.RdmaNetnsMode = "exclusive"
	}
	for _, nd := range st.Netdevs {
		if nd.KernelName != "" {
			st.renameNetdev(nd, nd.KernelName)
		}
	}
	for _, d := range st.Devices {
		if d.KernelName != "" {
			st.renameDevice(d, d.KernelName)
		}
	}
	for _, r := range s.udevRules() {
		r.apply(st)
	}
}

// modprobeNetnsMode is the last netns_mode value modprobe.d gives ib_core.
func (s *Sim) modprobeNetnsMode() string {
	files, _ := filepath.Glob(filepath.Join(s.Dir, "etc/modprobe.d/*.conf"))
	sort.Strings(files)
	v := ""
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			w := strings.Fields(l)
			if len(w) < 3 || w[0] != "options" || strings.ReplaceAll(w[1], "-", "_") != "ib_core" {
				continue
			}
			for _, o := range w[2:] {
				if x, ok := strings.CutPrefix(o, "netns_mode="); ok {
					v = map[string]string{"0": "0", "N": "0", "n": "0", "1": "1", "Y": "1", "y": "1"}[x]
				}
			}
		}
	}
	return v
}

// udevRule is one rule of the kind rdmaform's names file holds: the keys
// it matches and the name it gives.
type udevRule struct {
	match map[string]string
	name  string // NAME= for a netdev, rdma_rename's NAME_FIXED for a device
}

var udevKeyRE = regexp.MustCompile(`([A-Z]+(?:\{[A-Za-z_]+\})?)(==|=)"([^"]*)"`)

// udevRules reads /etc/udev/rules.d/*.rules for the two forms rdmaform
// writes: SUBSYSTEM=="net" ... NAME="X" and SUBSYSTEM=="infiniband" ...
// PROGRAM="rdma_rename %k NAME_FIXED X".
func (s *Sim) udevRules() []udevRule {
	files, _ := filepath.Glob(filepath.Join(s.Dir, "etc/udev/rules.d/*.rules"))
	sort.Strings(files)
	var out []udevRule
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			l = strings.TrimSpace(l)
			if l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			r := udevRule{match: map[string]string{}}
			for _, m := range udevKeyRE.FindAllStringSubmatch(l, -1) {
				switch {
				case m[2] == "==":
					r.match[m[1]] = m[3]
				case m[1] == "NAME":
					r.name = m[3]
				case m[1] == "PROGRAM":
					if w := strings.Fields(m[3]); len(w) == 4 && w[0] == "rdma_rename" && w[2] == "NAME_FIXED" {
						r.name = w[3]
					}
				}
			}
			if r.name != "" && r.match["ACTION"] == "add" {
				out = append(out, r)
			}
		}
	}
	return out
}

// apply renames what the rule matches, as udev does at the device's add
// event.
func (r udevRule) apply(st *State) {
	switch r.match["SUBSYSTEM"] {
	case "net":
		for _, nd := range st.Netdevs {
			if r.matchNetdev(st, nd) && st.Netdev(r.name) == nil {
				st.renameNetdev(nd, r.name)
				return
			}
		}
	case "infiniband":
		for _, d := range st.Devices {
			if r.matchDevice(d) && st.Device(r.name) == nil {
				st.renameDevice(d, r.name)
				return
			}
		}
	}
}

func (r udevRule) matchNetdev(st *State, nd *Netdev) bool {
	for k, v := range r.match {
		var got string
		switch k {
		case "ACTION", "SUBSYSTEM":
			continue
		case "KERNELS":
			got = nd.PCI
			if d := st.Device(nd.Device); got == "" && d != nil && !isChild(nd) {
				got = d.PCI // a P_Key child is virtual: no PCI above it
			}
		case "ATTR{address}":
			got = nd.MAC
		case "ATTR{type}":
			got = "1"
			if nd.Kind == "ipoib" {
				got = "32"
			}
		case "ATTR{dev_port}":
			got = fmt.Sprint(nd.Port - 1)
			if isChild(nd) {
				got = "0"
			}
		case "ENV{DEVTYPE}":
			got = devType(nd)
		case "DRIVERS":
			// udev searches the devpath upwards for a driver: a virtual
			// netdev (a P_Key child, a VLAN, veth; the simulator renders its
			// virtio NIC without a device, though a real one has virtio_net)
			// has no device above it; an adapter's netdev and a VF's have
			// their PCI function's driver. The simulator's rules use the
			// pattern "?*" only: any driver.
			if v != "?*" {
				return false
			}
			if st.netdevDir(nd) != "/sys/devices/virtual/net/"+nd.Name {
				got = v
			}
		default:
			return false
		}
		if got != v {
			return false
		}
	}
	return true
}

// devType is the DEVTYPE the kernel gives a netdev in its uevent: the
// drivers that set one (SET_NETDEV_DEVTYPE: 8021q's "vlan", the bridge's
// "bridge", bonding's "bond"); none for a NIC, veth, IPoIB or macvlan.
func devType(nd *Netdev) string {
	switch nd.Kind {
	case "vlan", "bridge", "bond":
		return nd.Kind
	}
	return ""
}

func (r udevRule) matchDevice(d *Device) bool {
	for k, v := range r.match {
		var got string
		switch k {
		case "ACTION", "SUBSYSTEM":
			continue
		case "KERNELS":
			got = d.PCI
		case "ATTR{node_guid}":
			got = d.NodeGUID
		default:
			return false
		}
		if got != v {
			return false
		}
	}
	return true
}

// AddNetns makes a named network namespace, as ip netns add NAME does.
func (s *Sim) AddNetns(name string) error {
	return s.mutate(false, func(st *State) error {
		if contains(st.Netns, name) {
			return fmt.Errorf("ip netns add %s: %w", name, syscall.EEXIST)
		}
		st.Netns = append(st.Netns, name)
		return nil
	})
}

// DelNetns removes a named network namespace, as ip netns del NAME does.
func (s *Sim) DelNetns(name string) error {
	return s.mutate(false, func(st *State) error {
		if !contains(st.Netns, name) {
			return fmt.Errorf("ip netns del %s: %w", name, syscall.ENOENT)
		}
		st.Netns = without(st.Netns, name)
		return nil
	})
}

// loadedModule is what loading a module does besides listing it: ib_core
// takes its netns_mode from modprobe.d.
func (s *Sim) loadedModule(st *State, name string) {
	if name == "nvidia" {
		s.loadNVIDIA(st, false)
	}
	if name == "ib_core" {
		st.RdmaNetnsMode = ""
		if s.modprobeNetnsMode() == "0" {
			st.RdmaNetnsMode = "exclusive"
		}
	}
}
