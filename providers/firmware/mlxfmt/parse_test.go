package mlxfmt

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := readFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readFile(name string) ([]byte, error) { return os.ReadFile(filepath.Join("testdata", name)) }

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

// TestParseQueryEdges: output with no table, and a row with more values
// than the header has columns.
func TestParseQueryEdges(t *testing.T) {
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
		{"-E- Parameter NUM_OF_VFS' value is larger than maximum allowed 127", &ToolError{Kind: ErrTooLarge, Param: "NUM_OF_VFS", Value: "127", Message: "Parameter NUM_OF_VFS' value is larger than maximum allowed 127"}},
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
