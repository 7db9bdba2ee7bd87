package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/cli/clitest"
)

// TestPlanSaysTheGuard: a plan that changes the MTU of the netdev of the
// default route says, under the plan, that apply refuses it without
// --allow-mgmt (with apply's own reason); under -o json the document
// stays the plan's and the note goes to stderr. apply then refuses it as
// the plan said; with --allow-mgmt it applies, and the plan after it is
// empty and says nothing of the guard.
func TestPlanSaysTheGuard(t *testing.T) {
	dir := freshHost(t, "--profile", "vm-soft")
	spec := clitest.WriteSpec(t, "version: 1\ninterfaces:\n  - name: enp1s0\n    mtu: 4000\n")
	const reason = "interface[enp1s0] would take down, re-address or change the MTU of enp1s0, and it carries the default route"
	code, out := rdmaform(t, "--sim", dir, "plan", "-f", spec)
	if code != 2 || !strings.Contains(out, "apply refuses this plan without --allow-mgmt") || !strings.Contains(out, reason) {
		t.Errorf("plan: exit %d\n%s", code, out)
	}
	var stdout, stderr bytes.Buffer
	code = cli.Run([]string{"--sim", dir, "plan", "-f", spec, "-o", "json"}, cli.Env{Stdout: &stdout, Stderr: &stderr, Environ: []string{"PATH=" + os.Getenv("PATH")}})
	var doc map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &doc); code != 2 || err != nil || !strings.Contains(stderr.String(), "warning: apply refuses this plan without --allow-mgmt: "+reason) {
		t.Errorf("plan -o json: exit %d, %v\n%s\n%s", code, err, stdout.String(), stderr.String())
	}
	if code, out := rdmaform(t, "--sim", dir, "apply", "--yes", "-f", spec); code != 1 || !strings.Contains(out, reason) {
		t.Errorf("apply: exit %d\n%s", code, out)
	}
	if code, out := rdmaform(t, "--sim", dir, "apply", "--yes", "--allow-mgmt", "-f", spec); code != 0 {
		t.Fatalf("apply --allow-mgmt: exit %d\n%s", code, out)
	}
	if code, out := rdmaform(t, "--sim", dir, "plan", "-f", spec); code != 0 || strings.Contains(out, "guard") {
		t.Errorf("plan after apply: exit %d\n%s", code, out)
	}
}
