package cli_test

import (
	"bufio"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/internal/testlab/clitest"
)

// TestSimRebootHelpIsTrue: sim reboot's help says that the boot unit's
// apply does not run, and which commands do what it does at boot; on a
// host with the boot unit installed, a sim reboot leaves runtime work for
// the plan, and the help's commands, run as written, make the plan empty.
func TestSimRebootHelpIsTrue(t *testing.T) {
	code, help, _ := clitest.Run(t, "sim", "reboot", "--help")
	if code != 0 || !strings.Contains(help, "the boot unit's apply does NOT happen") {
		t.Fatalf("sim reboot --help: exit %d\n%s", code, help)
	}
	const spec = "../examples/lossless-roce.yaml" // persistence: boot-unit
	dir := copyHost(t, exampleHost(t, spec), t.TempDir())
	converge(t, dir, spec, exampleFlags(t, spec))
	if code, out := rdmaform(t, "sim", "reboot", dir); code != 0 {
		t.Fatalf("sim reboot: %d\n%s", code, out)
	}
	if code, out := rdmaform(t, "--sim", dir, "plan", "-f", spec); code != 2 || !strings.Contains(out, "not persistent") {
		t.Fatalf("plan after sim reboot: exit %d, want 2 with runtime changes (the boot unit did not run)\n%s", code, out)
	}
	var cmds [][]string
	sc := bufio.NewScanner(strings.NewReader(help))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); strings.HasPrefix(l, "rdmaform --sim DIR ") {
			args := strings.Fields(strings.ReplaceAll(l, "DIR", dir))
			cmds = append(cmds, args[1:])
		}
	}
	if len(cmds) != 2 {
		t.Fatalf("the help gives %d commands, want the rollback and the apply:\n%s", len(cmds), help)
	}
	for _, c := range cmds {
		if code, out := rdmaform(t, c...); code != 0 {
			t.Fatalf("%s: exit %d\n%s", strings.Join(c, " "), code, out)
		}
	}
	if code, out := rdmaform(t, "--sim", dir, "plan", "-f", spec); code != 0 {
		t.Errorf("plan after the help's commands: exit %d\n%s", code, out)
	}
}
