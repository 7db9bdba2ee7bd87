// Package schema is the rdmaform spec: its types, the loader that keeps
// every value's file position, and validation that collects every finding.
// It is a pure library: it never reads the host.
package schema

import (
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/portstate"
)

// Version is the only spec version this rdmaform understands.
const Version = 1

// Spec is one host's (or one class of hosts') desired RDMA configuration.
type Spec struct {
	Version     int         `yaml:"version" doc:"spec format version; must be 1"`
	Host        *HostSpec   `yaml:"host,omitempty" doc:"host identity checks"`
	Devices     []Device    `yaml:"devices,omitempty" doc:"RDMA adapters, each selected by exactly one of pci, name, node_guid, netdev, or every adapter function that matches match"`
	IPoIB       []IPoIB     `yaml:"ipoib,omitempty" doc:"NetworkManager connections of type infiniband"`
	Rxe         []Rxe       `yaml:"rxe,omitempty" doc:"Soft-RoCE links (not persistent)"`
	Interfaces  []Interface `yaml:"interfaces,omitempty" doc:"plain netlink settings for netdevs NetworkManager does not own"`
	Modules     []string    `yaml:"modules,omitempty" doc:"kernel modules loaded now and listed in /etc/modules-load.d/rdmaform.conf"`
	KernelArgs  []KernelArg `yaml:"kernel_args,omitempty" doc:"kernel command line arguments to add or make absent, written as the host's bootloader takes them (Debian's /etc/default/grub.d/90-rdmaform.cfg and update-grub); effective after a reboot, checked against /proc/cmdline"`
	Services    []Service   `yaml:"services,omitempty" doc:"systemd unit states"`
	Limits      *Limits     `yaml:"limits,omitempty" doc:"resource limits of login sessions (pam_limits), in /etc/security/limits.d/90-rdmaform.conf"`
	Sysctl      *Sysctl     `yaml:"sysctl,omitempty" doc:"the RDMA-relevant kernel settings of /proc/sys, set now and in /etc/sysctl.d/90-rdmaform.conf"`
	Persistence string      `yaml:"persistence,omitempty" enum:"none,boot-unit" default:"none" doc:"none | boot-unit: re-apply volatile settings at boot"`
	Probes      []Probe     `yaml:"probes,omitempty" doc:"connectivity checks (rdmaform probe, audit --probes); they never change the host"`
	// SubnetManager is the opensm side of the fabric: its priority and
	// the partitions it programs into every port's P_Key table.
	SubnetManager *SubnetManager `yaml:"subnet_manager,omitempty" doc:"opensm on this host: priority, partitions (partitions.conf, rdmaform's whole) and an allow-list of opensm.conf options; InfiniBand hosts only"`
	// Rdma is the RDMA subsystem's own settings.
	Rdma *RdmaSystem `yaml:"rdma,omitempty" doc:"the RDMA subsystem: its network namespace mode (rdma system)"`

	// Src maps logical paths ("$.devices[0].pci") to file positions.
	Src *Sources `yaml:"-"`
}

// HostSpec names the host the spec is for.
type HostSpec struct {
	Hostname string `yaml:"hostname,omitempty" doc:"expected hostname; audits report a mismatch"`
	Role     string `yaml:"role,omitempty" enum:"client,server,peer" default:"peer" doc:"lint-only: whether this host opens RDMA CM connections (client), accepts them (server) or both (peer, the default)"`
}

// Device is one RDMA adapter.
type Device struct {
	PCI      string `yaml:"pci,omitempty" doc:"PCI address, e.g. 0000:81:00.0 (stable across reboots)"`
	Name     string `yaml:"name,omitempty" doc:"RDMA device name, e.g. mlx5_0"`
	NodeGUID string `yaml:"node_guid,omitempty" doc:"node GUID as in sysfs, e.g. 0002:c903:000c:c89a"`
	Netdev   string `yaml:"netdev,omitempty" doc:"a netdev of the adapter, e.g. ens3f0"`
	// Match selects every adapter function whose VPD part number, PSID
	// and model are those given; plan expands it to one device per
	// function it selects.
	Match    *Match    `yaml:"match,omitempty" doc:"select every adapter function whose part_number, psid and model (any subset) are these: one spec for a class of hosts; not with pci, name, node_guid or netdev"`
	Optional bool      `yaml:"optional,omitempty" doc:"with match: a host where no adapter matches is not a plan error"`
	Firmware *Firmware `yaml:"firmware,omitempty" doc:"non-volatile firmware parameters (take effect at next boot)"`
	SRIOV    *SRIOV    `yaml:"sriov,omitempty" doc:"runtime SR-IOV virtual functions of this physical function (sriov_numvfs); firmware SRIOV_EN/NUM_OF_VFS cap the count; not persistent"`
	PCIe     *PCIe     `yaml:"pcie,omitempty" doc:"runtime PCI Express settings of this PCI function (its config space); set again by the boot unit"`
	ACS      *ACS      `yaml:"acs,omitempty" doc:"ACS (Access Control Services) of the PCI bridges between this function and the GPUs (their config space); set again by the boot unit"`
	Ports    []Port    `yaml:"ports,omitempty" doc:"settings of the adapter's ports, each by its number"`
	// Names renames the device and its netdev, now and at every boot.
	Names *Names `yaml:"names,omitempty" doc:"names for this PCI function's RDMA device and netdev, set now (rdma dev set, ip link set) and at boot (udev rules in /etc/udev/rules.d/59-rdmaform-names.rules); the device is selected by pci or node_guid, or by match with rail templates ({rail})"`
}

