package mlxemu

// The reports behind the reference samples of the tools' output
// (providers/firmware/mlxfmt/testdata): the emulator's writer reproduces
// them byte for byte, and the parser reads them back as these reports say.

// SampleDevice is the ConnectX-6 of the reference samples.
var SampleDevice = DeviceInfo{
	Type:        "ConnectX6",
	Name:        "MCX653106A-HDA_Ax",
	Description: "ConnectX-6 VPI adapter card; HDR IB (200Gb/s) and 200GbE; dual-port QSFP56; PCIe4.0 x16; tall bracket; ROHS R6",
	Device:      "/dev/mst/mt4123_pciconf0",
}

// SampleQuery is the report behind the query samples (q LINK_TYPE_P1
// LINK_TYPE_P2 SRIOV_EN NUM_OF_VFS) of every layout.
func SampleQuery() Report {
	return Report{Device: SampleDevice, Rows: []Row{
		{Name: "LINK_TYPE_P1", NextBoot: EnumCell("IB", 1)},
		{Name: "LINK_TYPE_P2", NextBoot: EnumCell("IB", 1)},
		{Name: "SRIOV_EN", NextBoot: EnumCell("True", 1)},
		{Name: "NUM_OF_VFS", NextBoot: NumCell(8)},
	}}
}

// SampleQueryE is the report behind the -e query samples.
func SampleQueryE() Report {
	return Report{Device: SampleDevice, Verbose: true, Rows: []Row{
		{Name: "LINK_TYPE_P1", Default: EnumCell("IB", 1), Current: EnumCell("IB", 1), NextBoot: EnumCell("ETH", 2)},
		{Name: "LINK_TYPE_P2", Default: EnumCell("IB", 1), Current: EnumCell("IB", 1), NextBoot: EnumCell("IB", 1)},
		{Name: "SRIOV_EN", Default: EnumCell("False", 0), Current: EnumCell("True", 1), NextBoot: EnumCell("True", 1)},
		{Name: "NUM_OF_VFS", Default: NumCell(0), Current: NumCell(8), NextBoot: NumCell(8)},
	}}
}

// SampleSet is the report behind the set samples.
func SampleSet() Report {
	return Report{Device: SampleDevice, Rows: []Row{
		{Name: "LINK_TYPE_P1", NextBoot: EnumCell("IB", 1), New: EnumCell("ETH", 2)},
		{Name: "LINK_TYPE_P2", NextBoot: EnumCell("IB", 1), New: EnumCell("ETH", 2)},
	}}
}

// SampleSNO is the report behind g4_sno_cx4lx_query_e.txt.
func SampleSNO() Report {
	atomic := EnumCell("PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED", 0)
	arr := Cell{Text: "Array[0..15]"}
	return Report{
		Device: DeviceInfo{Type: "ConnectX4LX", Name: "0R887V", Description: "MCX422A-ACAA ConnectX-4 Lx EN Dual Port SFP28; 25GbE for Dell rack NDC", Device: "19:00.0"},
		// The SNO excerpt stops before the '*' footer; Verbose rows only.
		Verbose: true,
		Rows: []Row{
			{Name: "MEMIC_BAR_SIZE", Default: NumCell(0), Current: NumCell(0), NextBoot: NumCell(0)},
			{Name: "MEMIC_SIZE_LIMIT", Default: EnumCell("_256KB", 1), Current: EnumCell("_256KB", 1), NextBoot: EnumCell("_256KB", 1)},
			{Name: "NUM_OF_VFS", Default: NumCell(8), Current: NumCell(5), NextBoot: NumCell(10)},
			{Name: "PCI_DOWNSTREAM_PORT_OWNER", Default: arr, Current: arr, NextBoot: arr},
			{Name: "PCI_ATOMIC_MODE", Default: atomic, Current: atomic, NextBoot: atomic},
			{Name: "ROCE_CC_PRIO_MASK_P1", Default: NumCell(255), Current: NumCell(255), NextBoot: NumCell(255)},
			{Name: "KEEP_ETH_LINK_UP_P1", Default: EnumCell("True", 1), Current: EnumCell("True", 1), NextBoot: EnumCell("True", 1)},
			{Name: "KEEP_IB_LINK_UP_P1", Default: EnumCell("False", 0), Current: EnumCell("False", 0), NextBoot: EnumCell("False", 0)},
			{Name: "ROCE_CONTROL", Default: EnumCell("ROCE_ENABLE", 2), Current: EnumCell("DEVICE_DEFAULT", 0), NextBoot: EnumCell("ROCE_ENABLE", 2)},
			{Name: "LEGACY_BOOT_PROTOCOL", Default: EnumCell("PXE", 1), Current: EnumCell("PXE", 1), NextBoot: EnumCell("NONE", 0)},
		},
	}
}
