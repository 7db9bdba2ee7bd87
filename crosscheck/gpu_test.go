package crosscheck

import (
	"strings"
	"testing"
)

func gpuNode(ro, wr, ats string) string {
	s := "version: 1\ndevices:\n  - match: {part_number: MCX75310AAS-NEAT}\n    firmware:\n      params: {PCI_WR_ORDERING: " + wr
	if ats != "" {
		s += ", ATS_ENABLED: " + ats
	}
	s += "}\ngpu:\n  peer_memory: dma-buf\n"
	if ro != "" {
		s += "  driver_params:\n    - {name: NVreg_EnablePCIERelaxedOrderingMode, value: " + ro + "}\n"
	}
	return s
}

func lintGPU(t *testing.T, files map[string]string, order ...string) []string {
	t.Helper()
	var out []string
	for _, f := range Lint(hosts(t, files, order...)) {
		out = append(out, f.String())
	}
	return out
}

func wantOne(t *testing.T, got []string, want string) {
	t.Helper()
	if len(got) != 1 || !strings.Contains(got[0], want) {
		t.Errorf("findings %q, want one with %q", got, want)
	}
}

// TestLintGPUAgree: GPU nodes that agree on all three, and a node
// without gpu: (not a GPU node) that sets per_mkey, give no finding.
func TestLintGPUAgree(t *testing.T) {
	got := lintGPU(t, map[string]string{
		"a.yaml": gpuNode("1", "force_relax", "false"),
		"b.yaml": gpuNode("1", "1", "0"),
		"c.yaml": "version: 1\ndevices:\n  - match: {part_number: MCX75310AAS-NEAT}\n    firmware:\n      params: {PCI_WR_ORDERING: per_mkey}\n",
	}, "a.yaml", "b.yaml", "c.yaml")
	if len(got) != 0 {
		t.Errorf("findings for agreeing nodes: %q", got)
	}
}

// TestLintGPUHostRelaxedOrdering: one spec with the driver's relaxed
// ordering on and its NICs' per_mkey: at the NIC's PCI_WR_ORDERING.
func TestLintGPUHostRelaxedOrdering(t *testing.T) {
	got := lintGPU(t, map[string]string{"a.yaml": gpuNode("1", "per_mkey", "")}, "a.yaml")
	wantOne(t, got, "a.yaml:5:33: error: $.devices[0].firmware.params.PCI_WR_ORDERING: relaxed ordering disagrees in this GPU node's spec: PCI_WR_ORDERING=per_mkey, but NVreg_EnablePCIERelaxedOrderingMode=1 at a.yaml:9:7")
}

// TestLintGPUHostATS: two NIC entries of one spec with different
// ATS_ENABLED.
func TestLintGPUHostATS(t *testing.T) {
	spec := "version: 1\ndevices:\n  - pci: \"0000:18:00.0\"\n    firmware:\n      params: {ATS_ENABLED: true}\n  - pci: \"0000:40:00.0\"\n    firmware:\n      params: {ATS_ENABLED: false}\ngpu:\n  peer_memory: dma-buf\n"
	got := lintGPU(t, map[string]string{"a.yaml": spec}, "a.yaml")
	wantOne(t, got, "a.yaml:8:29: error: $.devices[1].firmware.params.ATS_ENABLED: ATS disagrees between the NICs of this GPU node's spec: ATS_ENABLED=false, but ATS_ENABLED=true at a.yaml:5:29")
}

// TestLintGPUClassDriver: two GPU nodes of the class, one with the
// driver's relaxed ordering on, the other off (each agreeing with its own
// NICs): at the later node's parameter, naming the first.
func TestLintGPUClassDriver(t *testing.T) {
	got := lintGPU(t, map[string]string{"a.yaml": gpuNode("1", "force_relax", ""), "b.yaml": gpuNode("0", "force_relax", "")}, "a.yaml", "b.yaml")
	var drv []string
	for _, g := range got {
		if strings.Contains(g, "differs between the GPU nodes") {
			drv = append(drv, g)
		}
	}
	wantOne(t, drv, "b.yaml:9:7: error: $.gpu.driver_params[0]: the GPU driver's relaxed ordering differs between the GPU nodes given together: NVreg_EnablePCIERelaxedOrderingMode=0 here, but NVreg_EnablePCIERelaxedOrderingMode=1 on a at a.yaml:9:7")
}

// TestLintGPUClassWrOrdering: the NICs' PCI_WR_ORDERING differs between
// two GPU nodes that give no driver parameter.
func TestLintGPUClassWrOrdering(t *testing.T) {
	got := lintGPU(t, map[string]string{"a.yaml": gpuNode("", "force_relax", ""), "b.yaml": gpuNode("", "per_mkey", "")}, "a.yaml", "b.yaml")
	wantOne(t, got, "b.yaml:5:33: error: $.devices[0].firmware.params.PCI_WR_ORDERING: the NIC firmware's PCI_WR_ORDERING differs between the GPU nodes given together: PCI_WR_ORDERING=per_mkey here, but PCI_WR_ORDERING=force_relax on a at a.yaml:5:33")
}

// TestLintGPUClassATS: ATS_ENABLED differs between two GPU nodes.
func TestLintGPUClassATS(t *testing.T) {
	got := lintGPU(t, map[string]string{"a.yaml": gpuNode("", "per_mkey", "false"), "b.yaml": gpuNode("", "per_mkey", "true")}, "a.yaml", "b.yaml")
	wantOne(t, got, "the NIC firmware's ATS_ENABLED differs between the GPU nodes given together: ATS_ENABLED=true here, but ATS_ENABLED=false on a")
}
