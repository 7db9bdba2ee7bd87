// Package sim is rdmaform's simulated host: a directory holding the state
// of a machine with RDMA adapters (sim.yaml) and the sysfs, configfs and
// /proc tree rendered from it. Commands run against it through the same
// providers and parsers as on a real host; only the filesystem root, the
// command runner and netlink are swapped for emulations that follow the
// kernel's and the tools' real behaviour.
package sim

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/rdmaform/rdmaform/sim/mlxemu"
	"github.com/rdmaform/rdmaform/sim/nmemu"
)

// StateFile is the simulated host's state, in its directory.
const StateFile = "sim.yaml"

// State is everything a simulated host is. sim.yaml holds it; the sysfs
// tree is rendered from it.
type State struct {
	Hostname string `yaml:"hostname"`
	// Bootloader is how the host's kernel command line is configured:
	// "" is Debian's GRUB (update-grub on the PATH, /etc/default/grub and
	// grub.d sourced into /boot/grub/grub.cfg); "none" has no bootloader
	// tool; "grubby" and "kernel-install" have those tools.
	Bootloader string `yaml:"bootloader,omitempty"`
	// Cmdline is /proc/cmdline ("": DefaultCmdline); a reboot takes it
	// from the first entry of /boot/grub/grub.cfg when there is one.
	Cmdline string `yaml:"cmdline,omitempty"`
	// Boot counts reboots; the boot_id is derived from it.
	Boot int `yaml:"boot"`
	// Tools installed on PATH: mlxconfig, mstconfig, mst, nmcli, modprobe, ...
	Tools []string `yaml:"tools"`
	// Hypervisor is the hypervisor vendor lscpu names on a virtual
	// machine ("KVM"); "" on bare metal. mstfwreset and mlxfwreset refuse
	// to reset in a virtual machine.
	Hypervisor string `yaml:"hypervisor,omitempty"`

	Devices []*Device `yaml:"devices,omitempty"`
	// Unprobed are adapter functions whose driver failed to probe them
	// after a firmware reset (a no-return reset fault): the PCI function
	// is there (its config space, its SR-IOV attributes) with no driver,
	// so no RDMA device, netdevs or VFs. A reboot probes them again.
	Unprobed []*Device `yaml:"unprobed,omitempty"`

	Netdevs []*Netdev `yaml:"netdevs,omitempty"`
	// Sysctl holds the /proc/sys values written since boot, by path below
	// /proc/sys (sysctl.go); the others have the kernel's defaults.
	Sysctl map[string]string `yaml:"sysctl,omitempty"`

	// Bridges and GPUs are the PCI hierarchy of a GPU node (gpu.go).
	Bridges []*Bridge `yaml:"bridges,omitempty"`
	GPUs    []*GPU    `yaml:"gpus,omitempty"`
	// NVIDIA is the GPU driver (nvidia.go); nil on a host without one.
	NVIDIA *NVIDIADriver `yaml:"nvidia,omitempty"`

	// DefaultRoute names the netdev the default route leaves through (the
	// management network).
	DefaultRoute string `yaml:"default_route,omitempty"`

	// Modules loaded now; BootModules are loaded at every boot (plus what
	// /etc/modules-load.d lists).
	Modules     []string `yaml:"modules,omitempty"`
	BootModules []string `yaml:"boot_modules,omitempty"`
	// Available modules modprobe can load (a module not listed is missing).
	Available []string `yaml:"available_modules,omitempty"`
	// ConfigfsModule: the kernel has configfs as a module, which makes
	// its mount point /sys/kernel/config when it loads (rdma_cm needs it
	// and loads it); false: built in, the directory is always there.
	// ConfigfsUnmounted: nothing is mounted there (a boot mounts it when
	// the directory exists, as systemd's sys-kernel-config.mount does).
	ConfigfsModule    bool `yaml:"configfs_module,omitempty"`
	ConfigfsUnmounted bool `yaml:"configfs_unmounted,omitempty"`

	// RdmaCM holds the kernel's rdma_cm defaults set through configfs, by
	// "dev/port"; unset ports have the kernel's initial values.
	RdmaCM map[string]RoceDefaults `yaml:"rdma_cm,omitempty"`
	// CMGroups are the configfs device groups that exist now (mkdir'ed).
	// They are not saved: the tree holds them (a group is a directory
	// under sys/kernel/config/rdma_cm), so a mkdir or rmdir, which a plan
	// makes for every device it reads, costs no rewrite of sim.yaml.
	CMGroups []string `yaml:"-"`

	// Firmware holds the adapters' firmware configuration as the emulated
	// mlxconfig/mstconfig see it (one entry per PCI function).
	Firmware []*mlxemu.Adapter `yaml:"firmware,omitempty"`
	// MSTStarted: `mst start` has run, so /dev/mst names exist (MFT only).
	MSTStarted bool `yaml:"mst_started,omitempty"`
	// NM is the emulated NetworkManager; nil when it is not installed.
	NM *nmemu.State `yaml:"networkmanager,omitempty"`
	// Systemd is the service manager; nil is one with the stock units.
	Systemd *SystemdState `yaml:"systemd,omitempty"`
	// OpenSM is the opensm package and its subnet manager (sim/opensm.go);
	// nil: opensm is not installed.
	OpenSM *OpenSMState `yaml:"opensm,omitempty"`
	// RdmaRename: rdma-core's udev helper is installed
	// (/usr/lib/udev/rdma_rename, which the names stage's udev rules
	// run), as with the rdma-core package every profile's RDMA stack
	// comes from.
	RdmaRename bool `yaml:"rdma_rename,omitempty"`

	// Latency per tool run (emulated tools sleep this long), e.g.
	// mlxconfig: 1.4s; "TOOL ARG" is the run time of the runs of TOOL
	// with the argument ARG (mlxfwreset reset: 20s).
	Latency map[string]Duration `yaml:"latency,omitempty"`
	// Processes are running processes other than rdmaform (lldpad).
	Processes []Process `yaml:"processes,omitempty"`
	// Mounts, NVMe and KernelCMIDs are kernel users of RDMA besides
	// modules (sim/rdmausers.go): NFS mounts, NVMe controllers, the
	// rdma_cm IDs kernel users hold.
	Mounts      []Mount          `yaml:"mounts,omitempty"`
	NVMe        []NVMeController `yaml:"nvme,omitempty"`
	KernelCMIDs []CMID           `yaml:"kernel_cm_ids,omitempty"`

	// RdmaNetnsMode is the RDMA subsystem's netns mode: shared ("") or
	// exclusive; Netns are the network namespaces besides the initial one
	// (named ones, shown under /run/netns; all gone at a reboot).
	RdmaNetnsMode string   `yaml:"rdma_netns_mode,omitempty"`
	Netns         []string `yaml:"netns,omitempty"`

	// Faults make emulated tools fail, for tests of failure handling.
	Faults []Fault `yaml:"faults,omitempty"`
}

