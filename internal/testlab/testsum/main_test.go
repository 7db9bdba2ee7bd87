package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/internal/testlab/need"
)

// goTest runs the go command with args through run, in this directory,
// and returns what run printed on its standard output (go's standard
// error goes to the test's log).
func goTest(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errs bytes.Buffer
	code := run(append([]string{filepath.Join(runtime.GOROOT(), "bin", "go")}, args...), &out, &errs)
	if errs.Len() > 0 {
		t.Logf("standard error:\n%s", errs.String())
	}
	return out.String(), code
}

var elapsed = regexp.MustCompile(`\d+\.\d+s`)

// TestSummary runs the sample packages (testdata: tests that pass, fail,
// skip through need.Skip and otherwise, as subtests too) with go test
// -json through run: what it prints before its skip lines is what go
// test prints without -v (the times aside), and the skip lines count and
// name each kind, with the reasons. The exit status is go test's.
func TestSummary(t *testing.T) {
	// The samples' lab skips must stay skips.
	t.Setenv(need.RequireEnv, "")
	// One package at a time: go test -json gives each package's lines as
	// it ends, go test alone in the order of the command line.
	pkgs := []string{"-p=1", "./testdata/fails", "./testdata/passes"}
	got, code := goTest(t, append([]string{"test", "-json", "-count=1"}, pkgs...)...)
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), append([]string{"test", "-count=1"}, pkgs...)...)
	plain, err := cmd.CombinedOutput()
	if code != 1 || err == nil {
		t.Errorf("exit %d (go test: %v), want 1 as go test's", code, err)
	}
	const skips = "2 lab tests skipped: internal/testlab/testsum/testdata/fails.TestLabSkip, internal/testlab/testsum/testdata/fails.TestParent/lab\n" +
		"    internal/testlab/testsum/testdata/fails.TestLabSkip: the sample component is not installed (apt-get install sample)\n" +
		"    internal/testlab/testsum/testdata/fails.TestParent/lab: a sub component is missing\n" +
		"1 other test skipped: internal/testlab/testsum/testdata/fails.TestOtherSkip\n" +
		"    internal/testlab/testsum/testdata/fails.TestOtherSkip: not in this sample\n"
	before, ok := strings.CutSuffix(got, skips)
	if !ok {
		t.Fatalf("the output does not end with the skip lines\n%s\nwant them as:\n%s", got, skips)
	}
	if a, b := elapsed.ReplaceAllString(before, "T"), elapsed.ReplaceAllString(string(plain), "T"); a != b {
		t.Errorf("the output is not go test's without -v:\n%s\ngo test printed:\n%s", a, b)
	}
	for _, hidden := range []string{"=== RUN", "--- PASS", "a passing test's log", "a passing subtest's log", need.Marker} {
		if strings.Contains(before, hidden) {
			t.Errorf("the output has %q, which go test prints only with -v:\n%s", hidden, got)
		}
	}
}

// TestSummaryAllPass: a run where nothing fails or skips exits 0, prints
// go test's ok line, and says so on both skip lines.
func TestSummaryAllPass(t *testing.T) {
	t.Setenv(need.RequireEnv, "")
	got, code := goTest(t, "test", "-json", "-count=1", "./testdata/passes")
	want := "ok  \tgithub.com/rdmaform/rdmaform/internal/testlab/testsum/testdata/passes\tT\n0 lab tests skipped\n0 other tests skipped\n"
	if g := elapsed.ReplaceAllString(got, "T"); code != 0 || g != want {
		t.Errorf("exit %d, output\n%s\nwant 0 and\n%s", code, g, want)
	}
}

// TestSummaryPanic: a test binary that dies mid-test (a panic, as the
// -timeout makes) has the test's output and the panic printed, and its
// package's FAIL line.
func TestSummaryPanic(t *testing.T) {
	t.Setenv(need.RequireEnv, "")
	got, code := goTest(t, "test", "-json", "-count=1", "./testdata/panics")
	for _, want := range []string{"logged before the panic", "panic: the sample panics", "FAIL\tgithub.com/rdmaform/rdmaform/internal/testlab/testsum/testdata/panics\t"} {
		if !strings.Contains(got, want) {
			t.Errorf("the output lacks %q:\n%s", want, got)
		}
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
}

// TestSummaryCannotRun: a command that does not exist exits 2, saying so.
func TestSummaryCannotRun(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{filepath.Join(t.TempDir(), "no-go")}, &out, &errs); code != 2 || !strings.Contains(errs.String(), "no-go") {
		t.Errorf("exit %d, %q; want 2 naming the command", code, errs.String())
	}
	if code := run(nil, &out, &errs); code != 2 {
		t.Errorf("no command: exit %d, want 2", code)
	}
}

// TestSummaryBuildFails: a package that does not compile has the
// compiler's error printed and go test's FAIL line for it; the other
// package's ok line is there too.
func TestSummaryBuildFails(t *testing.T) {
	got, code := goTest(t, "test", "-json", "-count=1", "./testdata/broken", "./testdata/passes")
	for _, want := range []string{
		"testdata/broken/broken_test.go:8:6: declared and not used: unused\n",
		"FAIL\tgithub.com/rdmaform/rdmaform/internal/testlab/testsum/testdata/broken [build failed]\n",
		"ok  \tgithub.com/rdmaform/rdmaform/internal/testlab/testsum/testdata/passes\t",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the output lacks %q:\n%s", want, got)
		}
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
}
