// Package mlxemu emulates the mlxconfig (MFT) and mstconfig (mstflint)
// command lines, and MFT's `mst`, over a serializable adapter state, for
// rdmaform's simulated host. Output is printed by the emulator's own writer
// (format.go), which shares no code with rdmaform's parser: the tests check
// it against real outputs, so a parser that misreads a layout fails on the
// simulated host as it would on a real one.
package mlxemu

import (
	"fmt"
	"strconv"
	"strings"
)

// ParamType is a firmware parameter's type in the tool's database.
type ParamType int

const (
	// TypeUnsigned prints and accepts plain numbers (NUM_OF_VFS).
	TypeUnsigned ParamType = iota
	// TypeBool is the enum {False=0, True=1} (SRIOV_EN).
	TypeBool
	// TypeEnum prints TEXT(number) from Param.Enum (LINK_TYPE_P1).
	TypeEnum
)

// String returns unsigned, bool or enum.
func (t ParamType) String() string {
	switch t {
	case TypeUnsigned:
		return "unsigned"
	case TypeBool:
		return "bool"
	case TypeEnum:
		return "enum"
	}
	return fmt.Sprintf("ParamType(%d)", int(t))
}

// MarshalText writes unsigned, bool or enum.
func (t ParamType) MarshalText() ([]byte, error) {
	switch t {
	case TypeUnsigned, TypeBool, TypeEnum:
		return []byte(t.String()), nil
	}
	return nil, fmt.Errorf("mlxemu: cannot marshal %v", t)
}

// UnmarshalText reads unsigned, bool or enum.
func (t *ParamType) UnmarshalText(b []byte) error {
	for _, c := range []ParamType{TypeUnsigned, TypeBool, TypeEnum} {
		if string(b) == c.String() {
			*t = c
			return nil
		}
	}
	return fmt.Errorf("mlxemu: unknown parameter type %q (want unsigned, bool or enum)", b)
}

// EnumValue is one name=number entry of an enum parameter, as the tool's
// database lists them (textual_values "IB=0x1,ETH=0x2").
type EnumValue struct {
	Name  string `json:"name" yaml:"name"`
	Value int64  `json:"value" yaml:"value"`
}

// Param is one firmware parameter with its three values.
type Param struct {
	// Name as printed, port suffix included: LINK_TYPE_P1.
	Name string    `json:"name" yaml:"name"`
	Type ParamType `json:"type" yaml:"type"`
	// Enum lists the entries of a TypeEnum parameter in database order.
	Enum []EnumValue `json:"enum,omitempty" yaml:"enum,omitempty"`
	// TLV is the database TLV name, quoted by the read-only error.
	TLV string `json:"tlv,omitempty" yaml:"tlv,omitempty"`
	// Default is the factory value, Current the value the running firmware
	// uses, Next the value stored for the next boot (the only one set writes).
	Default int64 `json:"default" yaml:"default"`
	Current int64 `json:"current" yaml:"current"`
	Next    int64 `json:"next" yaml:"next"`
	// ReadOnly parameters refuse set.
	ReadOnly bool `json:"read_only,omitempty" yaml:"read_only,omitempty"`
	// Max bounds a number the firmware accepts (0: no bound); a set above
	// it fails after the prompt.
	Max int64 `json:"max,omitempty" yaml:"max,omitempty"`
}

// Value renders n the way the tool prints this parameter.
func (p Param) Value(n int64) Cell {
	switch p.Type {
	case TypeBool:
		switch n {
		case 0:
			return EnumCell("False", 0)
		case 1:
			return EnumCell("True", 1)
		}
	case TypeEnum:
		for _, e := range p.Enum {
			if e.Value == n {
				return EnumCell(e.Name, n)
			}
		}
	}
	return NumCell(n)
}

// Parse reads a value given on a set command line the way the tool does: a
// number must name an enum entry (bool: 0 or 1); otherwise the text is
// matched against the entry names without regard to case.
func (p Param) Parse(s string) (int64, bool) {
	n, numErr := strconv.ParseInt(s, 0, 64)
	switch p.Type {
	case TypeUnsigned:
		return n, numErr == nil && n >= 0
	case TypeBool:
		switch {
		case numErr == nil && (n == 0 || n == 1):
			return n, true
		case strings.EqualFold(s, "true"):
			return 1, true
		case strings.EqualFold(s, "false"):
			return 0, true
		}
		return 0, false
	}
	for _, e := range p.Enum {
		if (numErr == nil && e.Value == n) || strings.EqualFold(e.Name, s) {
			return e.Value, true
		}
	}
	return 0, false
}

