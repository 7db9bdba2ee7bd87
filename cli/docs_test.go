package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestArchitectureNamesEveryPackage: docs/architecture/overview.md names every
// provider package and every package under sim/ and internal/ (as `name`
// in the providers' list, or by its path, with or without a trailing
// slash).
func TestArchitectureNamesEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("../docs/architecture/overview.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, parent := range []string{"providers", "sim", "internal"} {
		entries, err := os.ReadDir(filepath.Join("..", parent))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !e.IsDir() || e.Name() == "testdata" {
				continue
			}
			full := parent + "/" + e.Name()
			named := strings.Contains(string(doc), "`"+full+"`") || strings.Contains(string(doc), "`"+full+"/`")
			if !named && !(parent == "providers" && strings.Contains(string(doc), "`"+e.Name()+"`")) {
				t.Errorf("docs/architecture/overview.md does not name %s", full)
			}
		}
	}
}

// TestReferenceCommandTable: the table of commands at a glance
// (docs/reference/README.md) has a row for every command and names each
// flag of audit.
func TestReferenceCommandTable(t *testing.T) {
	readme, err := os.ReadFile("../docs/reference/README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	start := strings.Index(s, "## Commands at a glance")
	if start < 0 {
		t.Fatal("docs/reference/README.md has no 'Commands at a glance' section")
	}
	table := s[start:]
	sep := strings.Index(table, "| --- |")
	table = table[:sep+strings.Index(table[sep:], "\n\n")]
	for _, cmd := range []string{"validate", "plan", "apply", "show-plan", "confirm", "rollback", "show", "status", "facts", "activate", "audit", "lint", "waves", "probe", "version", "sim"} {
		if !strings.Contains(table, "| `rdmaform "+cmd+" ") && !strings.Contains(table, "| `rdmaform "+cmd+"`") {
			t.Errorf("the command table has no row for %s", cmd)
		}
	}
	for _, flag := range []string{"--report-file", "--waivers", "--probes"} {
		if !strings.Contains(table, flag) {
			t.Errorf("the command table does not give audit's %s", flag)
		}
	}
}
