// Package golden compares a test's output with a checked-in expectation
// file, and rewrites the file instead when the test is run to update it.
package golden

import (
	"os"
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
