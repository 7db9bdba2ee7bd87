// Package clitest runs rdmaform's command line in-process for tests, as a
// user would, and writes the spec files they pass it.
package clitest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli"
)

// Run runs rdmaform with args (no colour, no locale from the caller) and
// returns its exit code, stdout and stderr.
func Run(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = cli.Run(args, cli.Env{Stdout: &out, Stderr: &errb, Environ: []string{"NO_COLOR=1"}})
	return code, out.String(), errb.String()
}

// WriteSpec writes a spec to a temporary host.yaml and returns its path.
func WriteSpec(t testing.TB, text string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "host.yaml")
	if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// MustRun runs rdmaform and fails the test unless it exits with want; it
// returns stdout and stderr together.
func MustRun(t testing.TB, want int, args ...string) string {
	t.Helper()
	code, out, errs := Run(t, args...)
	if code != want {
		t.Fatalf("rdmaform %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errs)
	}
	return out + errs
}

// Converge is a scenario's step on the simulated host dir: plan shows
// work (exit 2), apply does it, and the next plan is empty. It returns
// the first plan's output.
func Converge(t testing.TB, dir, spec string) string {
	t.Helper()
	out := MustRun(t, 2, "--sim", dir, "plan", "-f", spec)
	MustRun(t, 0, "--sim", dir, "apply", "--yes", "-f", spec)
	if after := MustRun(t, 0, "--sim", dir, "plan", "-f", spec); !strings.Contains(after, "No changes.") {
		t.Fatalf("plan after apply:\n%s", after)
	}
	return out
}
