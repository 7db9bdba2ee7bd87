package mlxfmt

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var cx6 = DeviceInfo{
	Type:        "ConnectX6",
	Name:        "MCX653106A-HDA_Ax",
	Description: "ConnectX-6 VPI adapter card; HDR IB (200Gb/s) and 200GbE; dual-port QSFP56; PCIe4.0 x16; tall bracket; ROHS R6",
	Device:      "/dev/mst/mt4123_pciconf0",
}

// The reports behind the samples of reference/formats.md §1.5.
func sampleQuery() Report {
	return Report{Device: cx6, Rows: []Row{
		{Name: "LINK_TYPE_P1", NextBoot: Enum("IB", 1)},
		{Name: "LINK_TYPE_P2", NextBoot: Enum("IB", 1)},
		{Name: "SRIOV_EN", NextBoot: Enum("True", 1)},
		{Name: "NUM_OF_VFS", NextBoot: Num(8)},
	}}
}

func sampleQueryE() Report {
	return Report{Device: cx6, Verbose: true, Rows: []Row{
		{Name: "LINK_TYPE_P1", Default: Enum("IB", 1), Current: Enum("IB", 1), NextBoot: Enum("ETH", 2)},
		{Name: "LINK_TYPE_P2", Default: Enum("IB", 1), Current: Enum("IB", 1), NextBoot: Enum("IB", 1)},
		{Name: "SRIOV_EN", Default: Enum("False", 0), Current: Enum("True", 1), NextBoot: Enum("True", 1)},
		{Name: "NUM_OF_VFS", Default: Num(0), Current: Num(8), NextBoot: Num(8)},
	}}
}

func sampleSet() Report {
	return Report{Device: cx6, Rows: []Row{
		{Name: "LINK_TYPE_P1", NextBoot: Enum("IB", 1), New: Enum("ETH", 2)},
		{Name: "LINK_TYPE_P2", NextBoot: Enum("IB", 1), New: Enum("ETH", 2)},
	}}
}

func sampleSNO() Report {
	atomic := Enum("PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED", 0)
	arr := Value{Kind: KindArray, Lo: 0, Hi: 15}
	return Report{
		Device: DeviceInfo{Type: "ConnectX4LX", Name: "0R887V", Description: "MCX422A-ACAA ConnectX-4 Lx EN Dual Port SFP28; 25GbE for Dell rack NDC", Device: "19:00.0"},
		// The SNO excerpt stops before the '*' footer; Verbose rows only.
		Verbose: true,
		Rows: []Row{
			{Name: "MEMIC_BAR_SIZE", Default: Num(0), Current: Num(0), NextBoot: Num(0)},
			{Name: "MEMIC_SIZE_LIMIT", Default: Enum("_256KB", 1), Current: Enum("_256KB", 1), NextBoot: Enum("_256KB", 1)},
			{Name: "NUM_OF_VFS", Default: Num(8), Current: Num(5), NextBoot: Num(10)},
			{Name: "PCI_DOWNSTREAM_PORT_OWNER", Default: arr, Current: arr, NextBoot: arr},
			{Name: "PCI_ATOMIC_MODE", Default: atomic, Current: atomic, NextBoot: atomic},
			{Name: "ROCE_CC_PRIO_MASK_P1", Default: Num(255), Current: Num(255), NextBoot: Num(255)},
			{Name: "KEEP_ETH_LINK_UP_P1", Default: Enum("True", 1), Current: Enum("True", 1), NextBoot: Enum("True", 1)},
			{Name: "KEEP_IB_LINK_UP_P1", Default: Enum("False", 0), Current: Enum("False", 0), NextBoot: Enum("False", 0)},
			{Name: "ROCE_CONTROL", Default: Enum("ROCE_ENABLE", 2), Current: Enum("DEVICE_DEFAULT", 0), NextBoot: Enum("ROCE_ENABLE", 2)},
			{Name: "LEGACY_BOOT_PROTOCOL", Default: Enum("PXE", 1), Current: Enum("PXE", 1), NextBoot: Enum("NONE", 0)},
		},
	}
}

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRenderMatchesSamples(t *testing.T) {
	tests := []struct {
		file   string
		layout Layout
		set    bool
		report Report
	}{
		{"g1_query.txt", G1, false, sampleQuery()},
		{"g1_query_e.txt", G1, false, sampleQueryE()},
		{"g1_set.txt", G1, true, sampleSet()},
		{"g4_query.txt", G4, false, sampleQuery()},
		{"g4_query_e.txt", G4, false, sampleQueryE()},
		{"g4_set.txt", G4, true, sampleSet()},
		{"g5_query.txt", G5, false, sampleQuery()},
		{"g5_query_e.txt", G5, false, sampleQueryE()},
		{"g5_set.txt", G5, true, sampleSet()},
		{"g6_query.txt", G6, false, sampleQuery()},
		{"g6_query_e.txt", G6, false, sampleQueryE()},
		{"g6_set.txt", G6, true, sampleSet()},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			want := readGolden(t, tt.file)
			var got []byte
			var exit int
			if tt.set {
				got, exit = RenderSet(tt.layout, tt.report, AnswerYesFlag)
			} else {
				got, exit = RenderQuery(tt.layout, tt.report)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("render (-want +got):\n%s", diff)
			}
			if exit != ExitOK {
				t.Errorf("exit = %d, want 0", exit)
			}
		})
	}
}

