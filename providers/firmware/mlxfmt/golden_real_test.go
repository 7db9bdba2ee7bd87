package mlxfmt

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/internal/testlab/golden"
)

var updateReal = flag.Bool("update-real", false, "rewrite the expected parses of testdata/real/{mstconfig,mlxconfig,mst} (review the diff)")

// realDirs are the corpora of real mlxconfig/mstconfig and mst outputs
// (see testdata/real/PROVENANCE.md).
var realDirs = []string{"../../../testdata/real/mstconfig", "../../../testdata/real/mlxconfig", "../../../testdata/real/mst"}

// TestRealCorpus parses every real output of the corpora: its -E- line
// classified (ParseError), a query whole (ParseQuery), an `mst status -v`
// listing (ParseMSTStatusVerbose), and compares the result with the
// checked-in expectation (NAME.parsed.json); -update-real rewrites them.
func TestRealCorpus(t *testing.T) {
	for _, dir := range realDirs {
		outs, err := filepath.Glob(filepath.Join(dir, "*.stdout"))
		if err != nil || len(outs) == 0 {
			t.Fatalf("no corpus in %s: %v", dir, err)
		}
		for _, f := range outs {
			realCase(t, dir, f)
		}
	}
}

func realCase(t *testing.T, realDir, f string) {
	name := strings.TrimSuffix(filepath.Base(f), ".stdout")
	t.Run(filepath.Base(realDir)+"/"+name, func(t *testing.T) {
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
		if len(argv) > 1 && argv[0] == "mst" {
			st, err := ParseMSTStatusVerbose(stdout)
			got["mst_status"], got["mst_error"] = st, ""
			if err != nil {
				got["mst_error"] = err.Error()
			}
		}
		if e := ParseError(stdout); e != nil {
			got["error"] = map[string]string{"kind": e.Kind.String(), "param": e.Param, "value": e.Value, "tlv": e.TLV, "message": e.Message}
		}
		for _, a := range argv {
			if a == "q" || a == "query" || a == "set" {
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
		golden.Compare(t, filepath.Join(realDir, name+".parsed.json"), b, *updateReal, "go test ./providers/firmware/mlxfmt -run TestRealCorpus -update-real")
	})
}

// TestRealCorpusWithoutBlankLines: every real query and set output parses
// to the same result with its blank lines dropped, as some wrappers and
// documentation print them (the ConnectX-3-era sample has none).
func TestRealCorpusWithoutBlankLines(t *testing.T) {
	n := 0
	for _, dir := range realDirs[:2] {
		outs, _ := filepath.Glob(filepath.Join(dir, "*.stdout"))
		for _, f := range outs {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ParseQuery(b)
			if err != nil || len(want.Params) == 0 {
				continue
			}
			var kept []string
			for _, l := range strings.Split(string(b), "\n") {
				if strings.TrimSpace(l) != "" {
					kept = append(kept, l)
				}
			}
			got, err := ParseQuery([]byte(strings.Join(kept, "\n") + "\n"))
			if err != nil {
				t.Errorf("%s without blank lines: %v", f, err)
				continue
			}
			wb, _ := json.MarshalIndent(want, "", "  ")
			gb, _ := json.MarshalIndent(got, "", "  ")
			if string(wb) != string(gb) {
				t.Errorf("%s without blank lines parses as\n%s\nwith them as\n%s", f, gb, wb)
			}
			n++
		}
	}
	if n < 10 {
		t.Fatalf("%d outputs checked, want every query and set of the corpus (at least 10)", n)
	}
}