// Adapter is one emulated PCI function of an NVIDIA adapter with its
// firmware configuration.
type Adapter struct {
	// BDF with domain: 0000:81:00.0.
	BDF string `json:"bdf" yaml:"bdf"`
	// PCIDeviceID, e.g. 0x101b for ConnectX-6; names the /dev/mst node.
	PCIDeviceID uint16 `json:"pci_device_id" yaml:"pci_device_id"`
	// RDMAName is the RDMA device, e.g. mlx5_0; -d accepts it.
	RDMAName string `json:"rdma_name,omitempty" yaml:"rdma_name,omitempty"`
	// Netdevs and NUMA appear in `mst status -v`.
	Netdevs []string `json:"netdevs,omitempty" yaml:"netdevs,omitempty"`
	NUMA    int      `json:"numa,omitempty" yaml:"numa,omitempty"`
	// DeviceType, Name and Description fill the "Device #1:" block.
	DeviceType  string `json:"device_type" yaml:"device_type"`
	Name        string `json:"name" yaml:"name"`
	Description string `json:"description" yaml:"description"`
	// Layout is the version family of the tool installed on the host.
	Layout Layout `json:"layout" yaml:"layout"`
	// NoDefault and NoCurrent: firmware that cannot report these columns.
	NoDefault bool `json:"no_default,omitempty" yaml:"no_default,omitempty"`
	NoCurrent bool `json:"no_current,omitempty" yaml:"no_current,omitempty"`
	// Params in the order a full query prints them.
	Params []Param `json:"params" yaml:"params"`
	// ResetLevels are the firmware reset levels its MFRL register reports
	// (nil: DefaultResetLevels), as mstfwreset query lists them.
	ResetLevels []int `json:"reset_levels,omitempty" yaml:"reset_levels,omitempty"`
	// ResetDriverSync: MCAM reports reset synchronisation by the driver.
	ResetDriverSync bool `json:"reset_driver_sync,omitempty" yaml:"reset_driver_sync,omitempty"`
	// WarmBootRefused: the firmware refuses the MFRL register's warm boot
	// reset trigger, which mstconfig writes after every set on a
	// ConnectX-4 or later adapter; it then says only a power cycle loads
	// the new configuration (mstflint's GenericCommander::
	// loadConfigurationGetStr). ConnectX-3 adapters are never asked.
	WarmBootRefused bool `json:"warm_boot_refused,omitempty" yaml:"warm_boot_refused,omitempty"`
}

// Param returns the named parameter (case-insensitive), or nil.
func (a *Adapter) Param(name string) *Param {
	for i := range a.Params {
		if strings.EqualFold(a.Params[i].Name, name) {
			return &a.Params[i]
		}
	}
	return nil
}

// Reboot moves every Next Boot value to Current, as a reboot or
// mlxfwreset does.
func Reboot(adapters []*Adapter) {
	for _, a := range adapters {
		for i := range a.Params {
			a.Params[i].Current = a.Params[i].Next
		}
	}
}

func withMax(p Param, max int64) Param {
	p.Max = max
	return p
}

func newParam(name string, t ParamType, tlv string, def int64, enum ...EnumValue) Param {
	return Param{Name: name, Type: t, Enum: enum, TLV: tlv, Default: def, Current: def, Next: def}
}

// commonParams are the parameters every ConnectX-4 and later card has
// (formats.md §1.9), at their factory defaults. ports is 1 or 2.
func commonParams(ports int) []Param {
	ps := []Param{
		newParam("SRIOV_EN", TypeBool, "nv_global_pci_conf", 0),
		withMax(newParam("NUM_OF_VFS", TypeUnsigned, "nv_global_pci_conf", 0), 127),
		newParam("ROCE_CONTROL", TypeEnum, "nv_hca_conf", 2,
			EnumValue{"DEVICE_DEFAULT", 0}, EnumValue{"ROCE_DISABLE", 1}, EnumValue{"ROCE_ENABLE", 2}),
	}
	for p := 1; p <= ports; p++ {
		ps = append(ps,
			newParam(fmt.Sprintf("KEEP_IB_LINK_UP_P%d", p), TypeBool, "nv_keep_link_up", 0),
			newParam(fmt.Sprintf("KEEP_ETH_LINK_UP_P%d", p), TypeBool, "nv_keep_link_up", 1),
		)
	}
	for p := 1; p <= ports; p++ {
		ps = append(ps, newParam(fmt.Sprintf("ROCE_CC_PRIO_MASK_P%d", p), TypeUnsigned, "nv_roce_cc", 255))
	}
	return ps
}

