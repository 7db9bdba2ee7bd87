package golden_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const realDir = "../../../testdata/real"

// TestEveryRealCaseHasProvenance: every case of testdata/real (a .cmd
// file) has a row in PROVENANCE.md that names it (as `case` under its
// directory's section, or `dir/case`), and every golden PROVENANCE.md
// says was checked by hand exists.
func TestEveryRealCaseHasProvenance(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(realDir, "PROVENANCE.md"))
	if err != nil {
		t.Fatal(err)
	}
	prov := string(b)
	// Rows by section: "## dir/" (or "### dir/...") headings own the rows
	// below them.
	rows := map[string]bool{}
	section := ""
	heading := regexp.MustCompile(`^#{2,3} ([a-z]+)/`)
	cell := regexp.MustCompile("^\\| `([^`]+)`")
	for _, l := range strings.Split(prov, "\n") {
		if m := heading.FindStringSubmatch(l); m != nil {
			section = m[1]
			continue
		}
		if m := cell.FindStringSubmatch(l); m != nil {
			name := m[1]
			if !strings.Contains(name, "/") {
				name = section + "/" + name
			}
			rows[name] = true
		}
	}
	cmds, err := filepath.Glob(filepath.Join(realDir, "*", "*.cmd"))
	if err != nil || len(cmds) < 50 {
		t.Fatalf("%d cases (%v)", len(cmds), err)
	}
	for _, c := range cmds {
		name := filepath.Base(filepath.Dir(c)) + "/" + strings.TrimSuffix(filepath.Base(c), ".cmd")
		if !rows[name] {
			t.Errorf("%s has no row in PROVENANCE.md", name)
		}
	}
	_, checked, ok := strings.Cut(prov, "\n## Goldens checked by hand\n")
	if !ok {
		t.Fatal("PROVENANCE.md has no section \"## Goldens checked by hand\"")
	}
	checked, _, _ = strings.Cut(checked, "\n## ")
	n := 0
	for _, m := range regexp.MustCompile("`([a-z]+/[a-z0-9-]+)\\.parsed\\.json`").FindAllStringSubmatch(checked, -1) {
		n++
		if _, err := os.Stat(filepath.Join(realDir, m[1]+".parsed.json")); err != nil {
			t.Errorf("PROVENANCE.md says %s.parsed.json was checked by hand: %v", m[1], err)
		}
	}
	if n == 0 {
		t.Error("PROVENANCE.md names no golden checked by hand")
	}
}
