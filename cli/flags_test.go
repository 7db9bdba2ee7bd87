package cli_test

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/cli/clitest"
)

// commandsWithOutput lists the command paths (without "rdmaform") of every
// command that takes -o FORMAT.
func commandsWithOutput(t *testing.T) [][]string {
	t.Helper()
	var out [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if f := c.Flags().Lookup("output"); f != nil && f.Shorthand == "o" {
			out = append(out, path)
		}
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string{}, path...), sub.Name()))
		}
	}
	walk(cli.Command(), nil)
	if len(out) < 8 {
		t.Fatalf("only %d commands with -o: %v", len(out), out)
	}
	return out
}

// TestJSONFlagErrors: with -o json, an error cobra finds before the
// command runs (an unknown flag, a bad flag value, an extra argument, -o
// after the bad flag) is the JSON errors document on stdout too, for
// every command that takes -o, with exit 1 (docs/reference/json.md), 3
// for fabric-test report and health, whose exit codes are Nagios's.
func TestJSONFlagErrors(t *testing.T) {
	s := loadSchemas(t)
	for _, path := range commandsWithOutput(t) {
		for _, tail := range [][]string{
			{"-o", "json", "--bogus"},
			{"--bogus", "--output=json"},
			{"-ojson", "-x"},
		} {
			args := append(append([]string{}, path...), tail...)
			want := 1
			if p := strings.Join(path, " "); p == "fabric-test report" || p == "health" {
				want = 3 // a health check's UNKNOWN (Nagios)
			}
			out := runJSON(t, "", want, args...)
			e := s.check(t, strings.Join(args, " "), "errors", out)
			errs, _ := e["errors"].([]any)
			if len(errs) != 1 || !strings.Contains(errs[0].(map[string]any)["message"].(string), "unknown") {
				t.Errorf("%s: errors %v, want the unknown flag", strings.Join(args, " "), errs)
			}
		}
	}
	// A bad value and an argument the command does not take.
	for _, args := range [][]string{
		{"apply", "-o", "json", "--lock-timeout", "soon"},
		{"plan", "-o", "json", "extra"},
	} {
		s.check(t, strings.Join(args, " "), "errors", runJSON(t, "", 1, args...))
	}
	// Without -o json the error stays text on stderr, stdout empty.
	code, stdout, stderr := clitest.Run(t, "plan", "--bogus")
	if code != 1 || stdout != "" || !strings.Contains(stderr, "unknown flag: --bogus") {
		t.Errorf("plan --bogus: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestVerboseIsV: -v means --verbose wherever it exists and nothing else;
// the version is --version (docs/reference/README.md: -v/--verbose).
func TestVerboseIsV(t *testing.T) {
	var walk func(c *cobra.Command)
	seen := 0
	walk = func(c *cobra.Command) {
		c.InitDefaultVersionFlag()
		c.InitDefaultHelpFlag()
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Shorthand == "v" {
				seen++
				if f.Name != "verbose" {
					t.Errorf("%s: -v is --%s, want --verbose", c.CommandPath(), f.Name)
				}
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(cli.Command())
	if seen == 0 {
		t.Fatal("no command has -v/--verbose")
	}
	code, stdout, stderr := clitest.Run(t, "-v")
	if code != 1 || strings.Contains(stdout, "rdmaform ") || !strings.Contains(stderr, "-v is --verbose") || !strings.Contains(stderr, "--version") {
		t.Errorf("rdmaform -v: exit %d, stdout %q, stderr %q; want an error pointing at --verbose and --version", code, stdout, stderr)
	}
	code, stdout, _ = clitest.Run(t, "--version")
	if code != 0 || !strings.HasPrefix(stdout, "rdmaform ") {
		t.Errorf("rdmaform --version: exit %d, stdout %q", code, stdout)
	}
}
