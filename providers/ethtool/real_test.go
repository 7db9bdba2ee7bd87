package ethtool

import (
	"encoding/json"
	"flag"
	"path/filepath"
	"testing"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/golden"
)

var updateReal = flag.Bool("update-real", false, "rewrite the expected parses of testdata/real/ethtool-gl (review the diff)")

// TestRealCorpus reads every capture of testdata/real/ethtool-gl (the
// kernel lab's virtio_net and loopback under ethtool 6.1; see
// PROVENANCE.md) the way the provider does: a failed run through
// notSupported, an -g or -l answer through Parse; a set command's
// answer is only its exit and words. The result is compared with
// NAME.parsed.json; -update-real rewrites them.
func TestRealCorpus(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "real", "ethtool-gl")
	for _, name := range golden.Cases(t, root) {
		t.Run(name, func(t *testing.T) {
			c := golden.ReadCase(t, root, name)
			got := map[string]any{}
			switch {
			case c.Exit != 0:
				e := &host.ExitError{Cmd: host.Cmd{Args: c.Argv}, Code: c.Exit, Stdout: c.Stdout, Stderr: c.Stderr}
				got["not_supported"] = notSupported(e)
			case c.Argv[1] == "-g" || c.Argv[1] == "-l":
				header := map[string]string{"-g": "Ring", "-l": "Channel"}[c.Argv[1]]
				p, err := Parse(c.Stdout, header)
				got["params"], got["err"] = p, errString(err)
			default:
				got["set"] = "exit 0, no output"
			}
			b, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Compare(t, filepath.Join(root, name+".parsed.json"), append(b, '\n'), *updateReal, "go test ./providers/ethtool -run TestRealCorpus -update-real")
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestParseRefuses: what is not ethtool's answer is an error, never
// numbers.
func TestParseRefuses(t *testing.T) {
	for _, c := range []struct{ in, header string }{
		{"", "Ring"},
		{"Ring parameters for eth0:\nPre-set maximums:\nRX:\t\t256\n", "Channel"},
		{"Ring parameters for eth0:\nPre-set maximums:\nRX:\t\tmany\nCurrent hardware settings:\nRX:\t\t1\n", "Ring"},
		{"Ring parameters for eth0:\nRX:\t\t256\n", "Ring"},
		{"Ring parameters for eth0:\nPre-set maximums:\nRX:\t\t256\n", "Ring"},
		{"Ring parameters for eth0:\nPre-set maximums:\nTX:\t\t256\nCurrent hardware settings:\nRX:\t\t1\n", "Ring"},
		{"Ring parameters for eth0:\nPre-set maximums:\nRX:\t\t-1\nCurrent hardware settings:\nRX:\t\t1\n", "Ring"},
	} {
		if p, err := Parse([]byte(c.in), c.header); err == nil {
			t.Errorf("Parse(%q, %s) = %+v, want an error", c.in, c.header, p)
		}
	}
}
