package sriov

import (
	"encoding/json"
	"flag"
	"path/filepath"
	"testing"

	"github.com/rdmaform/rdmaform/internal/testlab/golden"
)

var updateReal = flag.Bool("update-real", false, "rewrite the expected parses of testdata/real/ip (review the diff)")

// TestRealCorpus parses every `ip -j link show` output of the corpus
// (captures and source layouts; see PROVENANCE.md) with ParseVFs and
// compares the result with NAME.parsed.json; -update-real rewrites them.
func TestRealCorpus(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "real", "ip")
	names := golden.Cases(t, root)
	if len(names) < 5 {
		t.Fatalf("only %d cases in %s", len(names), root)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			c := golden.ReadCase(t, root, name)
			got := map[string]any{}
			if c.Exit != 0 {
				got["exit"], got["stderr"] = c.Exit, string(c.Stderr)
			} else {
				vfs, err := ParseVFs(c.Stdout)
				got["vfs"] = vfs
				if err != nil {
					got["err"] = err.Error()
				}
			}
			b, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Compare(t, filepath.Join(root, name+".parsed.json"), append(b, '\n'), *updateReal, "go test ./providers/sriov -run TestRealCorpus -update-real")
		})
	}
}