// Names are the names a device and its netdev get.
type Names struct {
	RDMA   string `yaml:"rdma,omitempty" doc:"RDMA device name, 1-63 of letters, digits, _ . - (IB_DEVICE_NAME_MAX 64 with NUL); on a device with match, a rail template: {rail} is the function's rail number"`
	Netdev string `yaml:"netdev,omitempty" pattern:"^[!#&-,.0-9;-\\[\\]-~][!#&-.0-9;-\\[\\]-~]*$" doc:"netdev name, 1-15 bytes (IFNAMSIZ 16 with NUL) of printable ASCII without space, / or : (the kernel's) nor \" \\ $ % (udev's quote, escape and substitutions: the name goes into a udev rule), not starting with -; the netdev is taken down to be renamed and brought back up; on a device with match, a rail template: {rail} is the function's rail number"`
	// FirstRail is the rail number of the first function a match selects
	// (functions ordered by NUMA node, then PCI address).
	FirstRail *int `yaml:"first_rail,omitempty" min:"0" max:"999" default:"0" doc:"with match: the rail number of the first function the match selects, the functions ordered by NUMA node, then PCI address (default 0)"`
}

// RdmaSystem is the RDMA subsystem's own settings.
type RdmaSystem struct {
	NetnsMode string `yaml:"netns_mode,omitempty" enum:"shared,exclusive" doc:"shared: every network namespace sees every RDMA device; exclusive: a device belongs to one namespace (rdma system set netns, and ib_core's netns_mode in /etc/modprobe.d/rdmaform-rdma.conf for the boot)"`
}

// Match is what a class of adapters has in common: every value given
// must be the adapter function's, exactly.
type Match struct {
	PartNumber string `yaml:"part_number,omitempty" pattern:"^[!-~]([ -~]{0,62}[!-~])?$" doc:"the card's part number, the PN of its PCI VPD (e.g. MCX653106A-HDAT): 1-64 printable ASCII characters"`
	PSID       string `yaml:"psid,omitempty" pattern:"^[!-~]{1,16}$" doc:"the firmware's PSID, sysfs board_id (e.g. MT_0000000222): 1-16 printable ASCII characters, no spaces"`
	Model      string `yaml:"model,omitempty" pattern:"^[!-~]{1,32}$" doc:"the kernel's hca_type (e.g. MT4123 for a ConnectX-6): 1-32 printable ASCII characters, no spaces"`
}

// PCIe is a PCI function's PCI Express settings.
type PCIe struct {
	MaxReadRequest *int `yaml:"max_read_request,omitempty" doc:"Max Read Request Size in bytes: 128, 256, 512, 1024, 2048 or 4096 (Device Control bits 14:12, what setpci CAP_EXP+8 sets)"`
}

// ACS is the ACS Control of the bridges on a PCI function's paths to the
// GPUs (the ACS extended capability, ID 0x000D, Control at +6).
type ACS struct {
	PeerToPeer *bool       `yaml:"peer_to_peer,omitempty" doc:"true: on every bridge between this function and each GPU below its host bridge (nvidia-smi's PIX, PXB, PHB), ACS P2P Request Redirect, P2P Completion Redirect and P2P Egress Control are off, the other ACS bits as they are"`
	Bridges    []ACSBridge `yaml:"bridges,omitempty" doc:"an ACS Control value for single bridges above this function or between it and its GPUs (facts -o json lists them: bridges, gpu_affinity[].bridges), for platforms that need an asymmetric mask; it wins over peer_to_peer on that bridge; at most 32"`
}

// ACSBridge is an explicit ACS Control value of one bridge.
type ACSBridge struct {
	PCI     string `yaml:"pci" doc:"the bridge's PCI address, e.g. 0000:17:00.0"`
	Control *int   `yaml:"control" min:"0" max:"65535" doc:"the ACS Control register, written whole: 0 to 0xffff (hex with 0x); bits the bridge's ACS Capability lacks are refused"`
}

// MaxACSBridges is how many bridges one device's acs.bridges may list.
const MaxACSBridges = 32