// The SNO capture is an excerpt: it starts at "Device #1:" and stops before
// the '*' footer, so compare the rendered lines it covers.
func TestRenderMatchesSNOCapture(t *testing.T) {
	want := string(readGolden(t, "g4_sno_cx4lx_query_e.txt"))
	got, _ := RenderQuery(G4, sampleSNO())
	const footer = "The '*' shows parameters with next value different from default/current value.\n"
	if diff := cmp.Diff("\n"+want+footer, string(got)); diff != "" {
		t.Errorf("render (-want +got):\n%s", diff)
	}
}

func TestRenderVariants(t *testing.T) {
	ro := Report{Device: cx6, Verbose: true, Rows: []Row{
		{Name: "SRIOV_EN", Default: Enum("False", 0), Current: Enum("True", 1), NextBoot: Enum("True", 1), ReadOnly: true},
		{Name: "NUM_OF_VFS", Default: Num(0), Current: Num(0), NextBoot: Num(0), ReadOnly: true},
	}}
	noDef := sampleQueryE()
	noDef.NoDefault = true
	noBoth := sampleQueryE()
	noBoth.NoDefault, noBoth.NoCurrent = true, true
	unknown := sampleQuery()
	unknown.Err = UnknownParamError(G1, "FOO")
	unknown.Rows = nil
	open := Report{Device: cx6, Err: OpenDeviceError()}

	head := "\nDevice #1:\n----------\n\n" +
		"Device type:        ConnectX6           \n" +
		"Name:               MCX653106A-HDA_Ax   \n" +
		"Description:        " + cx6.Description + "\n" +
		"Device:             /dev/mst/mt4123_pciconf0\n\n"
	headG1 := "\nDevice #1:\n----------\n\n" +
		"Device type:    ConnectX6       \n" +
		"Name:           MCX653106A-HDA_Ax\n" +
		"Description:    " + cx6.Description + "\n" +
		"Device:         /dev/mst/mt4123_pciconf0\n\n"

	tests := []struct {
		name     string
		layout   Layout
		report   Report
		want     string
		wantExit int
	}{
		{"G5 read-only marks", G5, ro, head +
			"Configurations:                                          Default             Current         Next Boot\n" +
			"*RO     SRIOV_EN                                    False(0)             True(1)              True(1)             \n" +
			" RO     NUM_OF_VFS                                  0                    0                    0                   \n" +
			"The '*' shows parameters with next value different from default/current value.\n" +
			"\nThe 'RO' shows parameters which are for read only and cannot be changed\n", 0},
		{"G1 has no RO marks", G1, ro, headG1 +
			"Configurations:                              Default         Current         Next Boot\n" +
			"*        SRIOV_EN                            False(0)        True(1)         True(1)         \n" +
			"         NUM_OF_VFS                          0               0               0               \n" +
			"The '*' shows parameters with next value different from default/current value.\n", 0},
		{"G1 no default column", G1, noDef, headG1 +
			"Configurations:                              Current         Next Boot\n" +
			"*        LINK_TYPE_P1                        IB(1)           ETH(2)          \n" +
			"         LINK_TYPE_P2                        IB(1)           IB(1)           \n" +
			"         SRIOV_EN                            True(1)         True(1)         \n" +
			"         NUM_OF_VFS                          8               8               \n" +
			"The '*' shows parameters with next value different from default/current value.\n" +
			"Device Firmware does not support reading default configurations\n", 0},
		{"G6 neither column", G6, noBoth, head +
			"Configurations:                                         Next Boot                        \n" +
			"        LINK_TYPE_P1                                    ETH(2)                           \n" +
			"        LINK_TYPE_P2                                    IB(1)                            \n" +
			"        SRIOV_EN                                        True(1)                          \n" +
			"        NUM_OF_VFS                                      8                                \n" +
			"Device Firmware does not support reading default and current configurations\n", 0},
		{"G1 unknown parameter after header", G1, unknown, headG1 +
			"Configurations:                              Next Boot\n" +
			"-E- Unknown Parameter: FOO\n", 3},
		{"G1 open failure", G1, open, "-E- Failed to open the device\n", 3},
		{"G6 open failure printed twice", G6, open, "-E- Failed to open the device\n-E- Failed to open the device\n", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, exit := RenderQuery(tt.layout, tt.report)
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("RenderQuery (-want +got):\n%s", diff)
			}
			if exit != tt.wantExit {
				t.Errorf("exit = %d, want %d", exit, tt.wantExit)
			}
		})
	}
}

func TestRenderSetAnswers(t *testing.T) {
	base, _ := RenderSet(G5, sampleSet(), AnswerYesFlag)
	table := string(base[:len(base)-len("y\nApplying... Done!\n-I- Please reboot machine to load new configurations.\n")])
	tests := []struct {
		answer   Answer
		want     string
		wantExit int
	}{
		{AnswerYesFlag, table + "y\nApplying... Done!\n-I- Please reboot machine to load new configurations.\n", 0},
		{AnswerYes, table + "Applying... Done!\n-I- Please reboot machine to load new configurations.\n", 0},
		{AnswerNo, table + "-E- Aborted by user.\n", 2},
	}
	for _, tt := range tests {
		t.Run(tt.answer.String(), func(t *testing.T) {
			got, exit := RenderSet(G5, sampleSet(), tt.answer)
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("RenderSet (-want +got):\n%s", diff)
			}
			if exit != tt.wantExit {
				t.Errorf("exit = %d, want %d", exit, tt.wantExit)
			}
		})
	}
	if want := " Apply new Configuration? (y/n) [n] : "; len(table) < len(want) || table[len(table)-len(want):] != want {
		t.Errorf("set output does not end its table with the prompt: %q", table)
	}
}

func readFile(name string) ([]byte, error) { return os.ReadFile(filepath.Join("testdata", name)) }
