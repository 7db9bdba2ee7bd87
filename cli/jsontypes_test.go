package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli"
)

// TestExampleValuesKeepOneJSONType plans every example on a copy of its
// simulated host with -o json, applies it (with a simulated reboot where
// firmware asks for one) and plans again, and checks that each attribute's
// before and after, and each pending item's current and next boot, have
// one JSON type (null aside), and that booleans are JSON booleans, never
// "yes"/"no" or "True"/"False" strings. Between them the examples reach
// every provider that plans changes today.
func TestExampleValuesKeepOneJSONType(t *testing.T) {
	specs, _ := filepath.Glob("../examples/*.yaml")
	kinds := map[string]bool{}
	for _, spec := range specs {
		t.Run(filepath.Base(spec), func(t *testing.T) {
			dir := copyHost(t, exampleHost(t, spec), t.TempDir())
			var check func(what string, out string)
			check = func(what string, out string) {
				t.Helper()
				var doc struct {
					Plan    json.RawMessage `json:"plan"`
					Changes []struct {
						Address    string `json:"address"`
						Attributes []struct {
							Name          string
							Before, After any
						} `json:"attributes"`
					} `json:"changes"`
					Pending []struct {
						Address, Attribute string
						Current            any `json:"current"`
						NextBoot           any `json:"next_boot"`
					} `json:"pending"`
				}
				if err := json.Unmarshal([]byte(out), &doc); err != nil {
					t.Fatalf("%s: %v\n%s", what, err, out)
				}
				if doc.Plan != nil { // apply's document: its plan
					check(what+" (apply's plan)", string(doc.Plan))
				}
				for _, c := range doc.Changes {
					kinds[c.Address[:strings.IndexByte(c.Address, '[')]] = true
					for _, a := range c.Attributes {
						sameType(t, fmt.Sprintf("%s: %s %s", what, c.Address, a.Name), a.Before, a.After)
					}
				}
				for _, p := range doc.Pending {
					sameType(t, fmt.Sprintf("%s: pending %s %s", what, p.Address, p.Attribute), p.Current, p.NextBoot)
				}
			}
			code, out := runOut(t, "--sim", dir, "plan", "-o", "json", "-f", spec)
			if code != 2 {
				t.Fatalf("plan: exit %d\n%s", code, out)
			}
			check("plan", out)
			args := append(append([]string{"--sim", dir, "apply", "--yes", "-o", "json"}, exampleFlags(t, spec)...), "-f", spec)
			code, out = runOut(t, args...)
			check("apply", out)
			if code == 3 {
				code, out = runOut(t, "--sim", dir, "plan", "-o", "json", "-f", spec)
				check("plan after staging firmware", out)
				if c, o := rdmaform(t, "sim", "reboot", dir); c != 0 {
					t.Fatalf("sim reboot: %d\n%s", c, o)
				}
				code, out = runOut(t, args...)
				check("apply after the reboot", out)
			}
			if code != 0 {
				t.Fatalf("apply: exit %d\n%s", code, out)
			}
			if code, out := runOut(t, "--sim", dir, "plan", "-o", "json", "-f", spec); code != 0 {
				t.Errorf("plan after apply: exit %d\n%s", code, out)
			}
		})
	}
	var seen []string
	for k := range kinds {
		seen = append(seen, k)
	}
	sort.Strings(seen)
	for _, k := range []string{"firmware", "module", "mlx4_port", "rxe", "interface", "qos", "rdma_cm", "ipoib", "boot_unit"} {
		if !kinds[k] {
			t.Errorf("no example plans a %s change (seen: %v)", k, seen)
		}
	}
}

func sameType(t *testing.T, what string, before, after any) {
	t.Helper()
	for _, v := range []any{before, after} {
		if s, ok := v.(string); ok {
			switch strings.ToLower(s) {
			case "true", "false", "yes", "no":
				t.Errorf("%s: the boolean %q is a string (before %#v, after %#v)", what, s, before, after)
			}
		}
	}
	if before == nil || after == nil {
		return
	}
	if fmt.Sprintf("%T", before) != fmt.Sprintf("%T", after) {
		t.Errorf("%s: before %#v (%T), after %#v (%T): one attribute, two JSON types", what, before, before, after, after)
	}
}

// runOut runs rdmaform with stdout alone (stderr, the progress lines,
// dropped) and returns its exit code and stdout.
func runOut(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := cli.Run(args, cli.Env{Stdout: &out, Stderr: io.Discard, Environ: []string{"PATH=" + os.Getenv("PATH")}})
	return code, out.String()
}