// MaxReadRequestSizes are the Max Read Request Sizes PCI Express
// encodes (Device Control bits 14:12 = 0..5).
var MaxReadRequestSizes = []int{128, 256, 512, 1024, 2048, 4096}

// SRIOV is the runtime SR-IOV state of a physical function.
type SRIOV struct {
	NumVFs           *int  `yaml:"num_vfs" min:"0" max:"65535" doc:"virtual functions enabled now (sriov_numvfs); at most sriov_totalvfs, which firmware NUM_OF_VFS sets"`
	DriversAutoprobe *bool `yaml:"drivers_autoprobe,omitempty" doc:"sriov_drivers_autoprobe: bind drivers to new VFs (set before the VFs are enabled)"`
	VFs              []VF  `yaml:"vfs,omitempty" doc:"settings of single virtual functions: GUIDs on an InfiniBand PF; mac, trust, spoofchk on an Ethernet PF; state on both"`
}

// VF is the settings of one virtual function, set through netlink on the
// physical function's netdev (ip link set dev PF vf N ...).
type VF struct {
	VF       int    `yaml:"vf" min:"0" max:"65534" doc:"VF number, from 0; below num_vfs"`
	NodeGUID string `yaml:"node_guid,omitempty" doc:"InfiniBand PF: the VF's node GUID, 8 colon-separated hex bytes (02:00:00:00:00:00:00:01); the VF driver is bound again to take it"`
	PortGUID string `yaml:"port_guid,omitempty" doc:"InfiniBand PF: the VF's port GUID, 8 colon-separated hex bytes; needs a subnet manager with virtualization to come up"`
	MAC      string `yaml:"mac,omitempty" doc:"Ethernet PF: the VF's MAC address (unicast)"`
	Trust    *bool  `yaml:"trust,omitempty" doc:"Ethernet PF: trusted VF (may set promiscuous mode, change its MAC)"`
	Spoofchk *bool  `yaml:"spoofchk,omitempty" doc:"Ethernet PF: drop frames whose source MAC is not the VF's"`
	State    string `yaml:"state,omitempty" enum:"auto,enable,disable" doc:"the VF's link state: auto (follows the PF), enable, disable"`
}

// PCIeOnly reports whether the entry sets pcie or acs and nothing else,
// so it may name a PCI function that is no RDMA device (a GPU, an NVMe
// drive, the virtio NIC under Soft-RoCE).
func (d *Device) PCIeOnly() bool {
	return (d.PCIe != nil || d.ACS != nil) && d.Firmware == nil && d.SRIOV == nil && len(d.Ports) == 0
}

// Selector returns which selector the device uses and its value.
func (d *Device) Selector() (kind, value string) {
	switch {
	case d.PCI != "":
		return "pci", d.PCI
	case d.Name != "":
		return "name", d.Name
	case d.NodeGUID != "":
		return "node_guid", d.NodeGUID
	case d.Netdev != "":
		return "netdev", d.Netdev
	}
	return "", ""
}

// Firmware is the mlxconfig side of an adapter.
type Firmware struct {
	Tool   string `yaml:"tool,omitempty" enum:"auto,mlxconfig,mstconfig" default:"auto" doc:"auto picks what is installed"`
	Params Params `yaml:"params,omitempty" doc:"mlxconfig parameters: symbolic (IB, ETH, true) or numeric values"`
	// Version and MinVersion are checked against the running firmware
	// (the RDMA device's fw_ver); with Image, a Version mismatch is burned.
	Version    string `yaml:"version,omitempty" pattern:"^[0-9]{1,5}[.][0-9]{1,5}[.][0-9]{1,5}$" doc:"the running firmware version, exactly: three dotted numbers, each 0..65535 (28.39.1002, as fw_ver shows it); a mismatch is a plan error, or with image a burn"`
	MinVersion string `yaml:"min_version,omitempty" pattern:"^[0-9]{1,5}([.][0-9]{1,5}){0,2}$" doc:"the lowest running firmware version: one to three dotted numbers, each 0..65535, compared number by number with fw_ver (28.39 is met by 28.39.1002 and 28.40.0); not with version"`
	// Image is a firmware image file rdmaform burns when the running
	// firmware is not Version (its version and PSID are checked first).
	Image string `yaml:"image,omitempty" pattern:"^/" doc:"a firmware image file (absolute path, a regular file) to burn when the running firmware is not version: its version (mstflint -i PATH q) must be version and its PSID the adapter's; active after the next reboot or firmware reset"`
}

// Param is one firmware parameter in spec order.
type Param struct {
	Name  string
	Value string // as written: "ETH", "2", "true", "8"
}

// Params keeps firmware parameters in the order the spec gives them.
type Params []Param

