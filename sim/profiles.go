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
	"gpu-switch": "an 8-GPU / 8-NIC node (after the DGX H100): each H100 and its single-port ConnectX-7 below one PCIe switch, two NUMA nodes",
	"gpu-grace":  "a Grace Hopper (GH200) node: the GPU on a root port of its own PCI domain, a dual-port ConnectX-7 on another",
}

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
	return []string{"dcb", "ethtool", "ibv_rc_pingpong", "ip", "mstconfig", "mstfwreset", "mstflint", "modprobe", "nmcli", "ping", "rping", "systemctl"}
}

// NewState returns the state of a simulated host of a profile. adapters is
// used by gpu-node (0 means 8).
func NewState(profile, hostname string, adapters int) (*State, error) {
	st := &State{Hostname: hostname, Tools: defaultTools(), Available: availableModules}
	switch profile {
	case "cx6-vpi-ib":
		st.Modules = append([]string{"ib_ipoib"}, baseModules...)
		st.Devices = []*Device{
			cx("mlx5_0", "0000:3b:00.0", "0x101b", "b859:9f03:0022:626e", "20.35.1012", "MT_0000000222", 1, "InfiniBand", "ib0", "ens1f0np0", "200 Gb/sec (4X HDR)"),
			cx("mlx5_1", "0000:3b:00.1", "0x101b", "b859:9f03:0022:626f", "20.35.1012", "MT_0000000222", 1, "InfiniBand", "ib1", "ens1f1np1", "200 Gb/sec (4X HDR)"),
		}
		for i, d := range st.Devices {
			d.Ports[0].LID, d.Ports[0].SMLID = 0x10+i, 1
		}
		// NVIDIA MFT 4.3x: mlxconfig and mst, no mstconfig.
		st.Tools = []string{"dcb", "ethtool", "flint", "ibv_rc_pingpong", "ip", "mlxconfig", "mlxfwreset", "mst", "modprobe", "nmcli", "ping", "rping", "systemctl"}
		st.Firmware = card(mlxemu.NewConnectX6VPI, mlxemu.G5, st.Devices)
		setVPD(st.Devices, "ConnectX-6 VPI adapter card, HDR IB (200Gb/s) and 200GbE, dual-port QSFP56", "MCX653106A-HDAT", "MT2028X01234")
	case "cx5-roce":
		st.Modules = baseModules
		st.Devices = []*Device{
			cx("mlx5_0", "0000:5e:00.0", "0x1017", "0c42:a103:0065:1d2a", "16.35.2000", "MT_0000000008", 1, "Ethernet", "", "ens1f0np0", "100 Gb/sec (4X EDR)"),
			cx("mlx5_1", "0000:5e:00.1", "0x1017", "0c42:a103:0065:1d2b", "16.35.2000", "MT_0000000008", 1, "Ethernet", "", "ens1f1np1", "100 Gb/sec (4X EDR)"),
		}
		// A distribution's mstflint 4.28 (mstconfig, layout G4); an
		// Ethernet-only card has no LINK_TYPE parameters.
		st.Firmware = card(mlxemu.NewConnectX5Eth, mlxemu.G4, st.Devices)
		setVPD(st.Devices, "CX516A - ConnectX-5 QSFP28", "MCX516A-CCAT", "MT1852K04321")
	case "cx6dx-ofed":
		st.Modules = baseModules
		st.Devices = []*Device{
			cx("mlx5_0", "0000:af:00.0", "0x101d", "b8ce:f603:00a1:5e40", "22.31.2006", "DEL0000000027", 1, "Ethernet", "", "ens2f0np0", "100 Gb/sec (2X HDR)"),
			cx("mlx5_1", "0000:af:00.1", "0x101d", "b8ce:f603:00a1:5e41", "22.31.2006", "DEL0000000027", 1, "Ethernet", "", "ens2f1np1", "100 Gb/sec (2X HDR)"),
		}
		for _, d := range st.Devices {
			d.OFED = true
		}
		// A ConnectX-6 Dx (the PSID and firmware of the card in
		// mlxemu.NewConnectX6Dx) with the CNP and DCBX parameters a
		// lossless RoCE spec sets; mstflint 4.28 (mstconfig, layout G4).
		st.Firmware = card(mlxemu.NewConnectX6Dx, mlxemu.G4, st.Devices)
		setVPD(st.Devices, "ConnectX-6 Dx EN adapter card, 100GbE, Dual-port QSFP56, PCIe 4.0 x16, No Crypto", "MCX623106AN-CDAT", "MT2104X07777")
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
		st.Tools = []string{"dcb", "ethtool", "ibv_rc_pingpong", "ip", "modprobe", "nmcli", "ping", "rping", "systemctl"}
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
		st.Tools = []string{"dcb", "ethtool", "flint", "ibv_rc_pingpong", "ip", "mlxconfig", "mlxfwreset", "mst", "modprobe", "nmcli", "ping", "rping", "systemctl"}
	case "gpu-switch", "gpu-grace":
		st.Modules = append([]string{"ib_ipoib"}, baseModules...)
		if profile == "gpu-switch" {
			newSwitchedGPUNode(st)
		} else {
			newGraceNode(st)
		}
		st.Tools = []string{"dcb", "ethtool", "flint", "ibv_rc_pingpong", "ip", "mlxconfig", "mlxfwreset", "mst", "modprobe", "nmcli", "ping", "rping", "systemctl"}
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
