package cli_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/sim"
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
			dir := copyHost(t, hostDir, t.TempDir())
			if code, out := rdmaform(t, "--sim", dir, "plan", "-f", spec); code != 2 {
				t.Fatalf("plan on a fresh %s: exit %d, want 2 (changes):\n%s", hostDir, code, out)
			}
			converge(t, dir, spec, exampleFlags(t, spec))
		})
	}
}

// TestShowReproducesEveryExample: show captures all a spec sets, not only
// something that plans nothing. Each example spec is applied to a copy of
// its simulated host; what show captures there is applied to a fresh copy
// of the same host; the example then plans nothing on that second host. A
// section show failed to capture leaves the second host without it, and
// the example's plan there shows the change. The example's persistence is
// left out of that last plan (withoutPersistence).
func TestShowReproducesEveryExample(t *testing.T) {
	specs, _ := filepath.Glob("../examples/*.yaml")
	for _, spec := range specs {
		t.Run(filepath.Base(spec), func(t *testing.T) {
			hostDir, flags := exampleHost(t, spec), exampleFlags(t, spec)
			a := copyHost(t, hostDir, filepath.Join(t.TempDir(), "a"))
			b := copyHost(t, hostDir, filepath.Join(t.TempDir(), "b"))
			converge(t, a, spec, flags)
			code, out := rdmaform(t, "--sim", a, "show")
			if code != 0 {
				t.Fatalf("show: exit %d\n%s", code, out)
			}
			captured := filepath.Join(t.TempDir(), "captured.yaml")
			if err := os.WriteFile(captured, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			converge(t, b, captured, flags)
			if code, pout := rdmaform(t, "--sim", b, "plan", "-f", withoutPersistence(t, spec)); code != 0 {
				t.Errorf("the example on a host made from show's capture: exit %d\n%s\ncapture:\n%s", code, pout, out)
			}
		})
	}
}

// withoutPersistence is spec without its persistence key. The boot unit
// holds a copy of the spec that installed it, so it is the spec's, not
// host state show reads: show leaves it out (else its capture, applied to
// the same host, would plan replacing that copy).
func withoutPersistence(t *testing.T, spec string) string {
	t.Helper()
	b, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "persistence:") {
			keep = append(keep, l)
		}
	}
	out := filepath.Join(t.TempDir(), filepath.Base(spec))
	if err := os.WriteFile(out, []byte(strings.Join(keep, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// copyHost copies the simulated host in the repository's hostDir to dir.
func copyHost(t *testing.T, hostDir, dir string) string {
	t.Helper()
	state, err := os.ReadFile(filepath.Join("..", hostDir, "sim.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sim.yaml"), state, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// converge applies spec to the simulated host in dir, with a simulated
// reboot when firmware asks for one, and checks that the plan after it is
// empty.
func converge(t *testing.T, dir, spec string, flags []string) {
	t.Helper()
	args := append(append([]string{"--sim", dir, "apply", "--yes"}, flags...), "-f", spec)
	code, out := rdmaform(t, args...)
	if code == 3 {
		if c, o := rdmaform(t, "sim", "reboot", dir); c != 0 {
			t.Fatalf("sim reboot: %d\n%s", c, o)
		}
		code, out = rdmaform(t, args...)
	}
	if code != 0 {
		t.Fatalf("apply of %s: exit %d:\n%s", spec, code, out)
	}
	if code, out := rdmaform(t, "--sim", dir, "plan", "-f", spec); code != 0 || !strings.Contains(out, "No changes.") {
		t.Fatalf("plan after apply of %s: exit %d, want 0 and no changes:\n%s", spec, code, out)
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

// TestExampleHostsHaveSimNewTools: every simulated host in examples/hosts
// has each tool a host of its profile made by `sim new` has (the example
// hosts lacked ip, so VF settings failed on all of them).
func TestExampleHostsHaveSimNewTools(t *testing.T) {
	dirs, _ := filepath.Glob("../examples/hosts/*/sim.yaml")
	if len(dirs) < 6 {
		t.Fatalf("only %d example hosts", len(dirs))
	}
	for _, f := range dirs {
		profile := filepath.Base(filepath.Dir(f))
		t.Run(profile, func(t *testing.T) {
			fresh, err := sim.NewState(profile, "node1", 0)
			if err != nil {
				t.Fatalf("examples/hosts/%s is named after no profile: %v", profile, err)
			}
			s, err := sim.Open(copyHost(t, filepath.Join("examples/hosts", profile), t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			have := map[string]bool{}
			for _, tool := range s.State().Tools {
				have[tool] = true
			}
			for _, tool := range fresh.Tools {
				if !have[tool] {
					t.Errorf("examples/hosts/%s lacks %s, which sim new --profile %s has", profile, tool, profile)
				}
			}
		})
	}
}
