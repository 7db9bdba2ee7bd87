// Package need lets a test say which real component it runs against: a
// test skips, with the reason, when the component is missing, and fails
// instead when RDMAFORM_REQUIRE_LAB=1 (CI installs everything).
package need

import (
	"os"
	"testing"
)

// File skips (or, under RDMAFORM_REQUIRE_LAB=1, fails) the test unless
// path exists; install says how to get it (apt-get install mstflint).
func File(t testing.TB, path, install string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("RDMAFORM_REQUIRE_LAB") == "1" {
			t.Fatalf("%s: %v (%s)", path, err, install)
		}
		t.Skipf("%s is not installed (%s)", path, install)
	}
}
