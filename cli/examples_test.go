package cli_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli"
)

// rdmaform runs the CLI in-process and returns its exit code and output.
func rdmaform(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := cli.Run(args, cli.Env{Stdout: &out, Stderr: &out, Environ: []string{"PATH=" + os.Getenv("PATH")}})
	return code, out.String()
}

// TestExamples: every example spec names its simulated host in a
// "# host: DIR" header; on a copy of that host its plan is not empty, apply
// (with a simulated reboot when firmware asks for one) converges, and the
// plan after it is empty.
func TestExamples(t *testing.T) {
	specs, _ := filepath.Glob("../examples/*.yaml")
	if len(specs) < 3 {
		t.Fatalf("only %d example specs", len(specs))
	}
	for _, spec := range specs {
		t.Run(filepath.Base(spec), func(t *testing.T) {
			hostDir := exampleHost(t, spec)
			state, err := os.ReadFile(filepath.Join("..", hostDir, "sim.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "sim.yaml"), state, 0o644); err != nil {
				t.Fatal(err)
			}
			if code, out := rdmaform(t, "--sim", dir, "plan", "-f", spec); code != 2 {
				t.Fatalf("plan on a fresh %s: exit %d, want 2 (changes):\n%s", hostDir, code, out)
			}
			args := append(append([]string{"--sim", dir, "apply", "--yes"}, exampleFlags(t, spec)...), "-f", spec)
			code, out := rdmaform(t, args...)
			if code == 3 {
				if c, o := rdmaform(t, "sim", "reboot", dir); c != 0 {
					t.Fatalf("sim reboot: %d\n%s", c, o)
				}
				code, out = rdmaform(t, args...)
			}
			if code != 0 {
				t.Fatalf("apply: exit %d:\n%s", code, out)
			}
			if code, out := rdmaform(t, "--sim", dir, "plan", "-f", spec); code != 0 || !strings.Contains(out, "No changes.") {
				t.Fatalf("plan after apply: exit %d, want 0 and no changes:\n%s", code, out)
			}
		})
	}
}

// exampleFlags are the apply flags an example says it needs in an
// "# apply flags: ..." header (an example that changes the management
// interface needs --allow-mgmt, as an operator would).
func exampleFlags(t *testing.T, spec string) []string {
	t.Helper()
	b, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f, ok := strings.CutPrefix(l, "# apply flags: "); ok {
			return strings.Fields(f)
		}
	}
	return nil
}

func exampleHost(t *testing.T, spec string) string {
	t.Helper()
	f, err := os.Open(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if h, ok := strings.CutPrefix(sc.Text(), "# host: "); ok {
			return strings.TrimSpace(h)
		}
	}
	t.Fatalf("%s has no '# host: DIR' header naming its simulated host", spec)
	return ""
}
