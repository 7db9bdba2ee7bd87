package sim

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/sim/mlxemu"
)

// Profiles lists the simulated hosts `rdmaform sim new` can create.
var Profiles = map[string]string{
	"cx6-vpi-ib": "dual-port ConnectX-6 VPI, both ports on InfiniBand (HDR), IPoIB ib0/ib1",
	"cx5-roce":   "dual-port ConnectX-5 Ethernet adapter running RoCE, netdevs ens1f0np0/ens1f1np1",
	"cx6dx-ofed": "dual-port ConnectX-6 Dx Ethernet adapter under MLNX_OFED (per-priority ECN tree), netdevs ens2f0np0/ens2f1np1",
	"cx3-mlx4":   "dual-port ConnectX-3 (mlx4) VPI, port types through sysfs",
	"vm-soft":    "a VM with no RDMA adapter and one virtio NIC, for Soft-RoCE",
	"gpu-node":   "a GPU node with N dual-port ConnectX-7 adapters (--adapters N)",
	"cx6-vpi-sm": "a subnet manager node: cx6-vpi-ib with Debian's opensm package installed (not running) and infiniband-diags' sminfo",
	"gpu-switch": "an 8-GPU / 8-NIC node (after the DGX H100): each H100 and its single-port ConnectX-7 below one PCIe switch, two NUMA nodes",
	"gpu-grace":  "a Grace Hopper (GH200) node: the GPU on a root port of its own PCI domain, a dual-port ConnectX-7 on another",
}

// MaxCards bounds --adapters for the profiles of one card model.
const MaxCards = 4

