package mlxfmt

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateReal = flag.Bool("update-real", false, "rewrite the expected parses of testdata/real/mstconfig (review the diff)")

// realDir is the corpus of real mlxconfig/mstconfig outputs (see its
// PROVENANCE.md).
const realDir = "../../../testdata/real/mstconfig"

// TestRealCorpus parses every real output of the corpus: its -E- line
// classified (ParseError), and for a query the whole of it (ParseQuery),
// and compares the result with the checked-in expectation
// (NAME.parsed.json); -update-real rewrites them.
func TestRealCorpus(t *testing.T) {
	outs, err := filepath.Glob(filepath.Join(realDir, "*.stdout"))
	if err != nil || len(outs) == 0 {
		t.Fatalf("no corpus in %s: %v", realDir, err)
	}
	for _, f := range outs {
		name := strings.TrimSuffix(filepath.Base(f), ".stdout")
		t.Run(name, func(t *testing.T) {
			stdout, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var argv []string
			cmd, err := os.ReadFile(filepath.Join(realDir, name+".cmd"))
			if err == nil {
				err = json.Unmarshal(cmd, &argv)
			}
			if err != nil {
				t.Fatalf("%s.cmd: %v", name, err)
			}
			got := map[string]any{"error": nil}
			if e := ParseError(stdout); e != nil {
				got["error"] = map[string]string{"kind": e.Kind.String(), "param": e.Param, "value": e.Value, "tlv": e.TLV, "message": e.Message}
			}
			for _, a := range argv {
				if a == "q" || a == "query" {
					if q, err := ParseQuery(stdout); err != nil {
						got["query_error"] = err.Error()
					} else {
						got["query"] = q
					}
				}
			}
			b, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, '\n')
			want := filepath.Join(realDir, name+".parsed.json")
			if *updateReal {
				if err := os.WriteFile(want, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			w, err := os.ReadFile(want)
			if err != nil {
				t.Fatalf("%v (run go test ./providers/firmware/mlxfmt -run TestRealCorpus -update-real)", err)
			}
			if string(w) != string(b) {
				t.Errorf("parse of %s differs from %s:\n%s", name, want, b)
			}
		})
	}
}
