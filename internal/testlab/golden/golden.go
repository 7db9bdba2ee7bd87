// Package golden compares a test's output with a checked-in expectation
// file, and rewrites the file instead when the test is run to update it.
package golden

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Compare fails the test unless got equals the file at path. With update,
// it writes got to path first (the diff is then reviewed in the commit).
// how says how to regenerate, for the message when the file is missing.
func Compare(t testing.TB, path string, got []byte, update bool, how string) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (%s)", err, how)
	}
	if string(want) != string(got) {
		t.Errorf("differs from %s (%s to accept):\n%s", path, how, got)
	}
}

// Case is one case of the real-output corpus (testdata/real/DIR/NAME.*):
// the command line, what it printed and its exit status.
type Case struct {
	Argv           []string
	Stdout, Stderr []byte
	Exit           int
}

// ReadCase reads case name of the corpus directory dir; a missing
// .stdout or .stderr is empty.
func ReadCase(t testing.TB, dir, name string) Case {
	t.Helper()
	read := func(suffix string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name+suffix))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return b
	}
	var c Case
	if err := json.Unmarshal(read(".cmd"), &c.Argv); err != nil {
		t.Fatalf("%s/%s.cmd: %v", dir, name, err)
	}
	code, err := strconv.Atoi(strings.TrimSpace(string(read(".exit"))))
	if err != nil {
		t.Fatalf("%s/%s.exit: %v", dir, name, err)
	}
	c.Exit, c.Stdout, c.Stderr = code, read(".stdout"), read(".stderr")
	return c
}

// Cases lists the case names of a corpus directory (one per NAME.exit).
func Cases(t testing.TB, dir string) []string {
	t.Helper()
	exits, err := filepath.Glob(filepath.Join(dir, "*.exit"))
	if err != nil || len(exits) == 0 {
		t.Fatalf("no corpus in %s: %v", dir, err)
	}
	var out []string
	for _, e := range exits {
		out = append(out, strings.TrimSuffix(filepath.Base(e), ".exit"))
	}
	return out
}
