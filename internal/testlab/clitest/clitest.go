// Package clitest runs rdmaform's command line in-process for tests, as a
// user would, and writes the spec files they pass it.
package clitest

import (
	"bytes"
	"os"
	"path/filepath"
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
