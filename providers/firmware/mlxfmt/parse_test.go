package mlxfmt

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var cmpValue = cmpopts.EquateComparable(Value{})

// toQuery is what ParseQuery should return for a rendered report.
func toQuery(r Report, set bool) Query {
	q := Query{Device: r.Device, Columns: Columns{Default: r.showDefault(), Current: r.showCurrent(), NextBoot: true, New: set}}
	q.NoDefault = r.Verbose && r.NoDefault
	q.NoCurrent = r.Verbose && r.NoCurrent
	for _, row := range r.Rows {
		p := Param{Name: row.Name, NextBoot: row.NextBoot}
		if q.Columns.Default {
			p.Default = row.Default
		}
		if q.Columns.Current {
			p.Current = row.Current
		}
		if set {
			p.New = row.New
		}
		p.Modified = (q.Columns.Default && !sameValue(row.NextBoot, row.Default)) || (q.Columns.Current && !sameValue(row.NextBoot, row.Current))
		q.Params = append(q.Params, p)
	}
	return q
}

func TestParseSamples(t *testing.T) {
	tests := []struct {
		file string
		want Query
	}{
		{"g1_query.txt", toQuery(sampleQuery(), false)},
		{"g1_query_e.txt", toQuery(sampleQueryE(), false)},
		{"g1_set.txt", toQuery(sampleSet(), true)},
		{"g4_query.txt", toQuery(sampleQuery(), false)},
		{"g4_query_e.txt", toQuery(sampleQueryE(), false)},
		{"g4_set.txt", toQuery(sampleSet(), true)},
		{"g4_sno_cx4lx_query_e.txt", toQuery(sampleSNO(), false)},
		{"g5_query.txt", toQuery(sampleQuery(), false)},
		{"g5_query_e.txt", toQuery(sampleQueryE(), false)},
		{"g5_set.txt", toQuery(sampleSet(), true)},
		{"g6_query.txt", toQuery(sampleQuery(), false)},
		{"g6_query_e.txt", toQuery(sampleQueryE(), false)},
		{"g6_set.txt", toQuery(sampleSet(), true)},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := ParseQuery(readGolden(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpValue); diff != "" {
				t.Errorf("ParseQuery (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseSNODetails(t *testing.T) {
	q, err := ParseQuery(readGolden(t, "g4_sno_cx4lx_query_e.txt"))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := q.Param("PCI_ATOMIC_MODE")
	if !ok {
		t.Fatal("PCI_ATOMIC_MODE missing")
	}
	if got := p.Current.String(); got != "PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)" {
		t.Errorf("PCI_ATOMIC_MODE current = %q", got)
	}
	vfs, _ := q.Param("NUM_OF_VFS")
	if !vfs.Pending() || !vfs.Modified {
		t.Errorf("NUM_OF_VFS 5 -> 10 should be pending and modified: %+v", vfs)
	}
	roce, _ := q.Param("ROCE_CONTROL")
	if !roce.Pending() {
		t.Errorf("ROCE_CONTROL DEVICE_DEFAULT(0) -> ROCE_ENABLE(2) should be pending")
	}
}

// Every layout, every column combination, marks and footers: what the
// renderer prints, the parser reads back.
func TestRoundTrip(t *testing.T) {
	ro := sampleQueryE()
	ro.Rows[2].ReadOnly = true
	reports := map[string]Report{
		"query":        sampleQuery(),
		"query -e":     sampleQueryE(),
		"read-only":    ro,
		"no default":   func() Report { r := sampleQueryE(); r.NoDefault = true; return r }(),
		"no current":   func() Report { r := sampleQueryE(); r.NoCurrent = true; return r }(),
		"neither":      func() Report { r := sampleQueryE(); r.NoDefault, r.NoCurrent = true, true; return r }(),
		"wide values":  sampleSNO(),
		"n/a and text": {Device: cx6, Verbose: true, Rows: []Row{{Name: "X", Default: NA(), Current: ParseValue("0x0000000000000000000000000000000000000001"), NextBoot: NA()}}},
	}
	for _, l := range Layouts() {
		for name, r := range reports {
			t.Run(l.String()+"/"+name, func(t *testing.T) {
				out, _ := RenderQuery(l, r)
				got, err := ParseQuery(out)
				if err != nil {
					t.Fatal(err)
				}
				want := toQuery(r, false)
				if l >= G3 {
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
				s.Rows = append([]Row(nil), r.Rows...)
				for i := range s.Rows {
					s.Rows[i].New = Num(int64(i))
				}
				out, _ := RenderSet(l, s, AnswerYesFlag)
				got, err := ParseQuery(out)
				if err != nil {
					t.Fatal(err)
				}
				want := toQuery(s, true)
				if l >= G3 {
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
	unknown := sampleQuery()
	unknown.Rows = nil
	tests := []struct {
		name       string
		out        func() []byte
		wantKind   ErrorKind
		wantParam  string
		wantDevice string
	}{
		{"old unknown parameter", func() []byte {
			r := unknown
			r.Err = UnknownParamError(G1, "FOO")
			b, _ := RenderQuery(G1, r)
			return b
		}, ErrUnknownParam, "FOO", cx6.Device},
		{"new unknown parameter", func() []byte {
			r := unknown
			r.Err = UnknownParamError(G6, "PF_NUM_SAT_PF")
			b, _ := RenderQuery(G6, r)
			return b
		}, ErrUnknownParam, "PF_NUM_SAT_PF", cx6.Device},
		{"open failure", func() []byte {
			b, _ := RenderQuery(G6, Report{Err: OpenDeviceError()})
			return b
		}, ErrOpenDevice, "", ""},
		{"aborted at the prompt", func() []byte {
			b, _ := RenderSet(G4, sampleSet(), AnswerNo)
			return b
		}, ErrAborted, "", cx6.Device},
		{"unknown value", func() []byte {
			r := unknown
			r.Err = UnknownValueError("INFINIBAND")
			b, _ := RenderSet(G5, r, AnswerYesFlag)
			return b
		}, ErrUnknownValue, "", cx6.Device},
		{"read-only", func() []byte {
			r := unknown
			r.Err = ReadOnlyError("nv_global_pci_conf")
			b, _ := RenderSet(G5, r, AnswerYesFlag)
			return b
		}, ErrReadOnly, "", cx6.Device},
		{"duplicate", func() []byte { return []byte("-E- Duplicate parameter, SRIOV_EN.\n    NAME:\n") }, ErrDuplicateParam, "SRIOV_EN", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := ParseQuery(tt.out())
			var te *ToolError
			if !errors.As(err, &te) {
				t.Fatalf("err = %v, want *ToolError", err)
			}
			if te.Kind != tt.wantKind || te.Param != tt.wantParam {
				t.Errorf("got %v %q, want %v %q", te.Kind, te.Param, tt.wantKind, tt.wantParam)
			}
			if !errors.Is(err, &ToolError{Kind: tt.wantKind}) {
				t.Errorf("errors.Is does not match kind %v", tt.wantKind)
			}
			if q.Device.Device != tt.wantDevice {
				t.Errorf("device = %q, want %q", q.Device.Device, tt.wantDevice)
			}
		})
	}
	if _, err := ParseQuery([]byte("hello\n")); !errors.Is(err, ErrNoTable) {
		t.Errorf("no table: err = %v", err)
	}
	if _, err := ParseQuery([]byte("Configurations:   Next Boot\n   A  1  2\n")); err == nil {
		t.Error("a row with too many values must be an error")
	}
}

func TestParseErrorLine(t *testing.T) {
	tests := []struct {
		line string
		want *ToolError
	}{
		{"-E- Unknown Parameter: FOO", &ToolError{Kind: ErrUnknownParam, Param: "FOO", Message: "Unknown Parameter: FOO"}},
		{"-E- Unknown Parameter FOO", &ToolError{Kind: ErrUnknownParam, Param: "FOO", Message: "Unknown Parameter FOO"}},
		{"-E- Failed to find Param / TLV with name 'X_Y' port 0 module -1", &ToolError{Kind: ErrUnknownParam, Param: "X_Y", Message: "Failed to find Param / TLV with name 'X_Y' port 0 module -1"}},
		{"-E- The Device doesn't support INTERNAL_CPU_OFFLOAD_ENGINE parameter", &ToolError{Kind: ErrUnknownParam, Param: "INTERNAL_CPU_OFFLOAD_ENGINE", Message: "The Device doesn't support INTERNAL_CPU_OFFLOAD_ENGINE parameter"}},
		{"-E- Operation is not supported (Read only TLV: nv_x)", &ToolError{Kind: ErrReadOnly, TLV: "nv_x", Message: "Operation is not supported (Read only TLV: nv_x)"}},
		{"-E- Unknown value IBB", &ToolError{Kind: ErrUnknownValue, Value: "IBB", Message: "Unknown value IBB"}},
		{"-E- Invalid Configuration argument A", &ToolError{Kind: ErrInvalidArgument, Value: "A", Message: "Invalid Configuration argument A"}},
		{"-E- No devices found.", &ToolError{Kind: ErrNoDevices, Message: "No devices found."}},
		{"-E- something else", &ToolError{Kind: ErrOther, Message: "something else"}},
		{"-I- Please reboot", nil},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ParseErrorLine(tt.line)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseQuery(f *testing.F) {
	for _, name := range []string{"g1_query.txt", "g4_sno_cx4lx_query_e.txt", "g5_set.txt", "g6_query_e.txt"} {
		b, err := readFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("Configurations: Default Current Next Boot New\n*RO A 1 2 3 4\n-E- Unknown value x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := ParseQuery(b)
		if err == nil {
			for _, p := range q.Params {
				_ = p.Pending()
				_ = p.NextBoot.String()
			}
		}
		_ = ParseError(b)
	})
}
