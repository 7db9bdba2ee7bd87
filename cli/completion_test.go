package cli_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/sim"
)

// complete asks rdmaform's shell completion (what the bash, zsh and fish
// scripts run: rdmaform __complete ARGS) for the candidates of the last
// argument, and returns them with the directive.
func complete(t *testing.T, args ...string) (candidates []string, directive string) {
	t.Helper()
	code, out, errs := clitest.Run(t, append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	return lines[:len(lines)-1], lines[len(lines)-1]
}

// TestCompletionValues: completing -o offers each command's formats and
// completing sim new --profile the simulator's profiles, never file
// names (directive 4, no file completion).
func TestCompletionValues(t *testing.T) {
	for _, cmd := range jsonCommands(t) {
		args := append(strings.Fields(cmd), "-o", "")
		got, dir := complete(t, args...)
		code, help, _ := clitest.Run(t, append(strings.Fields(cmd), "--help")...)
		i := strings.Index(help, "output FORMAT: ")
		if code != 0 || i < 0 {
			t.Fatalf("%s --help: exit %d, no -o FORMAT list\n%s", cmd, code, help)
		}
		list := help[i+len("output FORMAT: "):]
		list = list[:strings.IndexAny(list, "(\n")]
		want := strings.Split(strings.TrimSpace(list), ", ")
		if diff := cmp.Diff(want, got); diff != "" || dir != ":4" {
			t.Errorf("%s -o <TAB>: directive %s (-want +got):\n%s", cmd, dir, diff)
		}
	}
	got, dir := complete(t, "sim", "new", "/tmp/h", "--profile", "")
	if diff := cmp.Diff(sim.ProfileNames(), got); diff != "" || dir != ":4" || len(got) < 2 {
		t.Errorf("sim new --profile <TAB>: directive %s (-want +got):\n%s", dir, diff)
	}
}
