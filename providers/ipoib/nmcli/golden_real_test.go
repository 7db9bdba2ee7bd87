package nmcli

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

var updateReal = flag.Bool("update-real", false, "rewrite the expected parses of testdata/real/nmcli (review the diff)")

// realDir is the corpus of real nmcli outputs (see its PROVENANCE.md).
const realDir = "../../../testdata/real/nmcli"

// TestRealCorpus parses every real nmcli output of the corpus with the
// parser its command calls for and compares the result with the checked-in
// expectation (NAME.parsed.json); -update-real rewrites them. NAME.cmd is
// the command line that printed it (errors are told apart by it).
func TestRealCorpus(t *testing.T) {
	exits, err := filepath.Glob(filepath.Join(realDir, "*.exit"))
	if err != nil || len(exits) == 0 {
		t.Fatalf("no corpus in %s: %v", realDir, err)
	}
	for _, ex := range exits {
		name := strings.TrimSuffix(filepath.Base(ex), ".exit")
		t.Run(name, func(t *testing.T) {
			read := func(suffix string) []byte {
				b, err := os.ReadFile(filepath.Join(realDir, name+suffix))
				if err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				return b
			}
			code, err := strconv.Atoi(strings.TrimSpace(string(read(".exit"))))
			if err != nil {
				t.Fatal(err)
			}
			stdout, stderr := read(".stdout"), read(".stderr")
			var argv []string
			if err := json.Unmarshal(read(".cmd"), &argv); err != nil {
				t.Fatalf("%s.cmd: %v", name, err)
			}
			got := map[string]any{}
			switch {
			case code != 0:
				e := newError(argv, code, stderr)
				got["error"] = map[string]any{"code": e.Code.String(), "message": e.Message,
					"no_such_connection": IsNoSuchConnection(e), "activation_failed": IsActivationFailed(e),
					"invalid_input": IsInvalidInput(e), "rejected": IsRejected(e), "not_running": IsNotRunning(e)}
			case strings.HasPrefix(name, "list-"):
				l, err := ParseList(stdout)
				got["list"], got["err"] = l, errString(err)
			case strings.HasPrefix(name, "show-"):
				ps, err := ParseProfiles(stdout)
				got["profiles"], got["err"] = ps, errString(err)
			case name == "sriov-owners":
				o, err := ParseSRIOVOwners(stdout)
				got["sriov_owners"], got["err"] = o, errString(err)
			case strings.HasPrefix(name, "add-"), strings.HasPrefix(name, "sriov-add-"):
				u, err := ParseAdded(stdout)
				got["uuid"], got["err"] = u, errString(err)
			default:
				got["stdout"] = string(stdout)
			}
			b, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, '\n')
			golden.Compare(t, filepath.Join(realDir, name+".parsed.json"), b, *updateReal, "go test ./providers/ipoib/nmcli -run TestRealCorpus -update-real")
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
