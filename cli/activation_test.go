package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pendingActivations is the activation of each pending item of a plan,
// apply or status JSON document.
func pendingActivations(t *testing.T, doc string) []map[string]any {
	t.Helper()
	var d struct {
		Pending []struct {
			Activation map[string]any `json:"activation"`
		} `json:"pending"`
	}
	if err := json.Unmarshal([]byte(doc), &d); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	var out []map[string]any
	for _, p := range d.Pending {
		out = append(out, p.Activation)
	}
	return out
}

// TestPendingSaysHowToActivate: a staged LINK_TYPE_P1 is pending in
// apply, plan and status, each saying how it can become current: a
// firmware reset at level 3 (the card's mlxfwreset query lists it), in
// JSON ("activation": {"by", "level", "why"}) and text ("after
// fw-reset"); on firmware that reports no reset level, a power cycle.
// After a reboot the plan is empty.
func TestPendingSaysHowToActivate(t *testing.T) {
	dir := t.TempDir()
	h := filepath.Join(dir, "host")
	if code, _, errs := runCLI(t, "sim", "new", h, "--profile", "cx6-vpi-ib"); code != 0 {
		t.Fatalf("sim new: %s", errs)
	}
	spec := filepath.Join(dir, "eth.yaml")
	if err := os.WriteFile(spec, []byte("version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params: {LINK_TYPE_P1: ETH}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	schemas := loadSchemas(t)
	code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec, "-o", "json")
	if code != 3 {
		t.Fatalf("apply: exit %d, want 3\n%s%s", code, out, errs)
	}
	schemas.check(t, "apply -o json", "apply", out)
	want := "mlxfwreset -d 0000:3b:00.0 query: level 3 (Driver restart and PCI reset) is supported"
	check := func(what, doc string, by string, level float64, why string) {
		t.Helper()
		acts := pendingActivations(t, doc)
		if len(acts) != 1 || acts[0]["by"] != by || (level != 0 && acts[0]["level"] != level) || (level == 0 && acts[0]["level"] != nil) ||
			!strings.Contains(acts[0]["why"].(string), why) {
			t.Errorf("%s: activations %v, want by %s level %v why %q", what, acts, by, level, why)
		}
	}
	check("apply -o json", out, "fw-reset", 3, want)
	for _, args := range [][]string{{"plan", "-f", spec}, {"status", "-f", spec}, {"status"}} {
		cmd := args[0]
		code, out, errs := runCLI(t, append([]string{"--sim", h}, append(args, "-o", "json")...)...)
		if code != 3 {
			t.Fatalf("%s: exit %d, want 3\n%s%s", cmd, code, out, errs)
		}
		schemas.check(t, cmd+" -o json", cmd, out)
		check(cmd+" -o json", out, "fw-reset", 3, want)
		code, out, errs = runCLI(t, append([]string{"--sim", h}, args...)...)
		if code != 3 || !strings.Contains(out, "! firmware[0000:3b:00.0] LINK_TYPE_P1 staged for next boot (current IB, next ETH), after fw-reset\n") {
			t.Errorf("%v: exit %d, want 3 and the pending item after fw-reset\n%s%s", args, code, out, errs)
		}
	}

	if code, _, errs := runCLI(t, "sim", "fault", h, "--reset", "power-cycle", "--match", "0000:3b:00.1"); code != 0 {
		t.Fatalf("sim fault: %s", errs)
	}
	code, out, errs = runCLI(t, "--sim", h, "plan", "-f", spec, "-o", "json")
	schemas.check(t, "plan -o json", "plan", out)
	check("plan -o json (power-cycle)", out, "power-cycle", 0, "mlxfwreset -d 0000:3b:00.0 query: -E- There is no supported reset-level")
	if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 3 || !strings.Contains(out, "(current IB, next ETH), after power-cycle\n") {
		t.Errorf("plan (power-cycle): exit %d\n%s%s", code, out, errs)
	}
	_ = errs

	if code, _, errs := runCLI(t, "sim", "reboot", h); code != 0 {
		t.Fatalf("sim reboot: %s", errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 0 {
		t.Errorf("plan after the reboot: exit %d, want 0 (empty)\n%s%s", code, out, errs)
	}
}

// TestSimFaultResetLimits: sim fault --reset takes power-cycle, vfs,
// no-return and late only, and no exit code, message or hang; --delay
// (above 0) goes with late and only with it.
func TestSimFaultResetLimits(t *testing.T) {
	h := filepath.Join(t.TempDir(), "host")
	if code, _, errs := runCLI(t, "sim", "new", h, "--profile", "cx6-vpi-ib"); code != 0 {
		t.Fatalf("sim new: %s", errs)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--reset", "vfs"}, 0, "added a fault"},
		{[]string{"--reset", "power-cycle", "--match", "0000:3b:00.0", "--times", "1"}, 0, "added a fault"},
		{[]string{"--reset", "no-return", "--match", "0000:3b:00.1"}, 0, "added a fault"},
		{[]string{"--reset", "no-return", "--hang"}, 1, "a reset fault answers as the reset tool does"},
		{[]string{"--reset", "late", "--delay", "1ns"}, 0, "added a fault"},
		{[]string{"--reset", "late", "--delay", "0s"}, 1, "a late reset fault, and only it, has a delay (above 0)"},
		{[]string{"--reset", "late"}, 1, "a late reset fault, and only it, has a delay (above 0)"},
		{[]string{"--reset", "no-return", "--delay", "1s"}, 1, "a late reset fault, and only it, has a delay (above 0)"},
		{[]string{"--reset", "reboot"}, 1, `unknown reset fault "reboot"`},
		{[]string{"--reset", "vfs", "--exit", "2"}, 1, "a reset fault answers as the reset tool does"},
		{[]string{"--reset", "vfs", "--tool", "mstfwreset"}, 1, "exactly one of"},
	} {
		code, out, errs := runCLI(t, append([]string{"sim", "fault", h}, tt.args...)...)
		if code != tt.code || !strings.Contains(out+errs, tt.want) {
			t.Errorf("sim fault %v: exit %d, want %d with %q\n%s%s", tt.args, code, tt.code, tt.want, out, errs)
		}
	}
}
