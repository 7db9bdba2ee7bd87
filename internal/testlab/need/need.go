// Package need lets a test say which real component it runs against: a
// test skips, with the reason, when the component is missing, and fails
// instead when RDMAFORM_REQUIRE_LAB=1 (CI installs everything). Every lab
// helper (netns, nmlab, systemdlab, sysfsns) and every test that runs a
// tool of this machine goes through it.
package need

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// RequireEnv turns every skip of this package into a failure.
const RequireEnv = "RDMAFORM_REQUIRE_LAB"

// Marker begins the message of every skip Skip makes, so a summary of a
// test run can tell a lab skip (a real component is missing) from other
// skips: make test's (internal/testlab/testsum) counts them.
const Marker = "lab skip: "

// Skip skips the test with the reason (after Marker), or fails it under
// RDMAFORM_REQUIRE_LAB=1.
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s (and %s=1)", msg, RequireEnv)
	}
	t.Skip(Marker + msg)
}

// File skips (or, under RDMAFORM_REQUIRE_LAB=1, fails) the test unless
// path exists; install says how to get it (apt-get install mstflint).
func File(t testing.TB, path, install string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		Skip(t, "%s is not installed (%s)", path, install)
	}
}

// Tool skips (or, under RDMAFORM_REQUIRE_LAB=1, fails) the test unless
// the program name is on PATH, and returns its path; install says how to
// get it (apt-get install ethtool).
func Tool(t testing.TB, name, install string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Skip(t, "%s is not on PATH (%s)", name, install)
	}
	return p
}

// Root skips (or fails) the test unless it runs as root; why says what
// needs it.
func Root(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Skip(t, "needs root (%s)", why)
	}
}
