package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/sim"
)

// TestImageBurnJSON: a firmware burn in plan and apply JSON, and the burned
// image pending until a reboot, match the output schema and docs/reference/json.md:
// a change of firmware_image[PCI] (next-boot; version and image), then a
// pending item with attribute version.
func TestImageBurnJSON(t *testing.T) {
	s := loadSchemas(t)
	dir := t.TempDir()
	hostDir := filepath.Join(dir, "host")
	runJSON(t, "", 0, "sim", "new", hostDir, "--profile", "cx6-vpi-ib")
	if err := os.MkdirAll(filepath.Join(hostDir, "srv/fw"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := sim.WriteImage(filepath.Join(hostDir, "srv/fw/fw.bin"), "MT_0000000222", "20.36.1012"); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "host.yaml")
	if err := os.WriteFile(spec, []byte("version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware: {version: \"20.36.1012\", image: /srv/fw/fw.bin}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := s.check(t, "plan, burn", "plan", runJSON(t, "", 2, "--sim", hostDir, "plan", "-o", "json", "-f", spec))
	ch := p["changes"].([]any)[0].(map[string]any)
	if ch["address"] != "firmware_image[0000:3b:00.0]" || ch["activation"] != "next-boot" {
		t.Errorf("change %v, want firmware_image[0000:3b:00.0] at next-boot", ch)
	}
	attrs := ch["attributes"].([]any)
	if a := attrs[0].(map[string]any); a["name"] != "version" || a["before"] != "20.35.1012" || a["after"] != "20.36.1012" {
		t.Errorf("attribute %v, want version 20.35.1012 -> 20.36.1012", a)
	}
	if a := attrs[1].(map[string]any); a["name"] != "image" || a["after"] != "/srv/fw/fw.bin" {
		t.Errorf("attribute %v, want image /srv/fw/fw.bin", a)
	}
	s.check(t, "apply, burn", "apply", runJSON(t, "", 3, "--sim", hostDir, "apply", "--yes", "-o", "json", "-f", spec))
	p = s.check(t, "plan, burned", "plan", runJSON(t, "", 3, "--sim", hostDir, "plan", "-o", "json", "-f", spec))
	pd := p["pending"].([]any)[0].(map[string]any)
	if pd["address"] != "firmware_image[0000:3b:00.0]" || pd["attribute"] != "version" || pd["current"] != "20.35.1012" || pd["next_boot"] != "20.36.1012" {
		t.Errorf("pending %v, want the image's version after the reboot", pd)
	}
	runJSON(t, "", 0, "sim", "reboot", hostDir)
	s.check(t, "apply after the reboot", "apply", runJSON(t, "", 0, "--sim", hostDir, "apply", "--yes", "-o", "json", "-f", spec))
	s.check(t, "plan, empty", "plan", runJSON(t, "", 0, "--sim", hostDir, "plan", "-o", "json", "-f", spec))
}

// TestImageInStatus: status without -f checks a burned image's ledger
// entry against the adapter's running firmware: pending in the boot it was
// burned in (exit 3), an activation failure after a reboot that did not
// load it (exit 1), current after one that did (exit 0).
func TestImageInStatus(t *testing.T) {
	dir := t.TempDir()
	hostDir := filepath.Join(dir, "host")
	runJSON(t, "", 0, "sim", "new", hostDir, "--profile", "cx6-vpi-ib")
	if err := os.MkdirAll(filepath.Join(hostDir, "srv"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := sim.WriteImage(filepath.Join(hostDir, "srv/fw.bin"), "MT_0000000222", "20.36.1012"); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "host.yaml")
	if err := os.WriteFile(spec, []byte("version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware: {version: \"20.36.1012\", image: /srv/fw.bin}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runJSON(t, "", 3, "--sim", hostDir, "apply", "--yes", "-f", spec)
	for _, c := range []struct {
		reboot []string
		code   int
		want   string
	}{
		{nil, 3, "firmware_image[0000:3b:00.0] image=20.36.1012 staged at "},
		{[]string{"--keep-firmware"}, 1, "firmware_image[0000:3b:00.0] image=20.36.1012 did not take"},
		{[]string{}, 0, "current now"},
	} {
		if c.reboot != nil {
			runJSON(t, "", 0, append([]string{"sim", "reboot", hostDir}, c.reboot...)...)
		}
		if out := runJSON(t, "", c.code, "--sim", hostDir, "status"); !strings.Contains(out, c.want) {
			t.Errorf("status: output lacks %q:\n%s", c.want, out)
		}
	}
}