// Port is one port of an adapter.
type Port struct {
	Port      int                 `yaml:"port" min:"1" max:"255" doc:"port number, from 1"`
	LinkLayer linklayer.LinkLayer `yaml:"link_layer,omitempty" enum:"InfiniBand,Ethernet" doc:"expected link layer (after a reboot, if firmware changes it)"`
	Type      string              `yaml:"type,omitempty" enum:"ib,eth,auto" doc:"mlx4 only: sysfs mlx4_portN; effective now"`
	Roce      *Roce               `yaml:"roce,omitempty" doc:"configfs rdma_cm defaults; Ethernet ports only; not persistent"`
	QoS       *QoS                `yaml:"qos,omitempty" doc:"lossless RoCE (DCB: trust, PFC, ETS, ECN, pause) of the port's netdev; Ethernet ports only; not persistent (the boot unit sets it again)"`
	Expect    *Expect             `yaml:"expect,omitempty" doc:"audit-only assertions, never changed"`
	Peer      *Peer               `yaml:"peer,omitempty" doc:"lint-only: the port at the other end of the cable; rdmaform lint compares the link layers of both ends"`
}

// Peer names the port at the other end of a port's cable, another host of
// the fleet, for rdmaform lint.
type Peer struct {
	Host   string `yaml:"host" doc:"the peer host: its host.hostname, or its spec file name without extension"`
	Device string `yaml:"device" doc:"the peer device: PCI address or RDMA device name"`
	Port   int    `yaml:"port" min:"1" max:"255" doc:"the peer port number"`
}

// Roce is the rdma_cm default RoCE version and ToS of a port.
type Roce struct {
	Mode string `yaml:"mode,omitempty" enum:"v1,v2" doc:"v1 (\"IB/RoCE v1\") or v2 (\"RoCE v2\")"`
	Tos  *int   `yaml:"tos,omitempty" min:"0" max:"255" doc:"default type of service, 0-255"`
	// DSCP and ECN are the readable form of Tos: Validate computes
	// Tos = DSCP<<2 | (ECN ? 2 : 0) (26 with ECN is 106).
	DSCP *int  `yaml:"dscp,omitempty" min:"0" max:"63" doc:"RoCE DSCP, 0-63: sets tos to dscp<<2 (| 2 with ecn: true); 26 with ECN is tos 106; not with tos"`
	ECN  *bool `yaml:"ecn,omitempty" doc:"with dscp: mark RoCE packets ECN-capable (ECT(0)), tos | 2"`
	// Role is for rdmaform lint only: it overrides host.role for this port.
	Role string `yaml:"role,omitempty" enum:"client,server,peer" doc:"lint-only: this port's RDMA CM role, overriding host.role"`
}

// QoS is the lossless-Ethernet side of a RoCE port: what the NIC must
// agree on with the switch (DSCP trust, PFC on the RoCE priority, ECN,
// global pause off). It lives in the kernel until the next boot.
type QoS struct {
	Trust string `yaml:"trust,omitempty" enum:"dscp,pcp" doc:"which header picks a packet's priority: dscp (the IP DSCP, what RoCE v2 fabrics use) or pcp (the VLAN 802.1p bits)"`
	// DSCPMap overrides entries of the default map DSCP -> DSCP>>3.
	DSCPMap DSCPMap `yaml:"dscp_map,omitempty" doc:"with trust dscp: DSCP: priority overrides on top of the default map (priority = dscp>>3), e.g. {26: 3, 48: 6}"`
	// PFC lists the priorities with priority flow control on; an empty
	// list (pfc: []) turns it off on all eight.
	PFC         *[]int `yaml:"pfc,omitempty" doc:"priorities (0-7) with priority flow control on; [] turns PFC off on all"`
	CableLength *int   `yaml:"cable_length,omitempty" min:"1" max:"999" doc:"cable length in metres, for the PFC headroom of the receive buffers (mlx5: 1-999)"`
	Pause       *bool  `yaml:"pause,omitempty" doc:"global 802.3x pause frames, rx and tx (ethtool -A); lossless RoCE with PFC wants false"`
	ETS         *ETS   `yaml:"ets,omitempty" doc:"enhanced transmission selection: priority to traffic class, and each class's scheduler and bandwidth"`
	// ECN lists the priorities with RoCE congestion control (ECN marking
	// answered by CNPs, DCQCN) on, as reaction and notification point.
	ECN  *[]int `yaml:"ecn,omitempty" doc:"priorities (0-7) with RoCE ECN (DCQCN) on, reaction and notification point; needs the MLNX_OFED sysfs tree (upstream: firmware ROCE_CC_PRIO_MASK_P<n>)"`
	DCBX string `yaml:"dcbx,omitempty" enum:"host,firmware" doc:"who owns DCB on the port: host (these settings; the default when any is given) or firmware (DCBX negotiated with the switch)"`
	// CNP is the DSCP and priority of the congestion notification packets
	// the port sends as notification point.
	CNP *CNP `yaml:"cnp,omitempty" doc:"DSCP and 802.1p priority of the CNPs the port sends (DCQCN notification point); needs the MLNX_OFED sysfs tree (upstream: firmware CNP_DSCP_P<n>, CNP_802P_PRIO_P<n>)"`
}

