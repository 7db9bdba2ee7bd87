package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFactsGPUs: facts -o json lists the GPU nodes' GPUs and each
// device's relation to every GPU with the bridges between them, checked
// against the output schema; show writes the nearest relation in each
// device's comment. On the switched node each NIC shares its switch
// with one GPU (PIX), the other GPUs of its NUMA node are NODE and those
// of the other SYS; on the Grace node the GPU sits on a host bridge of its
// own PCI domain (NODE).
func TestFactsGPUs(t *testing.T) {
	s := loadSchemas(t)
	dir := t.TempDir()
	sw := filepath.Join(dir, "switch")
	runJSON(t, "", 0, "sim", "new", sw, "--profile", "gpu-switch")
	doc := s.check(t, "facts, gpu-switch", "facts", runJSON(t, "", 0, "--sim", sw, "facts", "-o", "json"))
	gpus := doc["gpus"].([]any)
	if len(gpus) != 8 {
		t.Fatalf("%d GPUs, want 8: %v", len(gpus), gpus)
	}
	if diff := cmp.Diff(map[string]any{"pci": "0000:19:00.0", "vendor": "0x10de", "numa_node": 0.0}, gpus[0]); diff != "" {
		t.Errorf("GPU 0 (-want +got):\n%s", diff)
	}
	if n := gpus[7].(map[string]any)["numa_node"]; n != 1.0 {
		t.Errorf("GPU 7: NUMA node %v, want 1", n)
	}
	var mlx50 map[string]any
	for _, d := range doc["devices"].([]any) {
		if d.(map[string]any)["rdma"] == "mlx5_0" {
			mlx50 = d.(map[string]any)
		}
	}
	if diff := cmp.Diff([]any{"0000:17:00.0", "0000:16:00.0", "0000:15:01.0"}, mlx50["bridges"]); diff != "" {
		t.Errorf("mlx5_0's bridges (-want +got):\n%s", diff)
	}
	aff := mlx50["gpu_affinity"].([]any)
	if len(aff) != 8 {
		t.Fatalf("mlx5_0: %d relations, want 8", len(aff))
	}
	want := map[string]any{"gpu": "0000:19:00.0", "relation": "PIX", "bridges": []any{"0000:17:00.0", "0000:16:00.0", "0000:17:01.0"}}
	if diff := cmp.Diff(want, aff[0]); diff != "" {
		t.Errorf("mlx5_0 and GPU 0 (-want +got):\n%s", diff)
	}
	var rel []string
	for _, a := range aff {
		rel = append(rel, a.(map[string]any)["relation"].(string))
	}
	if diff := cmp.Diff([]string{"PIX", "NODE", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS"}, rel); diff != "" {
		t.Errorf("mlx5_0's relations (-want +got):\n%s", diff)
	}
	code, out, errs := runCLI(t, "--sim", sw, "show")
	if code != 0 || !strings.Contains(out, `- pci: "0000:18:00.0" # mlx5_0,`) || !strings.Contains(out, "GPU 0000:19:00.0 PIX\n") {
		t.Errorf("show: exit %d, no relation in mlx5_0's comment:\n%s%s", code, out, errs)
	}

	grace := filepath.Join(dir, "grace")
	runJSON(t, "", 0, "sim", "new", grace, "--profile", "gpu-grace")
	doc = s.check(t, "facts, gpu-grace", "facts", runJSON(t, "", 0, "--sim", grace, "facts", "-o", "json"))
	if diff := cmp.Diff([]any{map[string]any{"pci": "0009:01:00.0", "vendor": "0x10de", "numa_node": 0.0}}, doc["gpus"]); diff != "" {
		t.Errorf("Grace GPUs (-want +got):\n%s", diff)
	}
	for _, d := range doc["devices"].([]any) {
		want := []any{map[string]any{"gpu": "0009:01:00.0", "relation": "NODE", "bridges": []any{"0000:00:00.0", "0009:00:00.0"}}}
		if diff := cmp.Diff(want, d.(map[string]any)["gpu_affinity"]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", d.(map[string]any)["rdma"], diff)
		}
	}
	if code, out, _ := runCLI(t, "--sim", grace, "facts"); code != 0 || !strings.Contains(out, "  GPU:         0009:01:00.0 NODE\n") {
		t.Errorf("facts text: exit %d\n%s", code, out)
	}
}