// Device is an RDMA device: a PCI adapter function or a software device.
type Device struct {
	Name     string `yaml:"name"`             // mlx5_0
	Driver   string `yaml:"driver"`           // mlx5, mlx4, rxe
	PCI      string `yaml:"pci,omitempty"`    // 0000:3b:00.0; "" for rxe
	PCIID    string `yaml:"pci_id,omitempty"` // 0x101b
	NodeGUID string `yaml:"node_guid"`        // 0002:c903:000c:c89a
	FWVer    string `yaml:"fw_ver,omitempty"` // 20.35.1012
	BoardID  string `yaml:"board_id,omitempty"`
	// PartNumber and Serial are the card's PCI VPD keywords PN and SN;
	// Product its identifier string. Without a part number the function
	// has no vpd file.
	PartNumber string `yaml:"part_number,omitempty"`
	Serial     string `yaml:"serial,omitempty"`
	Product    string `yaml:"product,omitempty"`
	// NUMANode is the function's numa_node in sysfs (0 unless set).
	NUMANode int `yaml:"numa_node,omitempty"`
	// FlashFW is the firmware version the card's flash holds when a burn
	// wrote another than the running FWVer; a reboot that reloads the
	// firmware runs it.
	FlashFW string `yaml:"flash_fw,omitempty"`
	Parent  string `yaml:"parent,omitempty"` // rxe: its netdev
	// EnhancedIPoIB is true for ConnectX-4 and later: IPoIB runs datagram
	// only (the hardware address has no connected-mode flag).
	EnhancedIPoIB bool    `yaml:"enhanced_ipoib,omitempty"`
	Ports         []*Port `yaml:"ports"`
	// MaxReadReq is the PCI Express Max Read Request Size in bytes set at
	// runtime; 0 is what the firmware sets at boot (pcie.go).
	MaxReadReq int `yaml:"max_read_request,omitempty"`
	// SRIOV is the PF's runtime SR-IOV state (the capability and TotalVFs
	// come from its firmware's SRIOV_EN and NUM_OF_VFS); nil: no VFs.
	SRIOV *SRIOVState `yaml:"sriov,omitempty"`
	// OFED: the MLNX_OFED driver runs it, so its Ethernet netdevs have the
	// per-priority ECN tree.
	OFED bool `yaml:"ofed,omitempty"`
	// DCBXFirmware: the firmware runs DCBX (mlx5 finds version_oper AUTO
	// at probe), so its netdevs start with firmware-owned DCB.
	DCBXFirmware bool `yaml:"dcbx_firmware,omitempty"`
	// KernelName is the name the kernel gave the device, once it was
	// renamed: a reboot gives it back before udev's rules run.
	KernelName string `yaml:"kernel_name,omitempty"`
	// ProbeAt is when the driver probes an Unprobed function again (a
	// late reset fault); zero: only a reboot does.
	ProbeAt time.Time `yaml:"probe_at,omitempty"`
}