// CNP is a port's congestion notification packets: MLNX_OFED's
// /sys/class/net/X/ecn/roce_np/cnp_dscp and cnp_802p_prio.
type CNP struct {
	DSCP     *int `yaml:"dscp,omitempty" min:"0" max:"63" doc:"DSCP of the CNPs (0-63; 48 is CS6, a common choice)"`
	Priority *int `yaml:"priority,omitempty" min:"0" max:"7" doc:"802.1p priority of the CNPs (0-7); lint wants it in pfc or on a strict ETS class"`
}

// DSCPMap is a list of DSCP to priority overrides, written as a mapping
// {DSCP: PRIO} and kept in spec order.
type DSCPMap []DSCPPrio

// DSCPPrio maps one DSCP value (0-63) to a priority (0-7).
type DSCPPrio struct {
	DSCP int
	Prio int
}

// ETS is a port's enhanced transmission selection: all three lists, eight
// entries each.
type ETS struct {
	PrioTC []int    `yaml:"prio_tc" doc:"traffic class (0-7) of each priority 0-7: eight entries"`
	TSA    []string `yaml:"tsa" doc:"scheduler of each traffic class 0-7, ets or strict: eight entries"`
	BW     []int    `yaml:"bw" doc:"bandwidth percent of each traffic class 0-7: the ets classes sum to 100, strict classes have 0"`
}

// Expect holds audit-only assertions about a port.
type Expect struct {
	State     portstate.State `yaml:"state,omitempty" enum:"NOP,DOWN,INIT,ARMED,ACTIVE,ACTIVE_DEFER" doc:"port state, as in sysfs"`
	PhysState portstate.Phys  `yaml:"phys_state,omitempty" enum:"Sleep,Polling,Disabled,PortConfigurationTraining,LinkUp,LinkErrorRecovery,Phy Test" doc:"physical state, as in sysfs"`
	MinRate   *int            `yaml:"min_rate,omitempty" min:"1" doc:"minimum rate in Gb/s"`
}

// IPoIB is one NetworkManager connection of type infiniband.
type IPoIB struct {
	Name   string `yaml:"name" doc:"connection name (connection.id)"`
	Parent string `yaml:"parent" doc:"IPoIB netdev, e.g. ib0"`
	PKey   *PKey  `yaml:"pkey,omitempty" doc:"P_Key (0x8002 or 32770): a child interface parent.8002"`
	// Membership acknowledges a limited-membership P_Key (0x0001-0x7fff).
	Membership string  `yaml:"membership,omitempty" enum:"full,limited" default:"full" doc:"P_Key membership: full (default) or limited (pkey 0x0001-0x7fff; a limited member talks only to full members)"`
	Mode       string  `yaml:"mode,omitempty" enum:"datagram,connected" default:"datagram" doc:"transport mode"`
	MTU        *int    `yaml:"mtu,omitempty" min:"1" max:"65520" doc:"datagram <= IB MTU - 4; connected <= 65520"`
	IPv4       *IPConf `yaml:"ipv4,omitempty" doc:"the connection's IPv4 settings (ipv4.*): static addresses make the method manual, none disables IPv4"`
	IPv6       *IPConf `yaml:"ipv6,omitempty" doc:"the connection's IPv6 settings (ipv6.*): static addresses make the method manual, none disables IPv6"`
	State      string  `yaml:"state,omitempty" enum:"up,down,absent" default:"up" doc:"up (default), down or absent"`
	// Autoconnect overrides the default that state implies.
	Autoconnect *bool `yaml:"autoconnect,omitempty" doc:"connection.autoconnect; default yes with state up, no with state down (show writes it when a profile differs)"`
}

// PKey is an InfiniBand partition key; the value as the spec gives it.
type PKey struct {
	Value int    // 1..0xffff, without 0x8000 alone
	Text  string // as written
}

// Interface returns the netdev the connection runs on: the parent, or the
// P_Key child "<parent>.<4 hex digits>" NetworkManager names it.
func (c *IPoIB) Interface() string {
	if c.PKey == nil {
		return c.Parent
	}
	return ChildName(c.Parent, c.Key())
}

// Key is the P_Key the connection is configured with: the full-member
// form (bit 0x8000 set) unless membership is limited, then the limited
// form (bit clear). 0 without a pkey.
func (c *IPoIB) Key() int {
	switch {
	case c.PKey == nil:
		return 0
	case c.Membership == "limited":
		return c.PKey.Value &^ 0x8000
	}
	return FullMember(c.PKey.Value)
}