// ProfileNames returns the profile names, sorted.
func ProfileNames() []string {
	var out []string
	for k := range Profiles {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var baseModules = []string{"ib_core", "ib_uverbs", "mlx5_core", "mlx5_ib", "rdma_cm"}

var availableModules = []string{"configfs", "ib_core", "ib_ipoib", "ib_umad", "ib_uverbs", "iw_cm", "mlx4_core", "mlx4_en", "mlx4_ib", "mlx5_core", "mlx5_ib", "rdma_cm", "rdma_rxe", "rdma_ucm", "ib_cm",
	"nvme_rdma", "rpcrdma", "ib_srp", "ib_iser"}

// IBCoreUsers are the modules that use the RDMA core (ib_core): the
// /sys/module/ib_core/holders the simulated kernel lists when they are
// loaded. Drivers and the RDMA stack itself, and its kernel consumers:
// NVMe over RDMA, NFS over RDMA (rpcrdma), SRP, iSER.
var IBCoreUsers = []string{"ib_cm", "ib_ipoib", "ib_iser", "ib_srp", "ib_umad", "ib_uverbs", "iw_cm", "mlx4_ib", "mlx5_ib",
	"nvme_rdma", "rdma_cm", "rdma_rxe", "rdma_ucm", "rpcrdma"}

func defaultTools() []string {
	return []string{"dcb", "ethtool", "ib_read_bw", "ib_send_bw", "ib_write_bw", "ib_write_lat", "ibv_rc_pingpong", "ip", "mstconfig", "mstfwreset", "mstflint", "modprobe", "nmcli", "ping", "rping", "systemctl", "taskset"}
}

// NewState returns the state of a simulated host of a profile. adapters is
// used by gpu-node (0 means 8).
//
// adapters is how many dual-port cards a profile of one card model has
// (0: its default, 1; gpu-node's 8): cx5-roce, cx6-vpi-ib, cx6-vpi-sm
// and cx6dx-ofed take up to MaxCards, each card on a bus of its own
// (0x10 apart) and with its own netdev names, GUIDs and serial; gpu-node
// up to 64. cx3-mlx4 (one ConnectX-3 card) and vm-soft (no adapter)
// refuse it.
func NewState(profile, hostname string, adapters int) (*State, error) {
	st := &State{Hostname: hostname, Tools: defaultTools(), Available: availableModules, RdmaRename: true}
	if _, ok := Profiles[profile]; !ok {
		return nil, fmt.Errorf("unknown profile %q (known: %s)", profile, strings.Join(ProfileNames(), ", "))
	}
	n := 1
	switch {
	case adapters < 0:
		return nil, fmt.Errorf("--adapters %d: a host has at least 1 adapter", adapters)
	case adapters > 0 && (profile == "cx3-mlx4" || profile == "vm-soft" || profile == "gpu-switch" || profile == "gpu-grace"):
		return nil, fmt.Errorf("--adapters does not apply to %s (%s): give it with cx5-roce, cx6-vpi-ib, cx6-vpi-sm, cx6dx-ofed (1-%d cards) or gpu-node (1-64)", profile, Profiles[profile], MaxCards)
	case adapters > MaxCards && profile != "gpu-node":
		return nil, fmt.Errorf("--adapters %d: %s has at most %d cards (one PCI bus 0x10 apart each)", adapters, profile, MaxCards)
	case adapters > 0:
		n = adapters
	}
	switch profile {
	case "cx6-vpi-ib", "cx6-vpi-sm":
		st.Modules = append([]string{"ib_ipoib"}, baseModules...)
		for i := 0; i < n; i++ {
			// Card i: bus 0x3b + 0x10*i, netdevs ib2i/ib2i+1 (ens(1+i)f*).
			devs := []*Device{
				cx(fmt.Sprintf("mlx5_%d", 2*i), fmt.Sprintf("0000:%02x:00.0", 0x3b+0x10*i), "0x101b", fmt.Sprintf("b859:9f03:00%02x:626e", 0x22+i), "20.35.1012", "MT_0000000222", 1, "InfiniBand", fmt.Sprintf("ib%d", 2*i), fmt.Sprintf("ens%df0np0", 1+i), "200 Gb/sec (4X HDR)"),
				cx(fmt.Sprintf("mlx5_%d", 2*i+1), fmt.Sprintf("0000:%02x:00.1", 0x3b+0x10*i), "0x101b", fmt.Sprintf("b859:9f03:00%02x:626f", 0x22+i), "20.35.1012", "MT_0000000222", 1, "InfiniBand", fmt.Sprintf("ib%d", 2*i+1), fmt.Sprintf("ens%df1np1", 1+i), "200 Gb/sec (4X HDR)"),
			}
			for f, d := range devs {
				d.Ports[0].LID, d.Ports[0].SMLID = 0x10+2*i+f, 1
			}
			st.Devices = append(st.Devices, devs...)
			st.Firmware = append(st.Firmware, card(mlxemu.NewConnectX6VPI, mlxemu.G5, devs)...)
			setVPD(devs, "ConnectX-6 VPI adapter card, HDR IB (200Gb/s) and 200GbE, dual-port QSFP56", "MCX653106A-HDAT", fmt.Sprintf("MT2028X%05d", 1234+i))
		}
		// NVIDIA MFT 4.3x: mlxconfig and mst, no mstconfig.
		st.Tools = []string{"dcb", "ethtool", "flint", "ib_read_bw", "ib_send_bw", "ib_write_bw", "ib_write_lat", "ibv_rc_pingpong", "ip", "mlxconfig", "mlxfwreset", "mst", "modprobe", "nmcli", "ping", "rping", "systemctl", "taskset"}
		if profile == "cx6-vpi-sm" {
			// A subnet manager node: Debian's opensm package, installed
			// and not started (as apt-get leaves it on a host whose port
			// had no subnet manager), and infiniband-diags' sminfo.
			st.OpenSM = &OpenSMState{Layout: "debian"}
			st.Tools = append(st.Tools, "sminfo")
		}
	case "cx5-roce":
		st.Modules = baseModules
		for i := 0; i < n; i++ {
			// Card i: bus 0x5e + 0x10*i, netdevs ens(1+i)f0np0/ens(1+i)f1np1.
			devs := []*Device{
				cx(fmt.Sprintf("mlx5_%d", 2*i), fmt.Sprintf("0000:%02x:00.0", 0x5e+0x10*i), "0x1017", fmt.Sprintf("0c42:a103:00%02x:1d2a", 0x65+i), "16.35.2000", "MT_0000000008", 1, "Ethernet", "", fmt.Sprintf("ens%df0np0", 1+i), "100 Gb/sec (4X EDR)"),
				cx(fmt.Sprintf("mlx5_%d", 2*i+1), fmt.Sprintf("0000:%02x:00.1", 0x5e+0x10*i), "0x1017", fmt.Sprintf("0c42:a103:00%02x:1d2b", 0x65+i), "16.35.2000", "MT_0000000008", 1, "Ethernet", "", fmt.Sprintf("ens%df1np1", 1+i), "100 Gb/sec (4X EDR)"),
			}
			st.Devices = append(st.Devices, devs...)
			// A distribution's mstflint 4.28 (mstconfig, layout G4); an
			// Ethernet-only card has no LINK_TYPE parameters.
			st.Firmware = append(st.Firmware, card(mlxemu.NewConnectX5Eth, mlxemu.G4, devs)...)
			setVPD(devs, "CX516A - ConnectX-5 QSFP28", "MCX516A-CCAT", fmt.Sprintf("MT1852K%05d", 4321+i))
		}
	case "cx6dx-ofed":
		st.Modules = baseModules
		for i := 0; i < n; i++ {
			// Card i: bus 0xaf + 0x10*i (at most 0xef), netdevs ens(2+i)f*.
			devs := []*Device{
				cx(fmt.Sprintf("mlx5_%d", 2*i), fmt.Sprintf("0000:%02x:00.0", 0xaf+0x10*i), "0x101d", fmt.Sprintf("b8ce:f603:00%02x:5e40", 0xa1+i), "22.31.2006", "DEL0000000027", 1, "Ethernet", "", fmt.Sprintf("ens%df0np0", 2+i), "100 Gb/sec (2X HDR)"),
				cx(fmt.Sprintf("mlx5_%d", 2*i+1), fmt.Sprintf("0000:%02x:00.1", 0xaf+0x10*i), "0x101d", fmt.Sprintf("b8ce:f603:00%02x:5e41", 0xa1+i), "22.31.2006", "DEL0000000027", 1, "Ethernet", "", fmt.Sprintf("ens%df1np1", 2+i), "100 Gb/sec (2X HDR)"),
			}
			for _, d := range devs {
				d.OFED = true
			}
			st.Devices = append(st.Devices, devs...)
			// A ConnectX-6 Dx (the PSID and firmware of the card in
			// mlxemu.NewConnectX6Dx) with the CNP and DCBX parameters a
			// lossless RoCE spec sets; mstflint 4.28 (mstconfig, layout G4).
			st.Firmware = append(st.Firmware, card(mlxemu.NewConnectX6Dx, mlxemu.G4, devs)...)
			setVPD(devs, "ConnectX-6 Dx EN adapter card, 100GbE, Dual-port QSFP56, PCIe 4.0 x16, No Crypto", "MCX623106AN-CDAT", fmt.Sprintf("MT2104X%05d", 7777+i))
		}
	case "cx3-mlx4":
		st.Modules = []string{"ib_core", "ib_uverbs", "mlx4_core", "mlx4_en", "mlx4_ib", "ib_ipoib"}
		d := &Device{Name: "mlx4_0", Driver: "mlx4", PCI: "0000:81:00.0", PCIID: "0x1003", NodeGUID: "0002:c903:000c:c89a", FWVer: "2.42.5000", BoardID: "MT_1090120019"}
		for n := 1; n <= 2; n++ {
			d.Ports = append(d.Ports, &Port{Num: n, LinkLayer: "InfiniBand", Rate: "40 Gb/sec (4X QDR)", PKeys: []int{0xffff},
				Mlx4Type: "auto", Mlx4Boot: "auto", NetdevIB: fmt.Sprintf("ib%d", n-1), NetdevEth: fmt.Sprintf("ens2d%d", n-1), LID: n + 2, SMLID: 1})
		}
		d.Ports[0].NetdevEth = "ens2"
		st.Devices = []*Device{d}
		setVPD(st.Devices, "CX354A - ConnectX-3 QSFP", "MCX354A-FCBT", "MT1450X01234")
		// Port types go through sysfs; no firmware tool is installed.
		st.Tools = []string{"dcb", "ethtool", "ib_read_bw", "ib_send_bw", "ib_write_bw", "ib_write_lat", "ibv_rc_pingpong", "ip", "modprobe", "nmcli", "ping", "rping", "systemctl", "taskset"}
	case "vm-soft":
		// ib_core is loaded (RDMA netlink answers) as on a VM with
		// rdma-core installed; rdma_rxe is only available.
		st.Modules = []string{"ib_core"}
		st.DefaultRoute = "enp1s0"
		st.Netdevs = []*Netdev{{Name: "enp1s0", Kind: "virtio", MTU: 1500, Up: true, MAC: "52:54:00:12:34:56",
			DynAddrs: []string{"192.168.122.50/24", "fe80::5054:ff:fe12:3456/64"}}}
	case "gpu-node":
		if adapters <= 0 {
			adapters = 8
		}
		st.Modules = append([]string{"ib_ipoib"}, baseModules...)
		if adapters > 64 {
			// Beyond, netdev names such as enP10p112s0f0np0 pass the
			// kernel's 15 bytes.
			return nil, fmt.Errorf("at most 64 adapters")
		}
		for i := 0; i < adapters; i++ {
			// Buses 0x10, 0x20, ... 0xf0 of PCI domain 0, then of domain
			// 1, 2, ... as on hosts with many root complexes; systemd
			// names a netdev of domain N with a "P<N>" prefix (enP1p16s0f0np0).
			domain, bus := i/15, 0x10+(i%15)*0x10
			prefix := ""
			if domain > 0 {
				prefix = fmt.Sprintf("P%d", domain)
			}
			for f := 0; f < 2; f++ {
				n := 2*i + f
				d := cx(fmt.Sprintf("mlx5_%d", n), fmt.Sprintf("%04x:%02x:00.%d", domain, bus, f), "0x1021",
					fmt.Sprintf("a088:c203:00%02x:%04x", i, 0x1a00+f), "28.39.1002", "MT_0000000838", 1, "InfiniBand",
					fmt.Sprintf("ib%sp%ds0f%d", prefix, bus, f), fmt.Sprintf("en%sp%ds0f%dnp%d", prefix, bus, f, f), "400 Gb/sec (4X NDR)")
				d.Ports[0].LID, d.Ports[0].SMLID = 0x100+n, 1
				st.Devices = append(st.Devices, d)
			}
			st.Firmware = append(st.Firmware, card(newConnectX7VPI, mlxemu.G6, st.Devices[2*i:2*i+2])...)
			setVPD(st.Devices[2*i:2*i+2], "NVIDIA ConnectX-7 Adapter Card, 200GbE / NDR200, Dual-port QSFP112, PCIe 5.0x16", "MCX755106AS-HEAT", fmt.Sprintf("MT2421X%05d", 100+i))
		}
		// Newest MFT (4.36+, layout G6): mlxconfig and mst.
		st.Tools = []string{"dcb", "ethtool", "flint", "ib_read_bw", "ib_send_bw", "ib_write_bw", "ib_write_lat", "ibv_rc_pingpong", "ip", "mlxconfig", "mlxfwreset", "mst", "modprobe", "nmcli", "ping", "rping", "systemctl", "taskset"}
	case "gpu-switch", "gpu-grace":
		st.Modules = append([]string{"ib_ipoib"}, baseModules...)
		if profile == "gpu-switch" {
			newSwitchedGPUNode(st)
			st.newNVIDIADriver("570.133.20", "x86_64")
		} else {
			newGraceNode(st)
			st.newNVIDIADriver("570.133.20", "aarch64")
		}
		for _, a := range st.Firmware {
			a.Params = append(a.Params, gpuDirectParams()...)
		}
		st.Tools = []string{"dcb", "ethtool", "flint", "ib_read_bw", "ib_send_bw", "ib_write_bw", "ib_write_lat", "ibv_rc_pingpong", "ip", "mlxconfig", "mlxfwreset", "mst", "modprobe", "nmcli", "ping", "rping", "systemctl", "taskset"}
	default:
		return nil, fmt.Errorf("unknown profile %q (known: %s)", profile, strings.Join(ProfileNames(), ", "))
	}
	st.BootModules = append([]string(nil), st.Modules...)
	st.reconcilePorts()
	for _, n := range st.Netdevs {
		if n.Boot == nil {
			n.Boot = &NetdevBoot{MTU: n.MTU, Up: n.Up, Addrs: append([]string(nil), n.Addrs...)}
		}
	}
	st.sortAll()
	return st, nil
}

// card returns the firmware of one card: one emulated adapter per PCI
// function of devs, all with the same parameters (they live in the card's
// flash), printed in layout l.
func card(preset func(bdf, rdmaName string) *mlxemu.Adapter, l mlxemu.Layout, devs []*Device) []*mlxemu.Adapter {
	var out []*mlxemu.Adapter
	for i, d := range devs {
		a := preset(d.PCI, d.Name)
		a.Layout = l
		a.NUMA = 0
		for _, p := range d.Ports {
			for _, n := range []string{p.NetdevIB, p.NetdevEth} {
				if n != "" && (p.LinkLayer == "InfiniBand") == (n == p.NetdevIB) {
					a.Netdevs = append(a.Netdevs, n)
				}
			}
		}
		if i > 0 {
			a.Params = append([]mlxemu.Param(nil), out[0].Params...)
		}
		out = append(out, a)
	}
	return out
}

// newConnectX7VPI is a dual-port ConnectX-7 VPI card (PCI id 0x1021), both
// ports on InfiniBand (NDR) as shipped.
func newConnectX7VPI(bdf, rdmaName string) *mlxemu.Adapter {
	a := mlxemu.NewConnectX6VPI(bdf, rdmaName)
	a.PCIDeviceID = 0x1021
	a.DeviceType = "ConnectX7"
	a.Name = "MCX755106AS-HEA_Ax"
	a.Description = "NVIDIA ConnectX-7 HHHL adapter card; 200GbE / NDR200 IB (default mode); Dual-port QSFP112; PCIe 5.0 x16; Crypto Disabled; Secure Boot Enabled"
	return a
}

// setVPD gives the PCI functions of one card its VPD (they show the
// card's).
func setVPD(devs []*Device, product, pn, sn string) {
	for _, d := range devs {
		d.Product, d.PartNumber, d.Serial = product, pn, sn
	}
}

// cx builds one mlx5 PCI function with one port.
func cx(name, pci, id, guid, fw, board string, port int, ll, nIB, nEth, rate string) *Device {
	return &Device{Name: name, Driver: "mlx5", PCI: pci, PCIID: id, NodeGUID: guid, FWVer: fw, BoardID: board, EnhancedIPoIB: true,
		Ports: []*Port{{Num: port, LinkLayer: ll, Rate: rate, PKeys: []int{0xffff, 0x8002}, NetdevIB: nIB, NetdevEth: nEth}}}
}
