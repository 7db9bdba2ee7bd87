package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/cli/clitest"
)

// TestValidateSaysWhenItSkipsTheParamDB: without mstflint's parameter
// database, validate of a spec with firmware parameters still passes but
// says that it did not check them, in text and in JSON; a spec without
// firmware parameters, or --no-param-db, gets no note.
func TestValidateSaysWhenItSkipsTheParamDB(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "mlxconfig_host.db")
	defer cli.SetParamDBPath(missing)()
	s := loadSchemas(t)
	fw := clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params: {LINK_TYPE_P1: ETH}\n")
	code, stdout, stderr := clitest.Run(t, "validate", "-f", fw)
	if code != 0 || !strings.Contains(stdout, "note: firmware parameters were not checked: mstflint's parameter database "+missing+" is not installed") {
		t.Errorf("validate without the database: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	doc := s.check(t, "validate -o json", "validate", runJSON(t, "", 0, "validate", "-o", "json", "-f", fw))
	if notes, _ := doc["notes"].([]any); len(notes) != 1 || !strings.Contains(notes[0].(string), "not checked") {
		t.Errorf("validate -o json without the database: notes %v", doc["notes"])
	}
	for _, args := range [][]string{
		{"validate", "--no-param-db", "-f", fw},
		{"validate", "-f", "../examples/roce.yaml"},
	} {
		if code, stdout, _ := clitest.Run(t, args...); code != 0 || strings.Contains(stdout, "note:") {
			t.Errorf("%s: exit %d, %q; want no note", strings.Join(args, " "), code, stdout)
		}
	}
}
