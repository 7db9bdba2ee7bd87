package simcheck_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rdmaform/rdmaform/providers/firmware/mlxfmt"
	"github.com/rdmaform/rdmaform/sim/mlxemu"
)

var cmpValue = cmpopts.EquateComparable(mlxfmt.Value{})

// toQuery is what mlxfmt.ParseQuery should return for a report the
// emulator's writer printed.
func toQuery(r mlxemu.Report, set bool) mlxfmt.Query {
	showDef, showCur := r.Verbose && !r.NoDefault, r.Verbose && !r.NoCurrent
	d := r.Device
	q := mlxfmt.Query{Device: mlxfmt.DeviceInfo{Type: d.Type, Name: d.Name, Description: d.Description, Device: d.Device},
		Columns: mlxfmt.Columns{Default: showDef, Current: showCur, NextBoot: true, New: set}}
	q.NoDefault = r.Verbose && r.NoDefault
	q.NoCurrent = r.Verbose && r.NoCurrent
	for _, row := range r.Rows {
		p := mlxfmt.Param{Name: row.Name, NextBoot: value(row.NextBoot)}
		if showDef {
			p.Default = value(row.Default)
		}
		if showCur {
			p.Current = value(row.Current)
		}
		if set {
			p.New = value(row.New)
		}
		p.Modified = (showDef && !same(row.NextBoot, row.Default)) || (showCur && !same(row.NextBoot, row.Current))
		q.Params = append(q.Params, p)
	}
	return q
}

// value is a printed cell as the parser's value.
func value(c mlxemu.Cell) mlxfmt.Value {
	if c.Text == "" {
		return mlxfmt.Value{}
	}
	return mlxfmt.ParseValue(c.Text)
}

func same(a, b mlxemu.Cell) bool {
	if a.HasNum && b.HasNum {
		return a.Num == b.Num
	}
	return a.Text == b.Text
}

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "providers", "firmware", "mlxfmt", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseSamples(t *testing.T) {
	tests := []struct {
		file string
		want mlxfmt.Query
	}{
		{"g1_query.txt", toQuery(mlxemu.SampleQuery(), false)},
		{"g1_query_e.txt", toQuery(mlxemu.SampleQueryE(), false)},
		{"g1_set.txt", toQuery(mlxemu.SampleSet(), true)},
		{"g4_query.txt", toQuery(mlxemu.SampleQuery(), false)},
		{"g4_query_e.txt", toQuery(mlxemu.SampleQueryE(), false)},
		{"g4_set.txt", toQuery(mlxemu.SampleSet(), true)},
		{"g4_sno_cx4lx_query_e.txt", toQuery(mlxemu.SampleSNO(), false)},
		{"g5_query.txt", toQuery(mlxemu.SampleQuery(), false)},
		{"g5_query_e.txt", toQuery(mlxemu.SampleQueryE(), false)},
		{"g5_set.txt", toQuery(mlxemu.SampleSet(), true)},
		{"g6_query.txt", toQuery(mlxemu.SampleQuery(), false)},
		{"g6_query_e.txt", toQuery(mlxemu.SampleQueryE(), false)},
		{"g6_set.txt", toQuery(mlxemu.SampleSet(), true)},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := mlxfmt.ParseQuery(readGolden(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpValue); diff != "" {
				t.Errorf("ParseQuery (-want +got):\n%s", diff)
			}
		})
	}
}