// Partition is the partition of the connection's P_Key, as its
// full-member key (a port's P_Key table lists it in either form); 0
// without a pkey.
func (c *IPoIB) Partition() int {
	if c.PKey == nil {
		return 0
	}
	return FullMember(c.PKey.Value)
}

// IPConf is an IPv4 or IPv6 configuration.
type IPConf struct {
	Addresses []string `yaml:"addresses,omitempty" doc:"addresses with prefix length"`
	Gateway   string   `yaml:"gateway,omitempty" doc:"default gateway (ipv4.gateway, ipv6.gateway)"`
	DNS       []string `yaml:"dns,omitempty" doc:"DNS server addresses (ipv4.dns, ipv6.dns)"`
}

// Rxe is one Soft-RoCE link.
type Rxe struct {
	Name   string `yaml:"name" doc:"RDMA link name, e.g. rxe0"`
	Netdev string `yaml:"netdev,omitempty" doc:"Ethernet netdev it runs on (not needed with state: absent)"`
	State  string `yaml:"state,omitempty" enum:"present,absent" default:"present" doc:"present (default) or absent"`
}

// Interface is a netdev configured through netlink.
type Interface struct {
	Name string `yaml:"name" doc:"netdev name, e.g. ens3f0np0"`
	// State is the administrative state.
	State string `yaml:"state,omitempty" enum:"up,down" doc:"administrative state (ip link set up, down); absent: left alone"`
	MTU   *int   `yaml:"mtu,omitempty" min:"68" max:"65535" doc:"MTU in bytes (ip link set mtu)"`
	// Addresses is the full set of static global addresses; nil leaves
	// addresses alone, an empty list removes every static one.
	Addresses []string `yaml:"addresses" doc:"the full set of static global addresses (CIDR); [] removes them all"`
	Ethtool   *Ethtool `yaml:"ethtool,omitempty" doc:"ring sizes and channel counts (ethtool -G, -L), each at most the driver's maximum; runtime, set again by the boot unit"`
}

// Ethtool is a netdev's ring sizes and channel counts; nil leaves one
// alone.
type Ethtool struct {
	Rings    *Rings    `yaml:"rings,omitempty" doc:"descriptor ring sizes (ethtool -G): at most the driver's Pre-set maximums of ethtool -g"`
	Channels *Channels `yaml:"channels,omitempty" doc:"queue counts (ethtool -L): at most the driver's Pre-set maximums of ethtool -l"`
}

// Rings are a netdev's receive and transmit ring sizes.
type Rings struct {
	RX *int `yaml:"rx,omitempty" min:"1" max:"1048576" doc:"receive ring entries"`
	TX *int `yaml:"tx,omitempty" min:"1" max:"1048576" doc:"transmit ring entries"`
}

// Channels are a netdev's queue counts.
type Channels struct {
	Combined *int `yaml:"combined,omitempty" min:"0" max:"65535" doc:"combined (rx and tx) channels, what most multi-queue drivers have"`
	RX       *int `yaml:"rx,omitempty" min:"0" max:"65535" doc:"receive-only channels"`
	TX       *int `yaml:"tx,omitempty" min:"0" max:"65535" doc:"transmit-only channels"`
}

// Service is a systemd unit's desired state.
type Service struct {
	Name    string         `yaml:"name" doc:"unit name; .service is added when no suffix is given"`
	Enabled *bool          `yaml:"enabled,omitempty" doc:"started at boot (systemctl enable, disable); absent: left alone"`
	Active  *bool          `yaml:"active,omitempty" doc:"running now (systemctl start, stop); absent: left alone"`
	Limits  *ServiceLimits `yaml:"limits,omitempty" doc:"the unit's resource limits, in the drop-in /etc/systemd/system/UNIT.d/rdmaform.conf"`
}

// Probe is one connectivity check: a name and exactly one kind.
type Probe struct {
	Name   string       `yaml:"name" doc:"probe name, unique in the spec; reports and metrics use it"`
	Ping   *PingProbe   `yaml:"ping,omitempty" doc:"ICMP echo (iputils ping), over IPoIB too"`
	RdmaCM *RdmaCMProbe `yaml:"rdma_cm,omitempty" doc:"an RDMA CM connect and small transfers to a peer (rping); the peer runs rdmaform probe serve"`
	Verbs  *VerbsProbe  `yaml:"verbs,omitempty" doc:"an RC ping-pong over verbs (ibv_rc_pingpong); the peer runs rdmaform probe serve"`
	IB     *IBProbe     `yaml:"ib,omitempty" doc:"InfiniBand MAD ping (ibping), InfiniBand ports only; the peer runs rdmaform probe serve"`
	// Bandwidth and Latency measure the path with perftest; they run one
	// after the other, after the connectivity probes.
	Bandwidth *BandwidthProbe `yaml:"bandwidth,omitempty" doc:"a perftest bandwidth run to a peer (ib_write_bw, ib_read_bw, ib_send_bw) against a floor; the peer runs rdmaform probe serve"`
	Latency   *LatencyProbe   `yaml:"latency,omitempty" doc:"a perftest latency run to a peer (ib_write_lat) against a ceiling; the peer runs rdmaform probe serve"`
}

