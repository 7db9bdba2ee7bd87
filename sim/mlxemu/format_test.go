package mlxemu

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "providers", "firmware", "mlxfmt", "testdata", name))
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
		{"g1_query.txt", G1, false, SampleQuery()},
		{"g1_query_e.txt", G1, false, SampleQueryE()},
		{"g1_set.txt", G1, true, SampleSet()},
		{"g4_query.txt", G4, false, SampleQuery()},
		{"g4_query_e.txt", G4, false, SampleQueryE()},
		{"g4_set.txt", G4, true, SampleSet()},
		{"g5_query.txt", G5, false, SampleQuery()},
		{"g5_query_e.txt", G5, false, SampleQueryE()},
		{"g5_set.txt", G5, true, SampleSet()},
		{"g6_query.txt", G6, false, SampleQuery()},
		{"g6_query_e.txt", G6, false, SampleQueryE()},
		{"g6_set.txt", G6, true, SampleSet()},
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
			if exit != exitOK {
				t.Errorf("exit = %d, want 0", exit)
			}
		})
	}
}

// The SNO capture is an excerpt: it starts at "Device #1:" and stops before
// the '*' footer, so compare the rendered lines it covers.
func TestRenderMatchesSNOCapture(t *testing.T) {
	want := string(readGolden(t, "g4_sno_cx4lx_query_e.txt"))
	got, _ := RenderQuery(G4, SampleSNO())
	const footer = "The '*' shows parameters with next value different from default/current value.\n"
	if diff := cmp.Diff("\n"+want+footer, string(got)); diff != "" {
		t.Errorf("render (-want +got):\n%s", diff)
	}
}

func TestRenderVariants(t *testing.T) {
	ro := Report{Device: SampleDevice, Verbose: true, Rows: []Row{
		{Name: "SRIOV_EN", Default: EnumCell("False", 0), Current: EnumCell("True", 1), NextBoot: EnumCell("True", 1), ReadOnly: true},
		{Name: "NUM_OF_VFS", Default: NumCell(0), Current: NumCell(0), NextBoot: NumCell(0), ReadOnly: true},
	}}
	noDef := SampleQueryE()
	noDef.NoDefault = true
	noBoth := SampleQueryE()
	noBoth.NoDefault, noBoth.NoCurrent = true, true
	unknown := SampleQuery()
	unknown.Err = UnknownParamError(G1, "FOO")
	unknown.Rows = nil
	open := Report{Device: SampleDevice, Err: OpenDeviceError()}

	head := "\nDevice #1:\n----------\n\n" +
		"Device type:        ConnectX6           \n" +
		"Name:               MCX653106A-HDA_Ax   \n" +
		"Description:        " + SampleDevice.Description + "\n" +
		"Device:             /dev/mst/mt4123_pciconf0\n\n"
	headG1 := "\nDevice #1:\n----------\n\n" +
		"Device type:    ConnectX6       \n" +
		"Name:           MCX653106A-HDA_Ax\n" +
		"Description:    " + SampleDevice.Description + "\n" +
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
	base, _ := RenderSet(G5, SampleSet(), AnswerYesFlag)
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
			got, exit := RenderSet(G5, SampleSet(), tt.answer)
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

func TestLayoutText(t *testing.T) {
	for _, l := range Layouts() {
		b, err := l.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Layout
		if err := back.UnmarshalText(b); err != nil || back != l {
			t.Errorf("%v: round trip gave %v, %v", l, back, err)
		}
	}
	if _, err := ParseLayout("G7"); err == nil {
		t.Error("G7 must not parse")
	}
	if l, err := ParseLayout("g4"); err != nil || l != G4 {
		t.Errorf("g4 = %v, %v", l, err)
	}
}

func TestMSTDeviceName(t *testing.T) {
	for _, tt := range []struct {
		id              uint16
		index, function int
		want            string
	}{
		{0x1017, 0, 0, "mt4119_pciconf0"},
		{0x1017, 0, 1, "mt4119_pciconf0.1"},
		{0x101b, 1, 0, "mt4123_pciconf1"},
		{0xa2dc, 0, 1, "mt41692_pciconf0.1"},
	} {
		if got := MSTDeviceName(tt.id, tt.index, tt.function); got != tt.want {
			t.Errorf("MSTDeviceName(%#x, %d, %d) = %q, want %q", tt.id, tt.index, tt.function, got, tt.want)
		}
	}
}

// TestRenderMSTStatusMatchesCapture: the emulated mst prints a real
// `mst status -v` (testdata/real/mst) byte for byte for the same devices.
func TestRenderMSTStatusMatchesCapture(t *testing.T) {
	s := MSTStatus{PCIConfModuleLoaded: true, Devices: []MSTEntry{
		{DeviceType: "ConnectX6", Rev: "0", MST: "/dev/mst/mt4123_pciconf0.1", BDF: "3b:00.1", RDMA: "mlx5_1", Netdevs: []string{"enp59s0f1"}},
		{DeviceType: "ConnectX6", Rev: "0", MST: "/dev/mst/mt4123_pciconf0", BDF: "3b:00.0", RDMA: "mlx5_0", Netdevs: []string{"enp59s0f0"}},
		{DeviceType: "ConnectX5", Rev: "0", MST: "/dev/mst/mt4119_pciconf0.1", BDF: "5e:00.1", RDMA: "mlx5_3", Netdevs: []string{"enp94s0f1"}},
		{DeviceType: "ConnectX5", Rev: "0", MST: "/dev/mst/mt4119_pciconf0", BDF: "5e:00.0", RDMA: "mlx5_2", Netdevs: []string{"enp94s0f0"}},
	}}
	real, err := os.ReadFile(filepath.Join("..", "..", "testdata", "real", "mst", "formats-cx6-cx5.stdout"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(real), string(RenderMSTStatusVerbose(s))); diff != "" {
		t.Errorf("render (-capture +emulator):\n%s", diff)
	}
}
