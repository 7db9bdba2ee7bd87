package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatusKernelArgs: status lists the kernel arguments apply wrote
// for the next boot, from their ledger, in text and JSON (valid against
// the output schema): waiting for a reboot (exit 3) in the boot that
// wrote them; after a reboot that brought them, took (exit 0, and the
// reboot is no longer needed); after a reboot that did not (a cloud
// image's override), an activation failure naming the argument (exit 1).
// Without -f and with it.
func TestStatusKernelArgs(t *testing.T) {
	s := loadSchemas(t)
	dir := t.TempDir()
	spec := filepath.Join(dir, "k.yaml")
	if err := os.WriteFile(spec, []byte("version: 1\nkernel_args:\n  - {arg: iommu=pt}\n  - {arg: amd_iommu, absent: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	newHost := func(name string) string {
		h := filepath.Join(dir, name)
		runJSON(t, "", 0, "sim", "new", h, "--profile", "cx5-roce")
		return h
	}
	args := func(doc map[string]any) map[string]string {
		out := map[string]string{}
		list, _ := doc["kernel_args"].([]any)
		for _, x := range list {
			m := x.(map[string]any)
			out[m["arg"].(string)] = m["state"].(string)
		}
		return out
	}

	h := newHost("h")
	runJSON(t, "", 0, "--sim", h, "status", "-o", "json")
	runJSON(t, "", 3, "--sim", h, "apply", "--yes", "-f", spec)
	for _, f := range [][]string{nil, {"-f", spec}} {
		doc := s.check(t, "status, written", "status", runJSON(t, "", 3, append([]string{"--sim", h, "status", "-o", "json"}, f...)...))
		// amd_iommu is not on the simulated host's command line: nothing
		// to wait for.
		if got := args(doc); len(got) != 1 || got["iommu=pt"] != "pending" || doc["reboot_required"] != true {
			t.Errorf("status %v after apply: kernel_args %v, reboot_required %v", f, got, doc["reboot_required"])
		}
	}
	text := runJSON(t, "", 3, "--sim", h, "status")
	if !strings.Contains(text, "Staged kernel arguments (/var/lib/rdmaform/staged-cmdline.json):") ||
		!strings.Contains(text, "iommu=pt: /etc/default/grub.d/90-rdmaform.cfg written at") || !strings.Contains(text, "in this boot, update-grub ran: waits for a reboot") {
		t.Errorf("status text after apply:\n%s", text)
	}
	runJSON(t, "", 0, "sim", "reboot", h)
	doc := s.check(t, "status, took", "status", runJSON(t, "", 0, "--sim", h, "status", "-o", "json"))
	if got := args(doc); got["iommu=pt"] != "took" || doc["reboot_required"] != false {
		t.Errorf("status after the reboot: kernel_args %v, reboot_required %v", got, doc["reboot_required"])
	}
	if text := runJSON(t, "", 0, "--sim", h, "status"); !strings.Contains(text, "on /proc/cmdline now") || !strings.Contains(text, "Nothing waits for a reboot.") {
		t.Errorf("status text after the reboot:\n%s", text)
	}

	h2 := newHost("h2")
	over := filepath.Join(h2, "etc/default/grub.d/99-cloudimg-override.cfg")
	os.MkdirAll(filepath.Dir(over), 0o755)
	if err := os.WriteFile(over, []byte("GRUB_CMDLINE_LINUX=\"console=ttyS0\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runJSON(t, "", 3, "--sim", h2, "apply", "--yes", "-f", spec)
	runJSON(t, "", 0, "sim", "reboot", h2)
	doc = s.check(t, "status, failed", "status", runJSON(t, "", 1, "--sim", h2, "status", "-o", "json"))
	if got := args(doc); got["iommu=pt"] != "failed" {
		t.Errorf("status after a reboot that did not bring it: kernel_args %v", got)
	}
	if text := runJSON(t, "", 1, "--sim", h2, "status"); !strings.Contains(text, "! kernel argument iommu=pt did not take") {
		t.Errorf("status text after a reboot that did not bring it:\n%s", text)
	}
}
