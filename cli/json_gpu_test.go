package cli_test

import (
	"path/filepath"
	"testing"
)

// TestJSONGPUPending: the GPU driver parameter pending after an apply of
// examples/gpu-direct.yaml is a plan and apply document the output schema
// takes, its activation by driver-reload.
func TestJSONGPUPending(t *testing.T) {
	s := loadSchemas(t)
	dir := copyHost(t, "examples/hosts/gpu-switch", filepath.Join(t.TempDir(), "gpu"))
	spec := "../examples/gpu-direct.yaml"
	s.check(t, "apply", "apply", runJSON(t, "", 3, "--sim", dir, "apply", "--yes", "--allow-firmware", "-o", "json", "-f", spec))
	p := s.check(t, "plan, pending", "plan", runJSON(t, "", 3, "--sim", dir, "plan", "-o", "json", "-f", spec))
	found := false
	for _, it := range p["pending"].([]any) {
		it := it.(map[string]any)
		if it["address"] == "gpu_param[NVreg_EnablePCIERelaxedOrderingMode]" {
			found = true
			if by := it["activation"].(map[string]any)["by"]; by != "driver-reload" {
				t.Errorf("activation by %v", by)
			}
		}
	}
	if !found {
		t.Errorf("no pending driver parameter: %v", p["pending"])
	}
}
