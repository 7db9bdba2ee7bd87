package mlxfmt

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/internal/testlab/golden"
)

// TestRealResetCorpus parses every output of testdata/real/mstfwreset
// (Debian's mstfwreset 4.21 and the src-* cases mstflint's source prints):
// its -E- message classified, a query whole, and compares the result with
// NAME.parsed.json (-update-real rewrites them).
func TestRealResetCorpus(t *testing.T) {
	dir := "../../../testdata/real/mstfwreset"
	outs, _ := filepath.Glob(filepath.Join(dir, "*.stdout"))
	if len(outs) < 8 {
		t.Fatalf("only %d cases in %s", len(outs), dir)
	}
	for _, f := range outs {
		name := strings.TrimSuffix(filepath.Base(f), ".stdout")
		t.Run(name, func(t *testing.T) {
			stdout, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var argv []string
			b, err := os.ReadFile(filepath.Join(dir, name+".cmd"))
			if err == nil {
				err = json.Unmarshal(b, &argv)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]any{"error": nil}
			if e := ParseResetError(stdout); e != nil {
				got["error"] = map[string]string{"kind": e.Kind.String(), "message": e.Message}
			}
			for _, a := range argv {
				if a == "q" || a == "query" {
					q, err := ParseResetQuery(stdout)
					var te *ResetToolError
					switch {
					case errors.As(err, &te):
					case err != nil:
						got["query_error"] = err.Error()
					default:
						got["query"] = q
					}
				}
			}
			out, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Compare(t, filepath.Join(dir, name+".parsed.json"), append(out, '\n'), *updateReal, "go test ./providers/firmware/mlxfmt -run TestRealResetCorpus -update-real")
		})
	}
}

// TestParseResetQueryRefusesOtherOutput: an output with neither table nor
// -E- line is no query.
func TestParseResetQueryRefusesOtherOutput(t *testing.T) {
	for _, out := range []string{"", "\n", "Reset-types (relevant only for reset-levels 3,4):\n0: Full chip reset   -Supported     (default)\n"} {
		if _, err := ParseResetQuery([]byte(out)); !errors.Is(err, ErrNoResetTable) {
			t.Errorf("%q: %v, want ErrNoResetTable", out, err)
		}
	}
}
