package names

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// TestRulesGuard: the rules file is checked where it is written. Rules
// whose netdev name would close udev's quoted value (and add RUN+=),
// escape its quote, or be substituted at boot ($kernel, %k), and rules
// carrying a value read from the host that is not what its key takes (a
// netdev type or MAC holding a quote), are refused by Make, naming the
// line, and nothing is written; rdmaform's own rules, names at the
// kernel's 15-byte limit, are written. Plan refuses the same rules as a
// finding instead of a change.
func TestRulesGuard(t *testing.T) {
	good := renderRules([]rule{
		netdevRule("0000:5e:00.0", Netdev{Type: "1", DevPort: "0"}, "abcdefghijklmno"),
		netdevRule("0000:5e:00.1", Netdev{Type: "32", DevPort: "1"}, "ib!#&'()*+,;<=>"),
		netdevRule("", Netdev{MAC: "02:00:5e:10:00:01", DevType: "", Driver: true}, "rxe0eth"),
		netdevRule("", Netdev{MAC: "02:00:5e:10:00:02", DevType: "macvlan"}, "mv0"),
		rdmaRule("0000:5e:00.0", strings.Repeat("r", 63)),
	})
	bad := map[string][]byte{
		"a quote in the name":         renderRules([]rule{netdevRule("0000:5e:00.0", Netdev{Type: "1"}, `a",RUN+="x`)}),
		"a backslash in the name":     renderRules([]rule{netdevRule("0000:5e:00.0", Netdev{Type: "1"}, `a\`)}),
		"$kernel":                     renderRules([]rule{netdevRule("0000:5e:00.0", Netdev{Type: "1"}, `$kernel`)}),
		"%k":                          renderRules([]rule{netdevRule("0000:5e:00.0", Netdev{Type: "1"}, `eth%k`)}),
		"a name past 15 bytes":        renderRules([]rule{netdevRule("0000:5e:00.0", Netdev{Type: "1"}, "abcdefghijklmnop")}),
		"a byte past ASCII":           renderRules([]rule{netdevRule("0000:5e:00.0", Netdev{Type: "1"}, "eth\u00e9")}),
		"a quote in the type":         renderRules([]rule{netdevRule("0000:5e:00.0", Netdev{Type: `1", RUN+="/bin/x`}, "eth0")}),
		"a quote in the MAC":          renderRules([]rule{netdevRule("", Netdev{MAC: `02:00", RUN+="/bin/x`}, "eth0")}),
		"an RDMA name with a space":   renderRules([]rule{rdmaRule("0000:5e:00.0", "rail0 x")}),
		"a line of another form":      []byte(header + "RUN+=\"/bin/x\"\n"),
		"no header":                   []byte(`ACTION=="add", SUBSYSTEM=="net", KERNELS=="0000:5e:00.0", ATTR{type}=="1", ATTR{dev_port}=="0", NAME="eth0"` + "\n"),
		"a last line with no newline": []byte(strings.TrimSuffix(string(good), "\n")),
	}
	make := func(t *testing.T, rules []byte) (error, string) {
		t.Helper()
		dir := t.TempDir()
		h, err := host.NewRooted(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = (&Provider{}).Make(context.Background(), h, &plan.Change{}, &payload{file: true, rules: rules})
		return err, filepath.Join(dir, RulesFile)
	}
	err, f := make(t, good)
	if err != nil {
		t.Fatalf("rdmaform's own rules refused: %v\n%s", err, good)
	}
	if b, err := os.ReadFile(f); err != nil || string(b) != string(good) {
		t.Fatalf("rules written: %q (%v), want %q", b, err, good)
	}
	for name, rules := range bad {
		t.Run(name, func(t *testing.T) {
			err, f := make(t, rules)
			if err == nil || !strings.Contains(err.Error(), "refusing to write") {
				t.Fatalf("Make wrote %q: %v", rules, err)
			}
			if _, serr := os.Stat(f); !errors.Is(serr, fs.ErrNotExist) {
				t.Fatalf("Make refused (%v) but %s is there (%v)", err, f, serr)
			}
			if checkRules(rules) == nil {
				t.Fatalf("checkRules took %q", rules)
			}
		})
	}
}