// Port is one port of a device.
type Port struct {
	Num       int    `yaml:"port"`
	LinkLayer string `yaml:"link_layer"` // InfiniBand, Ethernet
	State     string `yaml:"state"`      // ACTIVE, DOWN, ...
	PhysState string `yaml:"phys_state"` // LinkUp, Polling, Disabled, ...
	Rate      string `yaml:"rate"`       // 200 Gb/sec (4X HDR)
	LID       int    `yaml:"lid,omitempty"`
	SMLID     int    `yaml:"sm_lid,omitempty"`
	PKeys     []int  `yaml:"pkeys,omitempty"`
	// Mlx4Type is the mlx4 port type setting (ib, eth, auto); mlx4 only.
	Mlx4Type string `yaml:"mlx4_type,omitempty"`
	// Mlx4Boot is the port type the driver starts with after a reboot.
	Mlx4Boot string `yaml:"mlx4_boot,omitempty"`
	// NetdevIB and NetdevEth name the netdev the port has when its link
	// layer is InfiniBand or Ethernet.
	NetdevIB  string `yaml:"netdev_ib,omitempty"`
	NetdevEth string `yaml:"netdev_eth,omitempty"`
	// Peer is the link layer of the switch port at the other end of the
	// cable; a mismatch keeps the port down, as on real fabrics.
	Peer string `yaml:"peer,omitempty"`
}

// Netdev is a network interface.
type Netdev struct {
	Name string `yaml:"name"`
	Kind string `yaml:"kind"` // ether, ipoib, veth, virtio; vlan, bridge, bond (DEVTYPE)
	// KernelName is the kernel's name of a renamed netdev (see Device).
	KernelName string   `yaml:"kernel_name,omitempty"`
	MTU        int      `yaml:"mtu"`
	Up         bool     `yaml:"up"`
	MAC        string   `yaml:"mac"`
	Addrs      []string `yaml:"addrs,omitempty"` // static global, CIDR
	// Dynamic addresses (DHCP) and the kernel's link-local ones.
	DynAddrs []string `yaml:"dyn_addrs,omitempty"`
	// Device/Port tie an adapter netdev to its RDMA port.
	Device string `yaml:"device,omitempty"`
	Port   int    `yaml:"port,omitempty"`
	// PKey of an IPoIB interface (0xffff for the parent).
	PKey int `yaml:"pkey,omitempty"`
	// Mode of an IPoIB interface: datagram or connected.
	Mode string `yaml:"mode,omitempty"`
	// Boot is how the netdev comes up after a reboot (nil: as it is).
	Boot *NetdevBoot `yaml:"boot,omitempty"`
	// VFOf is the PF (PCI address) of a VF's netdev; PCI is the VF's own
	// PCI function. Both empty for other netdevs.
	VFOf string `yaml:"vf_of,omitempty"`
	PCI  string `yaml:"pci,omitempty"`
	// Lower is the netdev a vlan sits on (8021q's real device): the RDMA
	// core gives the port of that netdev GIDs for the vlan's addresses
	// too (drivers/infiniband/core/roce_gid_mgmt.c follows
	// rdma_vlan_dev_real_dev). Empty for other netdevs.
	Lower string `yaml:"lower,omitempty"`
	// DCB, Pause and ECN are the netdev's QoS state (see dcb.go); nil
	// where the driver has none.
	DCB   *DCBState   `yaml:"dcb,omitempty"`
	Pause *PauseState `yaml:"pause,omitempty"`
	ECN   *ECNState   `yaml:"ecn,omitempty"`
	// Rings and Channels are the netdev's ring sizes and queue counts
	// (see ethtool.go); nil where the driver has no such operation.
	Rings    *QueueState `yaml:"rings,omitempty"`
	Channels *QueueState `yaml:"channels,omitempty"`
}

// Process is a running process, shown as /proc/PID/comm.
type Process struct {
	PID  int    `yaml:"pid"`
	Comm string `yaml:"comm"`
}

// NetdevBoot is a netdev's state right after boot.
type NetdevBoot struct {
	MTU   int      `yaml:"mtu"`
	Up    bool     `yaml:"up"`
	Addrs []string `yaml:"addrs,omitempty"`
}

// RoceDefaults are the rdma_cm defaults of one port.
type RoceDefaults struct {
	Mode string `yaml:"mode"`
	Tos  int    `yaml:"tos"`
}

