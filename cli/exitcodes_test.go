package cli_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/plan"
)

// TestExitCodesHelp: the help of rdmaform and of plan lists the exit
// codes every command gives with the meanings of cli.ExitCodes (the
// table docs/reference/exit-codes.md is made from), and the table has
// plan's codes and the signals'.
func TestExitCodesHelp(t *testing.T) {
	codes := cli.ExitCodes()
	want := map[int]bool{plan.ExitOK: true, plan.ExitError: true, plan.ExitChanges: true, plan.ExitReboot: true, 130: true, 143: true}
	for _, e := range codes {
		if !want[e.Code] {
			t.Errorf("exit code %d is not one rdmaform gives", e.Code)
		}
		delete(want, e.Code)
		if strings.TrimSpace(e.Meaning) == "" {
			t.Errorf("exit code %d says nothing", e.Code)
		}
	}
	for c := range want {
		t.Errorf("exit code %d is missing from cli.ExitCodes", c)
	}
	for _, args := range [][]string{{"--help"}, {"plan", "--help"}} {
		code, stdout, _ := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("rdmaform %v: exit %d", args, code)
		}
		help := strings.Join(strings.Fields(stdout), " ")
		for _, e := range codes {
			line := strings.Join(strings.Fields(e.Meaning), " ")
			if len(e.Commands) == 0 && !strings.Contains(help, " "+strconv.Itoa(e.Code)+" "+line) {
				t.Errorf("rdmaform %v does not say %d %q:\n%s", args, e.Code, line, stdout)
			}
		}
	}
}
