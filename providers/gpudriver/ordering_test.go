package gpudriver_test

import (
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

func nicFW(pci, params string) string {
	return "  - pci: \"" + pci + "\"\n    firmware:\n      params: {" + params + "}\n"
}

const roOn = "gpu:\n  driver_params:\n    - {name: NVreg_EnablePCIERelaxedOrderingMode, value: 1}\n"

// TestRelaxedOrderingSpecDisagrees: the spec sets the GPU driver's
// relaxed ordering off and a NIC's PCI_WR_ORDERING force_relax: a plan
// error at the driver parameter naming the NIC, nothing changed.
func TestRelaxedOrderingSpecDisagrees(t *testing.T) {
	dir := simtest.Dir(t, "gpu-grace", nil)
	s := clitest.WriteSpec(t, "version: 1\ndevices:\n"+nicFW("0000:01:00.0", "PCI_WR_ORDERING: force_relax")+nicFW("0000:01:00.1", "PCI_WR_ORDERING: force_relax")+
		"gpu:\n  driver_params:\n    - {name: NVreg_EnablePCIERelaxedOrderingMode, value: 0}\n")
	out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "-f", s)
	has(t, out, ":11:7: error: $.gpu.driver_params[0]: relaxed ordering disagrees: the GPU driver's NVreg_EnablePCIERelaxedOrderingMode is off (the spec), but 0000:01:00.0 PCI_WR_ORDERING=force_relax (the spec), 0000:01:00.1 PCI_WR_ORDERING=force_relax (the spec)")
	if exists(dir, conf) {
		t.Error("a refused plan wrote the driver's file")
	}
}

// TestRelaxedOrderingFirmwareDisagrees: the spec turns the GPU driver's
// relaxed ordering on and says nothing of the NICs, whose firmware runs
// per_mkey: the error names the firmware's value; once the firmware has
// force_relax staged (as an apply of it leaves it) the plan agrees.
func TestRelaxedOrderingFirmwareDisagrees(t *testing.T) {
	dir := simtest.Dir(t, "gpu-grace", nil)
	s := clitest.WriteSpec(t, "version: 1\n"+roOn)
	out := clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", s)
	has(t, out, ":4:7: error: $.gpu.driver_params[0]: relaxed ordering disagrees: the GPU driver's NVreg_EnablePCIERelaxedOrderingMode is on (the spec), but 0000:01:00.0 PCI_WR_ORDERING=per_mkey(0) (the firmware)")
	both := clitest.WriteSpec(t, "version: 1\ndevices:\n"+nicFW("0000:01:00.0", "PCI_WR_ORDERING: force_relax")+nicFW("0000:01:00.1", "PCI_WR_ORDERING: force_relax")+roOn)
	clitest.MustRun(t, 2, "--sim", dir, "plan", "-f", both)
	clitest.MustRun(t, 3, "--sim", dir, "apply", "--yes", "--allow-firmware", "-f", both)
	// Staged, not current: the spec without the NICs agrees now.
	out = clitest.MustRun(t, 3, "--sim", dir, "plan", "-f", s)
	if strings.Contains(out, "relaxed ordering disagrees") {
		t.Errorf("the staged force_relax is not taken:\n%s", out)
	}
}

// TestRelaxedOrderingRunningDriver: the spec sets force_relax on a NIC
// and nothing for the driver, which runs with relaxed ordering off.
func TestRelaxedOrderingRunningDriver(t *testing.T) {
	dir := simtest.Dir(t, "gpu-grace", nil)
	s := clitest.WriteSpec(t, "version: 1\ndevices:\n"+nicFW("0000:01:00.0", "PCI_WR_ORDERING: force_relax")+"gpu:\n  peer_memory: dma-buf\n")
	out := clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", s)
	has(t, out, ":5:33: error: $.devices[0].firmware.params.PCI_WR_ORDERING: relaxed ordering disagrees: the GPU driver's NVreg_EnablePCIERelaxedOrderingMode is off (the running driver (/proc/driver/nvidia/params)), but 0000:01:00.0 PCI_WR_ORDERING=force_relax (the spec)")
	on := simtest.Dir(t, "gpu-grace", func(st *sim.State) { st.NVIDIA.Params = map[string]uint32{"EnablePCIERelaxedOrderingMode": 1} })
	out = clitest.MustRun(t, 1, "--sim", on, "plan", "-f", s)
	has(t, out, "0000:01:00.1 PCI_WR_ORDERING=per_mkey(0) (the firmware)")
	if strings.Contains(out, "0000:01:00.0 PCI_WR_ORDERING") {
		t.Errorf("the agreeing NIC is named:\n%s", out)
	}
}

// TestATSDisagrees: one NIC of the node with ATS on in the spec, the
// other off in its firmware: an error at the spec's ATS_ENABLED naming
// both.
func TestATSDisagrees(t *testing.T) {
	dir := simtest.Dir(t, "gpu-grace", nil)
	s := clitest.WriteSpec(t, "version: 1\ndevices:\n"+nicFW("0000:01:00.1", "ATS_ENABLED: true")+"gpu:\n  peer_memory: dma-buf\n")
	out := clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", s)
	has(t, out, ":5:29: error: $.devices[0].firmware.params.ATS_ENABLED: ATS disagrees between the NICs of this GPU node: 0000:01:00.1 ATS_ENABLED=true (the spec), 0000:01:00.0 ATS_ENABLED=False(0) (the firmware)")
	agree := clitest.WriteSpec(t, "version: 1\ndevices:\n"+nicFW("0000:01:00.0", "ATS_ENABLED: true")+nicFW("0000:01:00.1", "ATS_ENABLED: true")+"gpu:\n  peer_memory: dma-buf\n")
	clitest.MustRun(t, 2, "--sim", dir, "plan", "-f", agree)
}
