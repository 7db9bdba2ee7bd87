package gpudriver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

const (
	conf = "etc/modprobe.d/rdmaform-nvidia.conf"
	load = "etc/modules-load.d/rdmaform-gpu.conf"
)

func spec(t *testing.T, body string) string {
	t.Helper()
	return clitest.WriteSpec(t, "version: 1\ngpu:\n"+body)
}

func has(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// relaxedNICs is a node whose NICs' firmware has PCI_WR_ORDERING
// force_relax(1), current and next boot: the relaxed-ordering check
// agrees with a driver that turns it on.
func relaxedNICs(st *sim.State) {
	for _, a := range st.Firmware {
		for i := range a.Params {
			if a.Params[i].Name == "PCI_WR_ORDERING" {
				a.Params[i].Current, a.Params[i].Next = 1, 1
			}
		}
	}
}

func exists(dir, f string) bool {
	_, err := os.Stat(filepath.Join(dir, f))
	return err == nil
}

// TestDriverParamsScenario: on the gpu-switch node, driver_params write
// rdmaform's modprobe.d file and nvidia-peermem loads the module and
// lists it for the boot; the parameter the running driver does not have
// is pending after apply (exit 3, no change left), until the driver
// loads again: a reload (modprobe -r, modprobe) or a reboot make
// /proc/driver/nvidia/params show it, and the plan is empty.
func TestDriverParamsScenario(t *testing.T) {
	dir := simtest.Dir(t, "gpu-switch", relaxedNICs)
	s := spec(t, "  peer_memory: nvidia-peermem\n  driver_params:\n    - {name: NVreg_EnablePCIERelaxedOrderingMode, value: 1}\n    - {name: NVreg_ResmanDebugLevel, value: -1}\n")
	out := clitest.MustRun(t, 2, "--sim", dir, "plan", "-f", s)
	has(t, out, "+ gpu_driver[modprobe.d]", "NVreg_EnablePCIERelaxedOrderingMode: 1", "+ gpu_driver[nvidia_peermem]", "loaded: true", "load_at_boot: true")
	out = clitest.MustRun(t, 3, "--sim", dir, "apply", "--yes", "-f", s)
	has(t, out, "gpu_param[NVreg_EnablePCIERelaxedOrderingMode] value staged for next boot (current 0, next 1), after driver-reload")
	if strings.Contains(out, "gpu_param[NVreg_ResmanDebugLevel]") {
		t.Errorf("-1 is the driver's default 4294967295, yet it is pending:\n%s", out)
	}
	b, err := os.ReadFile(filepath.Join(dir, conf))
	if err != nil || !strings.HasSuffix(string(b), "\noptions nvidia NVreg_EnablePCIERelaxedOrderingMode=1 NVreg_ResmanDebugLevel=-1\n") {
		t.Fatalf("%s: %q, %v", conf, b, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, load)); err != nil || !strings.HasSuffix(string(b), "\nnvidia_peermem\n") {
		t.Fatalf("%s: %q, %v", load, b, err)
	}
	if !exists(dir, "sys/kernel/mm/memory_peers/nv_mem/version") {
		t.Fatal("nvidia_peermem is not registered after apply")
	}
	out = clitest.MustRun(t, 3, "--sim", dir, "plan", "-f", s)
	has(t, out, "Plan: 0 to add, 0 to change, 0 to remove.")
	out = clitest.MustRun(t, 3, "--sim", dir, "audit", "-f", s)
	has(t, out, "gpu_param[NVreg_EnablePCIERelaxedOrderingMode]")

	// A driver reload (nothing uses the GPUs on the simulator) brings it.
	clitest.MustRun(t, 0, "sim", "tool", dir, "--", "modprobe", "-r", "nvidia_peermem", "nvidia")
	clitest.MustRun(t, 0, "sim", "tool", dir, "--", "modprobe", "nvidia_peermem")
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", s)

	// So does a reboot: modprobe.d for the driver, modules-load.d for
	// nvidia_peermem.
	clitest.MustRun(t, 0, "sim", "reboot", dir)
	if st := simtest.State(t, dir); st.NVIDIA.Params["EnablePCIERelaxedOrderingMode"] != 1 || !st.ModuleLoaded("nvidia_peermem") {
		t.Fatalf("after the reboot: params %v, modules %v", st.NVIDIA.Params, st.Modules)
	}
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", s)
	out = clitest.MustRun(t, 0, "--sim", dir, "show")
	has(t, out, "gpu:\n  peer_memory: nvidia-peermem\n  driver_params:\n    - name: NVreg_EnablePCIERelaxedOrderingMode\n      value: 1\n")
	clitest.MustRun(t, 0, "--sim", dir, "apply", "--yes", "-f", s)
	if exists(dir, "var/lib/rdmaform/staged-nvidia.json") {
		t.Error("the staged ledger outlived the value's activation")
	}
	clitest.MustRun(t, 0, "--sim", dir, "audit", "-f", s)

	// Drift: the file edited behind rdmaform's back is a failed audit
	// check naming it (exit 2), and apply mends it.
	if err := os.WriteFile(filepath.Join(dir, conf), []byte("options nvidia NVreg_EnablePCIERelaxedOrderingMode=0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = clitest.MustRun(t, 2, "--sim", dir, "audit", "-f", s)
	has(t, out, "FAIL    gpu_driver[modprobe.d] drift: update (NVreg_EnablePCIERelaxedOrderingMode: 0 -> 1")
	clitest.MustRun(t, 0, "--sim", dir, "apply", "--yes", "-f", s)
	clitest.MustRun(t, 0, "--sim", dir, "audit", "-f", s)
}

// TestDriverParamDidNotTake: an initramfs with an older copy of
// modprobe.d loads the driver at boot without the value: after the
// reboot the plan names an activation failure (exit 1) at the spec's
// line and saying why, and apply never writes it again.
func TestDriverParamDidNotTake(t *testing.T) {
	dir := simtest.Dir(t, "gpu-switch", func(st *sim.State) {
		relaxedNICs(st)
		st.NVIDIA.StaleInitramfs = map[string]uint32{"EnableMSI": 1}
	})
	s := spec(t, "  driver_params:\n    - {name: NVreg_EnablePCIERelaxedOrderingMode, value: 1}\n")
	clitest.MustRun(t, 3, "--sim", dir, "apply", "--yes", "-f", s)
	clitest.MustRun(t, 0, "sim", "reboot", dir)
	out := clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", s)
	has(t, out, ":4:7: error: $.gpu.driver_params[0]: driver parameter NVreg_EnablePCIERelaxedOrderingMode=1 did not take",
		"/proc/driver/nvidia/params shows 0", "update-initramfs -u", "rdmaform will not write it again")
	if strings.Contains(out, "staged for next boot") {
		t.Errorf("a failed activation is still reported pending:\n%s", out)
	}
	out = clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "-f", s)
	has(t, out, "did not take")
	// A driver reload reads the real modprobe.d and brings it.
	clitest.MustRun(t, 0, "sim", "tool", dir, "--", "modprobe", "-r", "nvidia")
	clitest.MustRun(t, 0, "sim", "tool", dir, "--", "modprobe", "nvidia")
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", s)
}

// TestDMABuf: dma-buf needs the open kernel module: the proprietary one
// is refused, naming the file that told it; with the open one it needs
// nothing, and rdmaform's file that loaded nvidia_peermem goes.
func TestDMABuf(t *testing.T) {
	dir := simtest.Dir(t, "gpu-grace", func(st *sim.State) { st.NVIDIA.Open = false })
	s := spec(t, "  peer_memory: dma-buf\n")
	out := clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", s)
	has(t, out, ":3:16: error: $.gpu.peer_memory: dma-buf needs NVIDIA's open kernel module, and this driver (570.133.20) is the proprietary one: /proc/driver/nvidia/version does not say \"Open Kernel Module\"")

	dir = simtest.Dir(t, "gpu-grace", nil)
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", s)
	clitest.Converge(t, dir, spec(t, "  peer_memory: nvidia-peermem\n"))
	out = clitest.MustRun(t, 2, "--sim", dir, "plan", "-f", s)
	has(t, out, "- gpu_driver[nvidia_peermem]", "load_at_boot: true")
	clitest.MustRun(t, 0, "--sim", dir, "apply", "--yes", "-f", s)
	if exists(dir, load) {
		t.Errorf("%s is still there with dma-buf", load)
	}
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", s)
}

// TestPeermemNotRegistered: nvidia_peermem loaded without a peer-memory
// client registered (an ib_core without MLNX_OFED's peer-memory API) is
// an error naming the file that is missing.
func TestPeermemNotRegistered(t *testing.T) {
	dir := simtest.Dir(t, "gpu-switch", nil)
	s := spec(t, "  peer_memory: nvidia-peermem\n")
	clitest.Converge(t, dir, s)
	if err := os.Remove(filepath.Join(dir, "sys/kernel/mm/memory_peers/nv_mem/version")); err != nil {
		t.Fatal(err)
	}
	out := clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", s)
	has(t, out, "$.gpu.peer_memory: nvidia_peermem is loaded, but the RDMA core lists no peer-memory client nv_mem (no /sys/kernel/mm/memory_peers/nv_mem/version)")
}

// TestDriverParamElsewhere: another modprobe.d file that sets a managed
// parameter to another value is named; the same value is fine.
func TestDriverParamElsewhere(t *testing.T) {
	dir := simtest.Dir(t, "gpu-switch", nil)
	site := filepath.Join(dir, "etc/modprobe.d/nvidia-site.conf")
	if err := os.MkdirAll(filepath.Dir(site), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(site, []byte("options nvidia NVreg_EnablePCIERelaxedOrderingMode=0 NVreg_EnableMSI=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := spec(t, "  driver_params:\n    - {name: NVreg_EnableMSI, value: 1}\n    - {name: NVreg_EnablePCIERelaxedOrderingMode, value: 0x1}\n")
	out := clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", s)
	has(t, out, ":5:7: error: $.gpu.driver_params[1]: /etc/modprobe.d/nvidia-site.conf sets NVreg_EnablePCIERelaxedOrderingMode=0")
	if strings.Contains(out, "driver_params[0]") {
		t.Errorf("the same value elsewhere is an error:\n%s", out)
	}
	if exists(dir, conf) {
		t.Error("a refused plan wrote the file")
	}
}

// TestDriverRollback: an unconfirmed apply puts both files back as they
// were (an edited modprobe.d file of rdmaform's, no modules-load.d file)
// and unloads the nvidia_peermem it loaded.
func TestDriverRollback(t *testing.T) {
	dir := simtest.Dir(t, "gpu-switch", nil)
	old := "# an older rdmaform's file\noptions nvidia NVreg_EnableResizableBar=1\n"
	if err := os.MkdirAll(filepath.Join(dir, "etc/modprobe.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, conf), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	s := spec(t, "  peer_memory: nvidia-peermem\n  driver_params:\n    - {name: NVreg_GrdmaPciTopoCheckOverride, value: 1}\n")
	out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "--allow-firmware", "--confirm-timeout", "1s", "-f", s)
	has(t, out, "Reverted")
	if b, err := os.ReadFile(filepath.Join(dir, conf)); err != nil || string(b) != old {
		t.Errorf("%s after the rollback: %q, %v", conf, b, err)
	}
	if exists(dir, load) {
		t.Errorf("%s outlived the rollback", load)
	}
	if simtest.State(t, dir).ModuleLoaded("nvidia_peermem") {
		t.Error("nvidia_peermem is still loaded after the rollback")
	}
}

// TestActivateReboots: rdmaform activate takes a pending driver
// parameter to a reboot (it never reloads the GPU driver itself), and
// after it the value is there.
func TestActivateReboots(t *testing.T) {
	dir := simtest.Dir(t, "gpu-switch", relaxedNICs)
	s := spec(t, "  driver_params:\n    - {name: NVreg_EnablePCIERelaxedOrderingMode, value: 1}\n")
	clitest.MustRun(t, 3, "--sim", dir, "apply", "--yes", "-f", s)
	out := clitest.MustRun(t, 0, "--sim", dir, "activate", "--yes", "-f", s)
	has(t, out, "A reboot activates:", "gpu_param[NVreg_EnablePCIERelaxedOrderingMode]", "Reboot started.")
	if st := simtest.State(t, dir); st.Boot != 1 || st.NVIDIA.Params["EnablePCIERelaxedOrderingMode"] != 1 {
		t.Fatalf("after activate: boot %d, params %v", st.Boot, st.NVIDIA.Params)
	}
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", s)
}

// TestDriverParamsRemoved: driver_params: [] removes rdmaform's
// modprobe.d file, and the staged ledger entry of a value no longer asked
// for goes with the next apply.
func TestDriverParamsRemoved(t *testing.T) {
	dir := simtest.Dir(t, "gpu-switch", nil)
	clitest.MustRun(t, 3, "--sim", dir, "apply", "--yes", "-f", spec(t, "  driver_params:\n    - {name: NVreg_GrdmaPciTopoCheckOverride, value: 1}\n"))
	if !exists(dir, "var/lib/rdmaform/staged-nvidia.json") {
		t.Fatal("no ledger entry for the pending value")
	}
	none := spec(t, "  driver_params: []\n")
	out := clitest.MustRun(t, 2, "--sim", dir, "plan", "-f", none)
	has(t, out, "- gpu_driver[modprobe.d]", "NVreg_GrdmaPciTopoCheckOverride: 1 -> (none)")
	clitest.MustRun(t, 0, "--sim", dir, "apply", "--yes", "-f", none)
	if exists(dir, conf) || exists(dir, "var/lib/rdmaform/staged-nvidia.json") {
		t.Errorf("after driver_params: [], file %v, ledger %v", exists(dir, conf), exists(dir, "var/lib/rdmaform/staged-nvidia.json"))
	}
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", none)
}
