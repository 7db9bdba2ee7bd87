// Package simcheck_test checks the simulator's emulated tools against
// rdmaform's parsers: what the emulator prints, the parser reads as the
// emulator meant it. It lives outside both, since the simulator and the
// parsers share no code (not even in their tests).
package simcheck_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/rdmaform/rdmaform/providers/firmware/mlxfmt"
	"github.com/rdmaform/rdmaform/sim/mlxemu"
)

// usageText is the usage the emulated tools print.
func usageText(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "sim", "mlxemu", "usage.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The byte-exact samples of reference/formats.md §1.5, kept by mlxfmt.
func sample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "providers", "firmware", "mlxfmt", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sampleCard is the ConnectX-6 of the samples: SR-IOV on with 8 VFs, both
// ports on InfiniBand.
func sampleCard(l mlxemu.Layout) *mlxemu.Adapter {
	a := mlxemu.NewConnectX6VPI("0000:81:00.0", "mlx5_0")
	a.Layout = l
	for _, n := range []string{"SRIOV_EN", "NUM_OF_VFS"} {
		p := a.Param(n)
		v := int64(1)
		if n == "NUM_OF_VFS" {
			v = 8
		}
		p.Current, p.Next = v, v
	}
	return a
}

var sampleNames = []string{"LINK_TYPE_P1", "LINK_TYPE_P2", "SRIOV_EN", "NUM_OF_VFS"}

func TestEmulatorReproducesSamples(t *testing.T) {
	dev := "/dev/mst/mt4123_pciconf0"
	for _, l := range []mlxemu.Layout{mlxemu.G1, mlxemu.G4, mlxemu.G5, mlxemu.G6} {
		prefix := strings.ToLower(l.String())
		t.Run(l.String(), func(t *testing.T) {
			// query, then set: the fresh card prints the query and set samples.
			adapters := []*mlxemu.Adapter{sampleCard(l)}
			steps := []struct {
				args []string
				want string
			}{
				{append([]string{"-d", dev, "q"}, sampleNames...), sample(t, prefix+"_query.txt")},
				{[]string{"-d", dev, "-y", "set", "LINK_TYPE_P1=2", "LINK_TYPE_P2=ETH"}, sample(t, prefix+"_set.txt")},
			}
			for _, s := range steps {
				out, errOut, exit := mlxemu.Run("mlxconfig", s.args, adapters, nil)
				if diff := cmp.Diff(s.want, string(out)); diff != "" {
					t.Errorf("%v (-want +got):\n%s", s.args, diff)
				}
				if exit != 0 || len(errOut) != 0 {
					t.Errorf("%v: exit %d, stderr %q", s.args, exit, errOut)
				}
			}
			// A pending IB->ETH on port 1 gives the -e sample.
			adapters = []*mlxemu.Adapter{sampleCard(l)}
			if _, _, exit := mlxemu.Run("mlxconfig", []string{"-d", dev, "-y", "s", "link_type_p1=eth"}, adapters, nil); exit != 0 {
				t.Fatalf("set exit %d", exit)
			}
			out, _, exit := mlxemu.Run("mlxconfig", append([]string{"-d", dev, "-e", "q"}, sampleNames...), adapters, nil)
			if diff := cmp.Diff(sample(t, prefix+"_query_e.txt"), string(out)); diff != "" {
				t.Errorf("-e query (-want +got):\n%s", diff)
			}
			if exit != 0 {
				t.Errorf("exit %d", exit)
			}
		})
	}
}

// What the emulator prints, rdmaform's parser reads: a staged value is
// pending until mlxemu.Reboot.
func TestSetPendingReboot(t *testing.T) {
	adapters := []*mlxemu.Adapter{mlxemu.NewConnectX5Eth("0000:3b:00.0", "mlx5_0"), mlxemu.NewConnectX6VPI("0000:81:00.0", "mlx5_2")}
	query := func() mlxfmt.Query {
		t.Helper()
		out, _, exit := mlxemu.Run("mstconfig", []string{"-d", "81:00.0", "-e", "q", "LINK_TYPE_P1", "NUM_OF_VFS", "SRIOV_EN"}, adapters, nil)
		if exit != 0 {
			t.Fatalf("query exit %d:\n%s", exit, out)
		}
		q, err := mlxfmt.ParseQuery(out)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	out, _, exit := mlxemu.Run("mstconfig", []string{"-d", "mlx5_2", "-y", "set", "LINK_TYPE_P1=ETH", "NUM_OF_VFS=8", "SRIOV_EN=true"}, adapters, nil)
	if exit != 0 {
		t.Fatalf("set exit %d:\n%s", exit, out)
	}
	q := query()
	if q.Device.Device != "81:00.0" {
		t.Errorf("Device: line = %q, want what -d got", q.Device.Device)
	}
	for _, want := range []struct{ name, value string }{{"LINK_TYPE_P1", "eth"}, {"NUM_OF_VFS", "8"}, {"SRIOV_EN", "true"}} {
		p, ok := q.Param(want.name)
		if !ok {
			t.Fatalf("%s missing", want.name)
		}
		if !mlxfmt.Equal(want.value, p.NextBoot) || !p.Pending() || mlxfmt.Equal(want.value, p.Current) {
			t.Errorf("%s before reboot: %+v", want.name, p)
		}
	}
	mlxemu.Reboot(adapters)
	q = query()
	for _, p := range q.Params {
		if p.Pending() {
			t.Errorf("%s still pending after reboot", p.Name)
		}
	}
	if p, _ := q.Param("LINK_TYPE_P1"); !mlxfmt.Equal("ETH", p.Current) {
		t.Errorf("LINK_TYPE_P1 current after reboot = %v", p.Current)
	}
	// The other card was not touched.
	if got := adapters[0].Param("NUM_OF_VFS").Next; got != 0 {
		t.Errorf("ConnectX-5 NUM_OF_VFS next = %d", got)
	}
}

func TestErrors(t *testing.T) {
	roCard := func() []*mlxemu.Adapter {
		a := mlxemu.NewConnectX6VPI("0000:81:00.0", "mlx5_0")
		a.Params = append(a.Params, mlxemu.Param{Name: "PF_BAR2_SIZE", Type: mlxemu.TypeUnsigned, TLV: "nv_pf_pci_conf", ReadOnly: true})
		return []*mlxemu.Adapter{a}
	}
	header := func(l mlxemu.Layout, dev string, set bool) string {
		r := mlxemu.Report{Device: mlxemu.DeviceInfo{Type: "ConnectX6", Name: "MCX653106A-HDA_Ax",
			Description: mlxemu.NewConnectX6VPI("", "").Description, Device: dev}, Err: mlxemu.Message("X")}
		var b []byte
		if set {
			b, _ = mlxemu.RenderSet(l, r, mlxemu.AnswerYesFlag)
		} else {
			b, _ = mlxemu.RenderQuery(l, r)
		}
		return strings.TrimSuffix(string(b), "-E- X\n")
	}
	usage := strings.ReplaceAll(usageText(t), "mstconfig", "mlxconfig")
	tests := []struct {
		name       string
		tool       string
		layout     mlxemu.Layout
		args       []string
		stdin      string
		wantOut    string
		wantErr    string
		wantExit   int
		wantKind   mlxfmt.ErrorKind
		wantNextP1 int64
	}{
		{name: "unknown parameter, old wording", tool: "mstconfig", layout: mlxemu.G1, args: []string{"-d", "0000:81:00.0", "q", "SRIOV_EN", "FOO"},
			wantOut: header(mlxemu.G1, "0000:81:00.0", false) + "-E- Unknown Parameter: FOO\n", wantExit: 3, wantKind: mlxfmt.ErrUnknownParam, wantNextP1: 1},
		{name: "unknown parameter, new wording", tool: "mlxconfig", layout: mlxemu.G6, args: []string{"-d", "81:00.0", "-y", "set", "FOO=1"},
			wantOut: header(mlxemu.G6, "81:00.0", true) + "-E- Failed to find Param / TLV with name 'FOO' port 0 module -1\n", wantExit: 3, wantKind: mlxfmt.ErrUnknownParam, wantNextP1: 1},
		{name: "read-only", tool: "mlxconfig", layout: mlxemu.G5, args: []string{"-d", "mlx5_0", "-y", "set", "LINK_TYPE_P1=ETH", "PF_BAR2_SIZE=2"},
			wantOut: header(mlxemu.G5, "mlx5_0", true) + "-E- Operation is not supported (Read only TLV: nv_pf_pci_conf)\n", wantExit: 3, wantKind: mlxfmt.ErrReadOnly, wantNextP1: 1},
		{name: "unknown value", tool: "mlxconfig", layout: mlxemu.G5, args: []string{"-d", "mlx5_0", "-y", "set", "LINK_TYPE_P1=INFINIBAND"},
			wantOut: header(mlxemu.G5, "mlx5_0", true) + "-E- Unknown value INFINIBAND\n", wantExit: 3, wantKind: mlxfmt.ErrUnknownValue, wantNextP1: 1},
		{name: "number not in the enum", tool: "mlxconfig", layout: mlxemu.G5, args: []string{"-d", "mlx5_0", "-y", "set", "LINK_TYPE_P1=3"},
			wantOut: header(mlxemu.G5, "mlx5_0", true) + "-E- Unknown value 3\n", wantExit: 3, wantKind: mlxfmt.ErrUnknownValue, wantNextP1: 1},
		{name: "no =", tool: "mlxconfig", layout: mlxemu.G5, args: []string{"-d", "mlx5_0", "set", "LINK_TYPE_P1"},
			wantOut: "-E- Invalid Configuration argument LINK_TYPE_P1\n" + usage, wantExit: 3, wantKind: mlxfmt.ErrInvalidArgument, wantNextP1: 1},
		{name: "duplicate", tool: "mlxconfig", layout: mlxemu.G5, args: []string{"-d", "mlx5_0", "-y", "set", "LINK_TYPE_P1=1", "LINK_TYPE_P1=2"},
			wantOut: "-E- Duplicate parameter, LINK_TYPE_P1.\n" + usage, wantExit: 3, wantKind: mlxfmt.ErrDuplicateParam, wantNextP1: 1},
		{name: "device not found", tool: "mlxconfig", layout: mlxemu.G5, args: []string{"-d", "0000:82:00.0", "q"},
			wantOut: "-E- Failed to open the device\n", wantExit: 3, wantKind: mlxfmt.ErrOpenDevice, wantNextP1: 1},
		{name: "device not found, G6 prints it twice", tool: "mlxconfig", layout: mlxemu.G6, args: []string{"-d", "mlx5_7", "q"},
			wantOut: "-E- Failed to open the device\n-E- Failed to open the device\n", wantExit: 3, wantKind: mlxfmt.ErrOpenDevice, wantNextP1: 1},
		{name: "mstconfig has no /dev/mst", tool: "mstconfig", layout: mlxemu.G1, args: []string{"-d", "/dev/mst/mt4123_pciconf0", "q"},
			wantOut: "-E- Failed to open the device\n", wantErr: "Unable to parse device name /dev/mst/mt4123_pciconf0\n", wantExit: 3, wantKind: mlxfmt.ErrOpenDevice, wantNextP1: 1},
		{name: "aborted without -y", tool: "mlxconfig", layout: mlxemu.G5, args: []string{"-d", "mlx5_0", "set", "LINK_TYPE_P1=ETH"}, stdin: "n\n",
			wantExit: 2, wantKind: mlxfmt.ErrAborted, wantNextP1: 1},
		{name: "empty stdin aborts", tool: "mlxconfig", layout: mlxemu.G5, args: []string{"-d", "mlx5_0", "set", "LINK_TYPE_P1=ETH"},
			wantExit: 2, wantKind: mlxfmt.ErrAborted, wantNextP1: 1},
		{name: "yes on stdin applies", tool: "mlxconfig", layout: mlxemu.G5, args: []string{"-d", "mlx5_0", "set", "LINK_TYPE_P1=ETH"}, stdin: "YES\n",
			wantExit: 0, wantKind: -1, wantNextP1: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			adapters := roCard()
			e := &mlxemu.Emulator{Layout: tt.layout, Adapters: adapters, MSTStarted: true}
			adapters[0].Layout = tt.layout
			out, errOut, exit := e.Run(tt.tool, tt.args, []byte(tt.stdin))
			if tt.wantOut != "" {
				if diff := cmp.Diff(tt.wantOut, string(out)); diff != "" {
					t.Errorf("stdout (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(tt.wantErr, string(errOut)); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
			if exit != tt.wantExit {
				t.Errorf("exit = %d, want %d", exit, tt.wantExit)
			}
			te := mlxfmt.ParseError(out)
			switch {
			case tt.wantKind < 0 && te != nil:
				t.Errorf("unexpected error %v", te)
			case tt.wantKind >= 0 && (te == nil || !errors.Is(te, &mlxfmt.ToolError{Kind: tt.wantKind})):
				t.Errorf("error = %v, want kind %v", te, tt.wantKind)
			}
			if got := adapters[0].Param("LINK_TYPE_P1").Next; got != tt.wantNextP1 {
				t.Errorf("LINK_TYPE_P1 next = %d, want %d", got, tt.wantNextP1)
			}
		})
	}
}

func TestQueryAllDevicesWithoutD(t *testing.T) {
	adapters := []*mlxemu.Adapter{mlxemu.NewConnectX4Lx("0000:19:00.0", "mlx5_0"), mlxemu.NewConnectX4Lx("0000:19:00.1", "mlx5_1")}
	out, _, exit := mlxemu.Run("mstconfig", []string{"q"}, adapters, nil)
	if exit != 0 {
		t.Fatalf("exit %d", exit)
	}
	for _, want := range []string{"\nDevice #1:\n", "\nDevice #2:\n", "Device:         0000:19:00.1    \n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	q, err := mlxfmt.ParseQuery(out)
	if err != nil || q.Device.Device != "0000:19:00.0" || len(q.Params) != len(adapters[0].Params) {
		t.Errorf("first device: %+v, %v", q.Device, err)
	}
}

func TestAdapterSerializes(t *testing.T) {
	for _, a := range []*mlxemu.Adapter{mlxemu.NewConnectX6VPI("0000:81:00.0", "mlx5_0"), mlxemu.NewConnectX5Eth("0000:3b:00.0", "mlx5_2"), mlxemu.NewConnectX4Lx("0000:19:00.0", "mlx5_4")} {
		t.Run(a.DeviceType, func(t *testing.T) {
			j, err := json.Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			var fromJSON mlxemu.Adapter
			if err := json.Unmarshal(j, &fromJSON); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(a, &fromJSON); diff != "" {
				t.Errorf("JSON (-want +got):\n%s", diff)
			}
			y, err := yaml.Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			var fromYAML mlxemu.Adapter
			if err := yaml.Unmarshal(y, &fromYAML); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(a, &fromYAML); diff != "" {
				t.Errorf("YAML (-want +got):\n%s\n%s", diff, y)
			}
			if !strings.Contains(string(y), "layout: "+a.Layout.String()) {
				t.Errorf("layout not written as text:\n%s", y)
			}
		})
	}
	hasLink := func(a *mlxemu.Adapter) bool { return a.Param("LINK_TYPE_P1") != nil }
	if !hasLink(mlxemu.NewConnectX6VPI("", "")) || hasLink(mlxemu.NewConnectX5Eth("", "")) || hasLink(mlxemu.NewConnectX4Lx("", "")) {
		t.Error("LINK_TYPE_P* must exist on VPI cards only")
	}
}

func TestMST(t *testing.T) {
	e := &mlxemu.Emulator{Adapters: []*mlxemu.Adapter{
		mlxemu.NewConnectX6VPI("0000:3b:00.1", "mlx5_1"), mlxemu.NewConnectX6VPI("0000:3b:00.0", "mlx5_0"),
		mlxemu.NewConnectX5Eth("0000:5e:00.0", "mlx5_2"), mlxemu.NewConnectX6VPI("0000:af:00.0", "mlx5_3"),
	}}
	e.Adapters[1].Netdevs = []string{"enp59s0f0"}
	if _, _, exit := e.Run("mlxconfig", []string{"-d", "/dev/mst/mt4123_pciconf0", "q"}, nil); exit != 3 {
		t.Errorf("/dev/mst before mst start: exit %d, want 3", exit)
	}
	if _, _, exit := e.RunMST([]string{"start"}); exit != 0 || !e.MSTStarted {
		t.Fatalf("mst start: exit %d", exit)
	}
	out, _, exit := e.RunMST([]string{"status", "-v"})
	if exit != 0 {
		t.Fatalf("exit %d", exit)
	}
	s, err := mlxfmt.ParseMSTStatusVerbose(out)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range s.Devices {
		got = append(got, d.MST+" "+d.BDF+" "+d.RDMA)
	}
	want := []string{
		"/dev/mst/mt4123_pciconf0.1 3b:00.1 mlx5_1",
		"/dev/mst/mt4123_pciconf0 3b:00.0 mlx5_0",
		"/dev/mst/mt4119_pciconf0 5e:00.0 mlx5_2",
		"/dev/mst/mt4123_pciconf1 af:00.0 mlx5_3",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mst status -v (-want +got):\n%s\n%s", diff, out)
	}
	for i, w := range want {
		dev := strings.Fields(w)[0]
		q, _, exit := e.Run("mlxconfig", []string{"-d", dev, "q", "SRIOV_EN"}, nil)
		if exit != 0 {
			t.Errorf("%s: exit %d", dev, exit)
		}
		if p, _ := mlxfmt.ParseQuery(q); p.Device.Type != e.Adapters[i].DeviceType {
			t.Errorf("%s resolved to %q", dev, p.Device.Type)
		}
	}
	if out, _, exit := e.RunMST([]string{"status", "--v"}); exit != 1 || string(out) != "    -E- Unknown argument \"--v\"\n" {
		t.Errorf("mst status --v: %d %q", exit, out)
	}
}

func TestReset(t *testing.T) {
	adapters := []*mlxemu.Adapter{sampleCard(mlxemu.G5)}
	out, _, exit := mlxemu.Run("mlxconfig", []string{"-d", "mlx5_0", "-y", "reset"}, adapters, nil)
	want := "\n Reset configuration for device mlx5_0? (y/n) [n] : y\nApplying... Done!\n-I- Please reboot machine to load new configurations.\n"
	if diff := cmp.Diff(want, string(out)); diff != "" || exit != 0 {
		t.Errorf("reset exit %d (-want +got):\n%s", exit, diff)
	}
	if p := adapters[0].Param("NUM_OF_VFS"); p.Next != 0 || p.Current != 8 {
		t.Errorf("NUM_OF_VFS after reset: %+v", p)
	}
}