// Fault makes the simulated host fail one kind of operation (see
// faults.go): a tool run (Tool; on a run whose arguments contain Match, or
// all, print Stderr/Stdout and exit with Exit, or hang until the caller's
// timeout), a sysfs/configfs/file write (Write), a netlink operation
// (Netlink) or a service manager call (Systemd). Kill instead SIGKILLs the
// process running against the host when the operation is reached.
type Fault struct {
	Tool    string `yaml:"tool,omitempty"`
	Write   string `yaml:"write,omitempty"`
	Netlink string `yaml:"netlink,omitempty"`
	Systemd string `yaml:"systemd,omitempty"`
	NM      string `yaml:"nm,omitempty"`
	// DBusError is the D-Bus error name of a broken NetworkManager call.
	DBusError string `yaml:"dbus_error,omitempty"`
	// Reset is a firmware reset fault (ResetFaults) of the card whose
	// function Match names (any, if empty).
	Reset string `yaml:"reset,omitempty"`
	// Delay is how long after a late reset the card registers again.
	Delay Duration `yaml:"delay,omitempty"`
	// Errno fails a write, netlink or systemd operation (EIO if empty).
	Errno  string `yaml:"errno,omitempty"`
	Kill   bool   `yaml:"kill,omitempty"`
	Match  string `yaml:"match,omitempty"`
	Exit   int    `yaml:"exit,omitempty"`
	Stdout string `yaml:"stdout,omitempty"`
	Stderr string `yaml:"stderr,omitempty"`
	Hang   bool   `yaml:"hang,omitempty"`
	// Drop makes the operation succeed without effect (a setting that
	// does not stick).
	Drop bool `yaml:"drop,omitempty"`
	// Times limits how often it fires (0: always).
	Times int `yaml:"times,omitempty"`
	// Slow makes the emulated perftest clients measure this share of
	// the bandwidth (0 < Slow < 1) and the latency divided by it: a slow
	// host; Match, if set, is the peer address the runs go to.
	Slow float64 `yaml:"slow,omitempty"`
}

// Duration is a time.Duration written as "1.4s" in sim.yaml.
type Duration time.Duration

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Device returns the device called name, or nil.
func (s *State) Device(name string) *Device {
	for _, d := range s.Devices {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// DeviceByPCI returns the device at a PCI address, or nil.
func (s *State) DeviceByPCI(pci string) *Device {
	for _, d := range s.Devices {
		if d.PCI == pci {
			return d
		}
	}
	return nil
}

// Netdev returns the netdev called name, or nil.
func (s *State) Netdev(name string) *Netdev {
	for _, n := range s.Netdevs {
		if n.Name == name {
			return n
		}
	}
	return nil
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

// HasTool reports whether a tool is on the simulated PATH.
func (s *State) HasTool(name string) bool {
	if t, ok := bootTools[name]; ok {
		return s.Bootloader == t
	}
	for _, t := range s.Tools {
		if t == name {
			return true
		}
	}
	return false
}

// ModuleLoaded reports whether a module is loaded.
// configfsDir: /sys/kernel/config exists (configfs built in or loaded).
func (s *State) configfsDir() bool { return !s.ConfigfsModule || s.ModuleLoaded("configfs") }

// configfsMounted: configfs is mounted at /sys/kernel/config.
func (s *State) configfsMounted() bool { return s.configfsDir() && !s.ConfigfsUnmounted }

func (s *State) ModuleLoaded(name string) bool {
	for _, m := range s.Modules {
		if m == name {
			return true
		}
	}
	return false
}

// BootID is the simulated /proc/sys/kernel/random/boot_id.
func (s *State) BootID() string {
	h := fnv(fmt.Sprintf("%s/%d", s.Hostname, s.Boot))
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", uint32(h), uint16(h>>32), uint16(h>>48)&0xfff, uint16(h>>20)&0xfff, h&0xffffffffffff)
}

func fnv(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

func (s *State) sortAll() {
	sort.Slice(s.Devices, func(i, j int) bool { return s.Devices[i].Name < s.Devices[j].Name })
	sort.Slice(s.Netdevs, func(i, j int) bool { return s.Netdevs[i].Name < s.Netdevs[j].Name })
	sort.Strings(s.Modules)
	sort.Strings(s.CMGroups)
	s.pruneSysctl()
}

// initialRoce is the kernel's initial rdma_cm mode of a port, as
// cma_add_one sets it: RoCE v2 (the preferred GID type) where the port
// supports it, else the first type it supports: IB/RoCE v1 on InfiniBand
// ports and on a ConnectX-3 that is not a Pro.
func initialRoce(d *Device, p *Port) RoceDefaults {
	types := gidTypesOf(d, p)
	if slices.Contains(types, "RoCE v2") {
		return RoceDefaults{Mode: "RoCE v2"}
	}
	return RoceDefaults{Mode: types[0]}
}
