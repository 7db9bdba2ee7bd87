package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// module writes a small Go module with a git index (the runner copies
// what git knows of) and returns its directory.
func module(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Skipf("git %v: %v %s", args, err, out)
		}
	}
	return dir
}

// TestRunnerOutcomes: on a module of its own, each outcome is told apart
// (killed, survived, equivalent, stale, no-compile, timeout, and a
// baseline that fails), the working tree is never changed, and the
// table's rate counts only the valid mutants.
func TestRunnerOutcomes(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool on PATH")
	}
	src := "package m\n\nfunc Max(a, b int) int {\n\tif a > b {\n\t\treturn a\n\t}\n\treturn b\n}\n\nfunc Sleep() bool { return false }\n"
	dir := module(t, map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.22\n",
		"m.go":   src,
		"m_test.go": "package m\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\n" +
			"func TestMax(t *testing.T) {\n\tif Max(2, 1) != 2 || Max(1, 2) != 2 {\n\t\tt.Fatal(\"Max\")\n\t}\n}\n\n" +
			"func TestWeak(t *testing.T) { _ = Max(1, 1) }\n\n" +
			"func TestSleep(t *testing.T) {\n\tfor Sleep() {\n\t\ttime.Sleep(time.Second)\n\t}\n}\n\n" +
			"func TestBroken(t *testing.T) { t.Fatal(\"always\") }\n",
	})
	pkgs := []string{"./"}
	ms := []Mutant{
		{ID: "K", Area: "a", File: "m.go", Find: "if a > b {", Replace: "if a < b {", Pkgs: pkgs, Run: "TestMax"},
		{ID: "S", Area: "a", File: "m.go", Find: "if a > b {", Replace: "if a >= b {", Pkgs: pkgs, Run: "TestWeak"},
		{ID: "E", Area: "a", File: "m.go", Find: "if a > b {", Replace: "if a >= b {", Pkgs: pkgs, Run: "TestMax", Equivalent: "equal values give the same result"},
		{ID: "ST", Area: "b", File: "m.go", Find: "if a >= b {", Replace: "if a > b {", Pkgs: pkgs, Run: "TestMax"},
		{ID: "NC", Area: "b", File: "m.go", Find: "return b\n", Replace: "return \"b\"\n", Pkgs: pkgs, Run: "TestMax"},
		{ID: "T", Area: "b", File: "m.go", Find: "return false }", Replace: "return true }", Pkgs: pkgs, Run: "TestSleep"},
		{ID: "B", Area: "b", File: "m.go", Find: "return a\n", Replace: "return b\n", Pkgs: pkgs, Run: "TestBroken"},
	}
	var log bytes.Buffer
	rs, err := runAll(&log, dir, ms, 5*time.Second, true)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"K": "killed", "S": "survived", "E": "equivalent", "ST": "stale", "NC": "no-compile", "T": "timeout", "B": "baseline-fail"}
	for _, r := range rs {
		if r.Status != want[r.M.ID] {
			t.Errorf("%s: %s (%s), want %s", r.M.ID, r.Status, r.By, want[r.M.ID])
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "m.go")); err != nil || string(b) != src {
		t.Errorf("the working tree's m.go changed: %q (%v)", b, err)
	}
	var out bytes.Buffer
	treeRoot = dir
	if bad := report(&out, rs); !bad {
		t.Error("report does not flag the stale, no-compile and baseline-fail mutants")
	}
	// Valid: K, S, E, T; killed K and T; leaving E out, 2 of 3.
	for _, w := range []string{"kill rate: 2/4 = 50.0 % of the valid mutants; 2/3 = 66.7 % leaving out the 1 equivalent", "ST (m.go:?)", "S (m.go:4)"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("report lacks %q:\n%s", w, out.String())
		}
	}
	if killRate(rs, true) < 66.6 || killRate(rs, true) > 66.7 {
		t.Errorf("killRate %.2f, want 66.67", killRate(rs, true))
	}
}

// TestLoadRefuses: a list entry without its tests, a mutant that changes
// nothing and an id twice are refused by name.
func TestLoadRefuses(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"- {id: A, area: x, file: f.go, find: a, replace: b, pkgs: [./], run: T}\n- {id: A, area: x, file: f.go, find: a, replace: c, pkgs: [./], run: T}\n", "mutant id A twice"},
		{"- {id: A, area: x, file: f.go, find: a, replace: a, pkgs: [./], run: T}\n", "replaces its snippet with itself"},
		{"- {id: A, area: x, file: f.go, find: a, replace: b, run: T}\n", "pkgs and run are required"},
		{"- {id: A, area: x, file: f.go, find: a, replace: b, pkgs: [./], run: T, bogus: 1}\n", "field bogus not found"},
		{"- {id: A, area: x, file: f.go, find: a, replace: b, pkgs: [./], run: \"(\"}\n", "run: error parsing regexp"},
	} {
		f := filepath.Join(t.TempDir(), "m.yaml")
		if err := os.WriteFile(f, []byte(c.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := load(f); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.yaml, err, c.want)
		}
	}
}
