package mlxfmt

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/internal/testlab/golden"
)

// TestFlintCorpus parses every real mstflint output of
// testdata/real/mstflint (PROVENANCE.md) with ParseFlintQuery and compares
// the result with NAME.parsed.json; -update-real rewrites them.
func TestFlintCorpus(t *testing.T) {
	dir := "../../../testdata/real/mstflint"
	outs, err := filepath.Glob(filepath.Join(dir, "*.stdout"))
	if err != nil || len(outs) == 0 {
		t.Fatalf("no corpus in %s: %v", dir, err)
	}
	for _, f := range outs {
		name := strings.TrimSuffix(filepath.Base(f), ".stdout")
		t.Run(name, func(t *testing.T) {
			stdout, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]any{}
			q, err := ParseFlintQuery(stdout)
			switch e := err.(type) {
			case nil:
				got["query"] = q
			case *ToolError:
				got["error"] = map[string]string{"kind": e.Kind.String(), "message": e.Message}
			default:
				got["query_error"] = err.Error()
			}
			b, _ := json.MarshalIndent(got, "", "  ")
			golden.Compare(t, filepath.Join(dir, name+".parsed.json"), append(b, '\n'), *updateReal, "go test ./providers/firmware/mlxfmt -run TestFlintCorpus -update-real")
		})
	}
}

func TestParseFlintQueryNotAQuery(t *testing.T) {
	for _, out := range []string{"", "hello\n", "FW Version:            1.2.3\n", "PSID:                  MT_1\n"} {
		if _, err := ParseFlintQuery([]byte(out)); err != ErrNotFlintQuery {
			t.Errorf("ParseFlintQuery(%q) error %v, want ErrNotFlintQuery", out, err)
		}
	}
}

// TestBurnProgress: the percentage lines of a burn as flint/subcommands.cpp
// prints them (CbCommon "\r%s%3d%%", advProgressFunc "\r%s - %3d%%"), and
// lines that are not one.
func TestBurnProgress(t *testing.T) {
	for _, c := range []struct {
		line  string
		stage string
		pct   int
		ok    bool
	}{
		{"Burning FW image without signatures -   0%", "Burning FW image without signatures", 0, true},
		{"Burning FW image without signatures -  42%", "Burning FW image without signatures", 42, true},
		{"Restoring signature                     - 100%", "Restoring signature", 100, true},
		{"Burning FW image without signatures - OK", "", 0, false},
		{"Burning FW image without signatures - 101%", "", 0, false},
		{"-I- To load new FW run mstfwreset or reboot machine.", "", 0, false},
		{"- 10%", "", 0, false},
	} {
		stage, pct, ok := BurnProgress(c.line)
		if stage != c.stage || pct != c.pct || ok != c.ok {
			t.Errorf("BurnProgress(%q) = %q, %d, %v; want %q, %d, %v", c.line, stage, pct, ok, c.stage, c.pct, c.ok)
		}
	}
}