// Probe defaults and bounds: small, so that a probe run stays short.
const (
	DefaultProbeCount   = 3
	MaxProbeCount       = 100
	DefaultProbeTimeout = "5s"
	MaxProbeTimeoutSecs = 60
	// DefaultRdmaCMPort is rping's own default port.
	DefaultRdmaCMPort = 7174
)

// PingProbe sends ICMP echo requests.
type PingProbe struct {
	To        string `yaml:"to" doc:"peer IP address"`
	Interface string `yaml:"interface,omitempty" doc:"send through this netdev (ping -I)"`
	Count     *int   `yaml:"count,omitempty" min:"1" max:"100" default:"3" doc:"requests, 1-100 (default 3); every one must be answered"`
	Timeout   string `yaml:"timeout,omitempty" default:"5s" doc:"deadline for the whole probe, 1s-60s (default 5s)"`
}

// RdmaCMProbe connects through RDMA CM and ping-pongs a small buffer.
type RdmaCMProbe struct {
	To      string `yaml:"to" doc:"peer IP address (the peer's RDMA CM listens there)"`
	Port    *int   `yaml:"port,omitempty" min:"1" max:"65535" default:"7174" doc:"RDMA CM port, default 7174 (rping's)"`
	Device  string `yaml:"device,omitempty" doc:"local RDMA device expected to carry the traffic; checked before the probe runs"`
	Count   *int   `yaml:"count,omitempty" min:"1" max:"100" default:"3" doc:"ping-pongs, 1-100 (default 3)"`
	Timeout string `yaml:"timeout,omitempty" default:"5s" doc:"deadline for the whole probe, 1s-60s (default 5s)"`
}

// VerbsProbe runs an RC ping-pong through the verbs API.
type VerbsProbe struct {
	To       string `yaml:"to" doc:"peer IP address (out-of-band exchange over TCP)"`
	Device   string `yaml:"device" doc:"local RDMA device"`
	Port     *int   `yaml:"port,omitempty" min:"1" max:"255" default:"1" doc:"port of the local device, default 1"`
	GIDIndex *int   `yaml:"gid_index,omitempty" min:"0" max:"65535" doc:"local GID index (RoCE needs one; default: the RoCE v2 GID of the port's IPv4 address)"`
	Count    *int   `yaml:"count,omitempty" min:"1" max:"100" default:"3" doc:"round trips, 1-100 (default 3)"`
	Timeout  string `yaml:"timeout,omitempty" default:"5s" doc:"deadline for the whole probe, 1s-60s (default 5s)"`
}

// BandwidthProbe measures the bandwidth to a peer with perftest.
type BandwidthProbe struct {
	To            string              `yaml:"to" doc:"peer IP address (perftest's TCP exchange; the RDMA CM address with rdma_cm: true)"`
	Device        string              `yaml:"device,omitempty" doc:"local RDMA device (give device or netdev)"`
	Netdev        string              `yaml:"netdev,omitempty" doc:"the netdev whose RDMA port carries the run (give device or netdev)"`
	Port          *int                `yaml:"port,omitempty" min:"1" max:"255" default:"1" doc:"port of the local device, default 1 (with device)"`
	Test          string              `yaml:"test,omitempty" enum:"write,read,send" default:"write" doc:"write (ib_write_bw), read (ib_read_bw) or send (ib_send_bw)"`
	Size          *int                `yaml:"size,omitempty" min:"1" max:"8388608" default:"65536" doc:"message size in bytes, 1-8388608 (perftest's limit), default 65536"`
	QPs           *int                `yaml:"qps,omitempty" min:"1" max:"16384" default:"1" doc:"queue pairs, 1-16384 (perftest's limit), default 1"`
	Duration      string              `yaml:"duration,omitempty" default:"5s" doc:"how long to send, whole seconds 1s-300s (perftest -D), default 5s; not with iterations"`
	Iterations    *int                `yaml:"iterations,omitempty" min:"5" max:"100000000" doc:"messages per queue pair instead of a duration (perftest -n), 5-100000000"`
	Bidirectional bool                `yaml:"bidirectional,omitempty" doc:"both directions at once (perftest -b); reported and gated per direction"`
	GIDIndex      *int                `yaml:"gid_index,omitempty" min:"0" max:"65535" doc:"local GID index (default on Ethernet: the RoCE v2 GID of the port's IPv4 address)"`
	RdmaCM        bool                `yaml:"rdma_cm,omitempty" doc:"connect through RDMA CM (perftest -R)"`
	TrafficClass  *int                `yaml:"traffic_class,omitempty" min:"0" max:"255" doc:"traffic class of the packets, 0-255 (perftest --tclass, or -T with rdma_cm); checked against the port's priority counters where it has them"`
	TCPPort       *int                `yaml:"tcp_port,omitempty" min:"1" max:"65535" default:"18515" doc:"TCP port of perftest's exchange, default 18515 (perftest's)"`
	CPUs          string              `yaml:"cpus,omitempty" default:"numa" doc:"CPUs to run on: numa (the device's NUMA node, taskset -c its local_cpulist), none, or a list such as 0-7,16"`
	UseCUDA       *int                `yaml:"use_cuda,omitempty" min:"0" max:"63" doc:"GPU index whose memory to send from (perftest --use_cuda)"`
	Floor         string              `yaml:"floor,omitempty" doc:"the least bandwidth that passes: a percentage of the port's rate (90%) or Gb/s (180Gb/s)"`
	LinkLayer     linklayer.LinkLayer `yaml:"link_layer,omitempty" enum:"InfiniBand,Ethernet" doc:"the link layer the run must use (default: the port's own, as sysfs says)"`
	Timeout       string              `yaml:"timeout,omitempty" doc:"deadline for the whole probe, 1s-600s (default: the duration and 20s, or 60s with iterations)"`
}