// NewConnectX6VPI is a dual-port ConnectX-6 VPI card (PCI id 0x101b) with
// both ports on InfiniBand, as shipped, using MFT 4.3x (layout G5).
func NewConnectX6VPI(bdf, rdmaName string) *Adapter {
	link := func(p int) Param {
		return newParam(fmt.Sprintf("LINK_TYPE_P%d", p), TypeEnum, "nv_vpi_link_type", 1,
			EnumValue{"IB", 1}, EnumValue{"ETH", 2})
	}
	return &Adapter{
		BDF: bdf, PCIDeviceID: 0x101b, RDMAName: rdmaName,
		DeviceType:  "ConnectX6",
		Name:        "MCX653106A-HDA_Ax",
		Description: "ConnectX-6 VPI adapter card; HDR IB (200Gb/s) and 200GbE; dual-port QSFP56; PCIe4.0 x16; tall bracket; ROHS R6",
		Layout:      G5,
		Params:      append([]Param{link(1), link(2)}, commonParams(2)...),
	}
}

// NewConnectX5Eth is a dual-port ConnectX-5 Ethernet card (0x1017): no
// LINK_TYPE parameters, layout G5.
func NewConnectX5Eth(bdf, rdmaName string) *Adapter {
	return &Adapter{
		BDF: bdf, PCIDeviceID: 0x1017, RDMAName: rdmaName,
		DeviceType:  "ConnectX5",
		Name:        "MCX516A-CCAT",
		Description: "ConnectX-5 EN network interface card; 100GbE dual-port QSFP28; PCIe3.0 x16; tall bracket; ROHS R6",
		Layout:      G5,
		Params:      commonParams(2),
	}
}

// NewConnectX6Dx is a dual-port ConnectX-6 Dx Ethernet card (0x101d),
// layout G5, with the parameters a lossless RoCE host sets: the CNP marking
// (CNP_DSCP_Pn, CNP_802P_PRIO_Pn, TLV nv_roce_cc_ecn) and the firmware's
// DCBX (DCBX_IEEE_Pn, DCBX_CEE_Pn, DCBX_WILLING_Pn, TLV nv_lldp_nb_dcbx),
// typed and bounded as mstflint's parameter database has them (6 and 3
// bits). The device block is a real card's (NVIDIA/5t5g issue #3: Dell's
// 0F6FXM, PSID DEL0000000027); the defaults are the ones real queries
// print (48 and 6: ironcore-dev/dpservice issue #26 and
// k8snetworkplumbingwg/sriov-network-operator issue #968; DCBX all True:
// the mstconfig -e fixture of sriov-network-operator's mlxutils tests).
func NewConnectX6Dx(bdf, rdmaName string) *Adapter {
	ps := commonParams(2)
	for p := 1; p <= 2; p++ {
		ps = append(ps,
			withMax(newParam(fmt.Sprintf("CNP_802P_PRIO_P%d", p), TypeUnsigned, "nv_roce_cc_ecn", 6), 7),
			withMax(newParam(fmt.Sprintf("CNP_DSCP_P%d", p), TypeUnsigned, "nv_roce_cc_ecn", 48), 63),
		)
	}
	for p := 1; p <= 2; p++ {
		ps = append(ps,
			newParam(fmt.Sprintf("DCBX_IEEE_P%d", p), TypeBool, "nv_lldp_nb_dcbx", 1),
			newParam(fmt.Sprintf("DCBX_CEE_P%d", p), TypeBool, "nv_lldp_nb_dcbx", 1),
			newParam(fmt.Sprintf("DCBX_WILLING_P%d", p), TypeBool, "nv_lldp_nb_dcbx", 1),
		)
	}
	return &Adapter{
		BDF: bdf, PCIDeviceID: 0x101d, RDMAName: rdmaName,
		DeviceType:  "ConnectX6DX",
		Name:        "0F6FXM_08P2T2_Ax",
		Description: "Mellanox ConnectX-6 Dx Dual Port 100 GbE QSFP56 Network Adapter",
		Layout:      G5,
		Params:      ps,
	}
}

// NewConnectX4Lx is a dual-port ConnectX-4 Lx card (0x1015) as found with a
// distribution's mstflint 4.21 (layout G1).
func NewConnectX4Lx(bdf, rdmaName string) *Adapter {
	return &Adapter{
		BDF: bdf, PCIDeviceID: 0x1015, RDMAName: rdmaName,
		DeviceType:  "ConnectX4LX",
		Name:        "MCX4121A-ACA_Ax",
		Description: "ConnectX-4 Lx EN network interface card; 25GbE dual-port SFP28; PCIe3.0 x8; ROHS R6",
		Layout:      G1,
		Params:      commonParams(2),
	}
}
