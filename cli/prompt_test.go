package cli_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli"
)

// TestApplyPromptNeedsATerminal: without --yes, apply asks, and only an
// operator at a terminal (stdin and stdout) can answer: "echo yes |
// rdmaform apply" and a run with stdout redirected change nothing.
func TestApplyPromptNeedsATerminal(t *testing.T) {
	dir := t.TempDir()
	h := filepath.Join(dir, "host")
	if code, _, errs := runCLI(t, "sim", "new", h, "--profile", "cx5-roce"); code != 0 {
		t.Fatalf("sim new: %s", errs)
	}
	spec := "../examples/roce.yaml"
	apply := func(stdinTTY, stdoutTTY bool) (int, string) {
		var out, errb bytes.Buffer
		code := cli.Run([]string{"--sim", h, "apply", "-f", spec}, cli.Env{Stdin: strings.NewReader("yes\n"), Stdout: &out, Stderr: &errb,
			Environ: []string{"NO_COLOR=1"}, StdinTTY: stdinTTY, StdoutTTY: stdoutTTY})
		return code, out.String() + errb.String()
	}
	for _, c := range []struct {
		name          string
		stdin, stdout bool
	}{{"piped yes", false, true}, {"stdout redirected", true, false}, {"neither", false, false}} {
		code, out := apply(c.stdin, c.stdout)
		if code != 1 || !strings.Contains(out, "nothing was changed (use --yes") {
			t.Errorf("%s: exit %d\n%s", c.name, code, out)
		}
		if code, _, _ := runCLI(t, "--sim", h, "plan", "-f", spec); code != 2 {
			t.Fatalf("%s: the host changed (plan exit %d, want 2)", c.name, code)
		}
	}
	// At a terminal, any answer but "yes" cancels.
	var out, errb bytes.Buffer
	code := cli.Run([]string{"--sim", h, "apply", "-f", spec}, cli.Env{Stdin: strings.NewReader("no\n"), Stdout: &out, Stderr: &errb,
		Environ: []string{"NO_COLOR=1"}, StdinTTY: true, StdoutTTY: true})
	if code != 1 || !strings.Contains(errb.String(), "apply cancelled; nothing was changed") {
		t.Errorf("answered no: exit %d\n%s%s", code, out.String(), errb.String())
	}
	if code, out := apply(true, true); code != 0 {
		t.Errorf("at a terminal, answered yes: exit %d\n%s", code, out)
	}
	if code, _, _ := runCLI(t, "--sim", h, "plan", "-f", spec); code != 0 {
		t.Errorf("after the answered apply, plan exit %d, want 0", code)
	}
}
