package qos

import (
	"encoding/json"
	"flag"
	"path/filepath"
	"testing"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/golden"
)

var updateReal = flag.Bool("update-real", false, "rewrite the expected parses of testdata/real/{dcb,ethtool} (review the diff)")

// TestRealCorpus reads every dcb and ethtool output of the corpus (real
// captures, man page examples and source layouts; see PROVENANCE.md) the
// way the provider does: a failed run through notSupported, a `dcb -j`
// object or `ethtool -a` text through its parser; text dcb outputs, which
// rdmaform never reads, are only listed. The result is compared with
// NAME.parsed.json; -update-real rewrites them.
func TestRealCorpus(t *testing.T) {
	n := 0
	for _, dir := range []string{"dcb", "ethtool"} {
		root := filepath.Join("..", "..", "testdata", "real", dir)
		for _, name := range golden.Cases(t, root) {
			n++
			t.Run(dir+"/"+name, func(t *testing.T) {
				c := golden.ReadCase(t, root, name)
				argv, code, stdout := c.Argv, c.Exit, c.Stdout
				got := map[string]any{}
				switch {
				case code != 0:
					e := &host.ExitError{Cmd: host.Cmd{Args: argv}, Code: code, Stdout: stdout, Stderr: c.Stderr}
					got["not_supported"] = notSupported(e)
				case argv[0] == "ethtool":
					rx, tx, err := ParsePause(stdout)
					got["rx"], got["tx"], got["err"] = rx, tx, errString(err)
				case argv[0] == "dcb" && argv[1] == "-j":
					switch argv[2] {
					case "pfc":
						v, err := ParsePFC(stdout)
						got["pfc"], got["err"] = v, errString(err)
					case "ets":
						v, err := ParseETS(stdout)
						got["ets"], got["err"] = v, errString(err)
					case "app":
						v, err := ParseApp(stdout)
						got["dscp_prio"], got["err"] = v, errString(err)
					case "dcbx":
						v, err := ParseDCBX(stdout)
						got["dcbx"], got["err"] = v, errString(err)
					}
				default:
					got["text"] = "not read by rdmaform (it reads dcb -j)"
				}
				b, err := json.MarshalIndent(got, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				golden.Compare(t, filepath.Join(root, name+".parsed.json"), append(b, '\n'), *updateReal, "go test ./providers/qos -run TestRealCorpus -update-real")
			})
		}
	}
	if n < 20 {
		t.Errorf("only %d dcb and ethtool cases", n)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
