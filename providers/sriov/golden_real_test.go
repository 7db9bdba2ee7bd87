package sriov

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/internal/testlab/golden"
)

var updateReal = flag.Bool("update-real", false, "rewrite the expected parses of testdata/real/ip (review the diff)")

// TestRealCorpus parses every `ip -j link show` output of the corpus
// (captures and source layouts; see PROVENANCE.md) with ParseVFs and
// compares the result with NAME.parsed.json; -update-real rewrites them.
func TestRealCorpus(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "real", "ip")
	exits, err := filepath.Glob(filepath.Join(root, "*.exit"))
	if err != nil || len(exits) < 5 {
		t.Fatalf("corpus in %s: %d cases, %v", root, len(exits), err)
	}
	for _, ex := range exits {
		name := strings.TrimSuffix(filepath.Base(ex), ".exit")
		t.Run(name, func(t *testing.T) {
			read := func(suffix string) []byte {
				b, err := os.ReadFile(filepath.Join(root, name+suffix))
				if err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				return b
			}
			code, err := strconv.Atoi(strings.TrimSpace(string(read(".exit"))))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]any{}
			if code != 0 {
				got["exit"], got["stderr"] = code, string(read(".stderr"))
			} else {
				vfs, err := ParseVFs(read(".stdout"))
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