// Every layout, every column combination, marks and footers: what the
// renderer prints, the parser reads back.
func TestRoundTrip(t *testing.T) {
	ro := mlxemu.SampleQueryE()
	ro.Rows[2].ReadOnly = true
	reports := map[string]mlxemu.Report{
		"query":        mlxemu.SampleQuery(),
		"query -e":     mlxemu.SampleQueryE(),
		"read-only":    ro,
		"no default":   func() mlxemu.Report { r := mlxemu.SampleQueryE(); r.NoDefault = true; return r }(),
		"no current":   func() mlxemu.Report { r := mlxemu.SampleQueryE(); r.NoCurrent = true; return r }(),
		"neither":      func() mlxemu.Report { r := mlxemu.SampleQueryE(); r.NoDefault, r.NoCurrent = true, true; return r }(),
		"wide values":  mlxemu.SampleSNO(),
		"n/a and text": {Device: mlxemu.SampleDevice, Verbose: true, Rows: []mlxemu.Row{{Name: "X", Default: mlxemu.Cell{Text: "N/A"}, Current: mlxemu.Cell{Text: "0x0000000000000000000000000000000000000001"}, NextBoot: mlxemu.Cell{Text: "N/A"}}}},
	}
	for _, l := range mlxemu.Layouts() {
		for name, r := range reports {
			t.Run(l.String()+"/"+name, func(t *testing.T) {
				out, _ := mlxemu.RenderQuery(l, r)
				got, err := mlxfmt.ParseQuery(out)
				if err != nil {
					t.Fatal(err)
				}
				want := toQuery(r, false)
				if l >= mlxemu.G3 {
					for i, row := range r.Rows {
						want.Params[i].ReadOnly = row.ReadOnly
					}
				}
				if diff := cmp.Diff(want, got, cmpValue); diff != "" {
					t.Errorf("round trip (-want +got):\n%s\n%s", diff, out)
				}
			})
			t.Run(l.String()+"/set/"+name, func(t *testing.T) {
				s := r
				s.Rows = append([]mlxemu.Row(nil), r.Rows...)
				for i := range s.Rows {
					s.Rows[i].New = mlxemu.NumCell(int64(i))
				}
				out, _ := mlxemu.RenderSet(l, s, mlxemu.AnswerYesFlag)
				got, err := mlxfmt.ParseQuery(out)
				if err != nil {
					t.Fatal(err)
				}
				want := toQuery(s, true)
				if l >= mlxemu.G3 {
					for i, row := range s.Rows {
						want.Params[i].ReadOnly = row.ReadOnly
					}
				}
				if diff := cmp.Diff(want, got, cmpValue); diff != "" {
					t.Errorf("round trip (-want +got):\n%s\n%s", diff, out)
				}
			})
		}
	}
}

func TestParseErrors(t *testing.T) {
	unknown := mlxemu.SampleQuery()
	unknown.Rows = nil
	tests := []struct {
		name       string
		out        func() []byte
		wantKind   mlxfmt.ErrorKind
		wantParam  string
		wantDevice string
	}{
		{"old unknown parameter", func() []byte {
			r := unknown
			r.Err = mlxemu.UnknownParamError(mlxemu.G1, "FOO")
			b, _ := mlxemu.RenderQuery(mlxemu.G1, r)
			return b
		}, mlxfmt.ErrUnknownParam, "FOO", mlxemu.SampleDevice.Device},
		{"new unknown parameter", func() []byte {
			r := unknown
			r.Err = mlxemu.UnknownParamError(mlxemu.G6, "PF_NUM_SAT_PF")
			b, _ := mlxemu.RenderQuery(mlxemu.G6, r)
			return b
		}, mlxfmt.ErrUnknownParam, "PF_NUM_SAT_PF", mlxemu.SampleDevice.Device},
		{"open failure", func() []byte {
			b, _ := mlxemu.RenderQuery(mlxemu.G6, mlxemu.Report{Err: mlxemu.OpenDeviceError()})
			return b
		}, mlxfmt.ErrOpenDevice, "", ""},
		{"aborted at the prompt", func() []byte {
			b, _ := mlxemu.RenderSet(mlxemu.G4, mlxemu.SampleSet(), mlxemu.AnswerNo)
			return b
		}, mlxfmt.ErrAborted, "", mlxemu.SampleDevice.Device},
		{"unknown value", func() []byte {
			r := unknown
			r.Err = mlxemu.UnknownValueError("INFINIBAND")
			b, _ := mlxemu.RenderSet(mlxemu.G5, r, mlxemu.AnswerYesFlag)
			return b
		}, mlxfmt.ErrUnknownValue, "", mlxemu.SampleDevice.Device},
		{"read-only", func() []byte {
			r := unknown
			r.Err = mlxemu.ReadOnlyError("nv_global_pci_conf")
			b, _ := mlxemu.RenderSet(mlxemu.G5, r, mlxemu.AnswerYesFlag)
			return b
		}, mlxfmt.ErrReadOnly, "", mlxemu.SampleDevice.Device},
		{"duplicate", func() []byte { return []byte("-E- Duplicate parameter, SRIOV_EN.\n    NAME:\n") }, mlxfmt.ErrDuplicateParam, "SRIOV_EN", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := mlxfmt.ParseQuery(tt.out())
			var te *mlxfmt.ToolError
			if !errors.As(err, &te) {
				t.Fatalf("err = %v, want *mlxfmt.ToolError", err)
			}
			if te.Kind != tt.wantKind || te.Param != tt.wantParam {
				t.Errorf("got %v %q, want %v %q", te.Kind, te.Param, tt.wantKind, tt.wantParam)
			}
			if !errors.Is(err, &mlxfmt.ToolError{Kind: tt.wantKind}) {
				t.Errorf("errors.Is does not match kind %v", tt.wantKind)
			}
			if q.Device.Device != tt.wantDevice {
				t.Errorf("device = %q, want %q", q.Device.Device, tt.wantDevice)
			}
		})
	}
}
