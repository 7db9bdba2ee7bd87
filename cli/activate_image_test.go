package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/sim"
)

// imageHost is a simulated cx6-vpi-ib host with a firmware image of the
// card's PSID at /srv/fw/fw.bin (20.36.1012; the card runs 20.35.1012)
// and a spec asking for it.
func imageHost(t *testing.T) (dir, h, spec string) {
	t.Helper()
	dir = t.TempDir()
	h = filepath.Join(dir, "host")
	runJSON(t, "", 0, "sim", "new", h, "--profile", "cx6-vpi-ib")
	if err := os.MkdirAll(filepath.Join(h, "srv/fw"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := sim.WriteImage(filepath.Join(h, "srv/fw/fw.bin"), "MT_0000000222", "20.36.1012"); err != nil {
		t.Fatal(err)
	}
	spec = filepath.Join(dir, "host.yaml")
	writeActivateSpec(t, spec, "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware: {version: \"20.36.1012\", image: /srv/fw/fw.bin}\n")
	return dir, h, spec
}

// pendingActivation is the activation of the firmware_image pending item
// of a plan, apply or status JSON document (nil when there is none).
func pendingActivation(t *testing.T, doc string) map[string]any {
	t.Helper()
	var d struct {
		Pending []struct {
			Address    string         `json:"address"`
			Activation map[string]any `json:"activation"`
		} `json:"pending"`
	}
	if err := json.Unmarshal([]byte(doc), &d); err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Pending {
		if p.Address == "firmware_image[0000:3b:00.0]" {
			if p.Activation == nil {
				return map[string]any{}
			}
			return p.Activation
		}
	}
	return nil
}

// TestActivateBurnedImageByFWReset: image burn → pending → active by a
// firmware reset. The burned image is pending "after fw-reset" (level 3)
// in plan, apply and status, text and JSON, like a staged parameter;
// activate --by fw-reset loads it (the reset loads the flash, as
// mlxfwreset does); the card runs the image's version, the ledger entry
// leaves, and apply and plan are empty.
func TestActivateBurnedImageByFWReset(t *testing.T) {
	s := loadSchemas(t)
	_, h, spec := imageHost(t)
	s.check(t, "apply, burn", "apply", runJSON(t, "", 3, "--sim", h, "apply", "--yes", "-o", "json", "-f", spec))
	for _, c := range []struct {
		name string
		args []string
	}{
		{"plan", []string{"plan", "-o", "json", "-f", spec}},
		{"apply", []string{"apply", "--yes", "-o", "json", "-f", spec}},
		{"status", []string{"status", "-o", "json", "-f", spec}},
		{"status", []string{"status", "-o", "json"}},
	} {
		out := s.check(t, c.name+" after the burn", c.name, runJSON(t, "", 3, append([]string{"--sim", h}, c.args...)...))
		b, _ := json.Marshal(out)
		act := pendingActivation(t, string(b))
		if act == nil || act["by"] != "fw-reset" || act["level"] != float64(3) || !strings.Contains(act["why"].(string), "mlxfwreset -d 0000:3b:00.0 query") {
			t.Errorf("%v: the burned image's pending item has activation %v, want fw-reset at level 3 from the reset query", c.args, act)
		}
	}
	for _, args := range [][]string{{"plan", "-f", spec}, {"status", "-f", spec}, {"status"}} {
		code, out, errs := runCLI(t, append([]string{"--sim", h}, args...)...)
		if code != 3 || !strings.Contains(out, "firmware_image[0000:3b:00.0] version staged for next boot (current 20.35.1012, next 20.36.1012), after fw-reset") {
			t.Errorf("%v: exit %d, want 3 with the image after fw-reset\n%s%s", args, code, out, errs)
		}
	}
	if code, out, errs := runCLI(t, "--sim", h, "activate", "--by", "fw-reset", "-f", spec); code != 0 || !strings.Contains(out, "0000:3b:00: firmware reset (level 3) done") {
		t.Fatalf("activate --by fw-reset: exit %d, want 0\n%s%s", code, out, errs)
	}
	if v, _ := os.ReadFile(filepath.Join(h, "sys/class/infiniband/mlx5_0/fw_ver")); strings.TrimSpace(string(v)) != "20.36.1012" {
		t.Errorf("fw_ver after the reset %q, want the burned 20.36.1012", v)
	}
	if _, err := os.Stat(filepath.Join(h, "var/lib/rdmaform/staged.json")); !os.IsNotExist(err) {
		b, _ := os.ReadFile(filepath.Join(h, "var/lib/rdmaform/staged.json"))
		t.Errorf("the ledger entry of the burn did not leave after the reset (%v):\n%s", err, b)
	}
	runJSON(t, "", 0, "--sim", h, "apply", "--yes", "-f", spec)
	runJSON(t, "", 0, "--sim", h, "plan", "-f", spec)
}

// TestBurnProgress: apply reports a burn's progress as the tool prints
// it (mstflint's "\rBurning FW image without signatures -  25%"), each
// tenth once, between the burn's start and its outcome.
func TestBurnProgress(t *testing.T) {
	_, h, spec := imageHost(t)
	code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec)
	if code != 3 {
		t.Fatalf("apply: exit %d, want 3\n%s%s", code, out, errs)
	}
	want := []string{"firmware_image[0000:3b:00.0]: updating...",
		"firmware_image[0000:3b:00.0]: Burning FW image without signatures 0%...",
		"firmware_image[0000:3b:00.0]: Burning FW image without signatures 25%...",
		"firmware_image[0000:3b:00.0]: Burning FW image without signatures 50%...",
		"firmware_image[0000:3b:00.0]: Burning FW image without signatures 75%...",
		"firmware_image[0000:3b:00.0]: updated (effective after reboot) after "}
	rest := errs
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("apply's progress lacks %q (in order):\n%s", w, errs)
		}
		rest = rest[i+len(w):]
	}
}