// LatencyProbe measures the latency to a peer with perftest.
type LatencyProbe struct {
	To           string              `yaml:"to" doc:"peer IP address (perftest's TCP exchange; the RDMA CM address with rdma_cm: true)"`
	Device       string              `yaml:"device,omitempty" doc:"local RDMA device (give device or netdev)"`
	Netdev       string              `yaml:"netdev,omitempty" doc:"the netdev whose RDMA port carries the run (give device or netdev)"`
	Port         *int                `yaml:"port,omitempty" min:"1" max:"255" default:"1" doc:"port of the local device, default 1 (with device)"`
	Test         string              `yaml:"test,omitempty" enum:"write" default:"write" doc:"write (ib_write_lat)"`
	Size         *int                `yaml:"size,omitempty" min:"1" max:"8388608" default:"2" doc:"message size in bytes, 1-8388608, default 2 (perftest's)"`
	Iterations   *int                `yaml:"iterations,omitempty" min:"5" max:"100000000" default:"1000" doc:"round trips, 5-100000000 (perftest -n), default 1000"`
	GIDIndex     *int                `yaml:"gid_index,omitempty" min:"0" max:"65535" doc:"local GID index (default on Ethernet: the RoCE v2 GID of the port's IPv4 address)"`
	RdmaCM       bool                `yaml:"rdma_cm,omitempty" doc:"connect through RDMA CM (perftest -R)"`
	TrafficClass *int                `yaml:"traffic_class,omitempty" min:"0" max:"255" doc:"traffic class of the packets, 0-255 (perftest --tclass, or -T with rdma_cm)"`
	TCPPort      *int                `yaml:"tcp_port,omitempty" min:"1" max:"65535" default:"18515" doc:"TCP port of perftest's exchange, default 18515 (perftest's)"`
	CPUs         string              `yaml:"cpus,omitempty" default:"numa" doc:"CPUs to run on: numa (the device's NUMA node, taskset -c its local_cpulist), none, or a list such as 0-7,16"`
	Ceiling      string              `yaml:"ceiling,omitempty" doc:"the most latency that passes, a duration from 100ns to 1s (e.g. 5us): perftest's median, t_typical"`
	LinkLayer    linklayer.LinkLayer `yaml:"link_layer,omitempty" enum:"InfiniBand,Ethernet" doc:"the link layer the run must use (default: the port's own, as sysfs says)"`
	Timeout      string              `yaml:"timeout,omitempty" doc:"deadline for the whole probe, 1s-600s (default 60s)"`
}

// IBProbe pings a port through InfiniBand management datagrams.
type IBProbe struct {
	Device  string `yaml:"device" doc:"local InfiniBand device"`
	Port    *int   `yaml:"port,omitempty" min:"1" max:"255" default:"1" doc:"local port, default 1"`
	ToLID   *int   `yaml:"to_lid,omitempty" min:"1" max:"49151" doc:"peer port LID (unicast, 1-0xbfff)"`
	ToGUID  string `yaml:"to_guid,omitempty" doc:"peer port GUID, e.g. 0x0002c903000e0b72"`
	Count   *int   `yaml:"count,omitempty" min:"1" max:"100" default:"3" doc:"pings, 1-100 (default 3)"`
	Timeout string `yaml:"timeout,omitempty" default:"5s" doc:"deadline for the whole probe, 1s-60s (default 5s)"`
}
