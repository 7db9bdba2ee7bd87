package cli_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
)

// TestApplyOnlyRuntimeSaysWhatIsLeft: apply --only runtime (what the boot
// unit runs) never says the host matches the spec while changes of
// another activation are left: the plan's summary and the line after the
// apply name them by activation, -o json lists them in the plan's
// left_out, and the exit code is 2 until an apply without --only has
// made them; then the partial apply's plan is empty too.
func TestApplyOnlyRuntimeSaysWhatIsLeft(t *testing.T) {
	s := loadSchemas(t)
	dir := t.TempDir()
	h := filepath.Join(dir, "host")
	if code, _, stderr := clitest.Run(t, "sim", "new", h, "--profile", "cx5-roce"); code != 0 {
		t.Fatal(stderr)
	}
	// Runtime values (rdma_cm) and a module loaded now and at every boot.
	spec := clitest.WriteSpec(t, `version: 1
modules: [rdma_ucm]
devices:
  - name: mlx5_1
    ports:
      - port: 1
        roce: {mode: v2, tos: 106}
`)
	code, stdout, stderr := clitest.Run(t, "--sim", h, "apply", "--yes", "--only", "runtime", "-f", spec)
	const left = "left for an apply without --only: 1 change (now: module[rdma_ucm])"
	if code != 2 || strings.Contains(stdout, "matches the spec") || !strings.Contains(stdout, "Plan (runtime changes only): 0 to add, 1 to change, 0 to remove. L"+left[1:]) ||
		!strings.Contains(stdout, "Applied only runtime changes; "+left) {
		t.Errorf("apply --only runtime with a module left: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	// Nothing of the runtime scope left, the module still is.
	for _, format := range []string{"text", "json"} {
		var out string
		code, out, stderr = clitest.Run(t, "--sim", h, "apply", "--yes", "--only", "runtime", "-o", format, "-f", spec)
		if code != 2 {
			t.Errorf("-o %s: second apply --only runtime: exit %d, want 2 (a module left)\n%s%s", format, code, out, stderr)
		}
		if format == "text" {
			if strings.Contains(out, "matches the spec") || !strings.Contains(out, "No runtime changes. L"+left[1:]) {
				t.Errorf("second apply --only runtime says:\n%s", out)
			}
			continue
		}
		doc := s.check(t, "apply --only runtime -o json", "apply", out)
		p := doc["plan"].(map[string]any)
		b, _ := json.Marshal(p["left_out"])
		if p["only"] != "runtime" || string(b) != `[{"activation":"now","address":"module[rdma_ucm]"}]` {
			t.Errorf("apply -o json: only %v, left_out %s", p["only"], b)
		}
	}
	// A whole apply makes the module; the partial plan is then empty.
	if code, out, stderr := clitest.Run(t, "--sim", h, "apply", "--yes", "-f", spec); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, stderr)
	}
	code, stdout, stderr = clitest.Run(t, "--sim", h, "apply", "--yes", "--only", "runtime", "-f", spec)
	if code != 0 || strings.Contains(stdout, "without --only") {
		t.Errorf("apply --only runtime after a whole apply: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, out, _ := clitest.Run(t, "--sim", h, "plan", "-f", spec); code != 0 {
		t.Errorf("plan after apply: exit %d\n%s", code, out)
	}
}
