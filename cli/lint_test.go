package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
)

// TestLintReportsAroundAnUnreadableSpec: lint good.yaml missing.yaml
// reports the good spec's findings and the missing one as a finding of
// its own, in text and JSON, and exits 1.
func TestLintReportsAroundAnUnreadableSpec(t *testing.T) {
	s := loadSchemas(t)
	bad := clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \"0000:5e:00.0\"\n    ports:\n      - port: 1\n        roce: {mode: v3}\n")
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	code, stdout, stderr := clitest.Run(t, "lint", bad, missing)
	if code != 1 || !strings.Contains(stdout, bad+":6:22: error: $.devices[0].ports[0].roce.mode: must be v1 or v2") ||
		!strings.Contains(stdout, missing+": error: $: cannot read the spec") {
		t.Errorf("lint %s %s: exit %d\nstdout:\n%s\nstderr:\n%s", bad, missing, code, stdout, stderr)
	}
	doc := s.check(t, "lint -o json", "lint", runJSON(t, "", 1, "lint", "-o", "json", bad, missing))
	errs, _ := doc["errors"].([]any)
	var files []string
	for _, e := range errs {
		src, _ := e.(map[string]any)["source"].(map[string]any)
		f, _ := src["file"].(string)
		files = append(files, f)
	}
	if len(errs) != 2 || files[0] != bad || files[1] != missing {
		t.Errorf("lint -o json: errors at %v, want one in each of %s and %s: %v", files, bad, missing, doc)
	}
}
