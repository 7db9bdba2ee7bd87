package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// TestStatusDriverParams: status, without a spec, lists the NVIDIA
// driver parameters apply wrote for the driver's next load, from their
// ledger, in text and JSON (valid against the output schema): waiting
// (exit 3) in the boot that wrote them; after a reboot that brought
// them, took (exit 0); after a reboot whose initramfs loaded the driver
// with an older modprobe.d, an activation failure naming the parameter
// and what to do (exit 1).
func TestStatusDriverParams(t *testing.T) {
	s := loadSchemas(t)
	spec := filepath.Join(t.TempDir(), "gpu.yaml")
	if err := os.WriteFile(spec, []byte("version: 1\ngpu:\n  driver_params:\n    - {name: NVreg_EnablePCIERelaxedOrderingMode, value: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	newHost := func(stale bool) string {
		return simtest.Dir(t, "gpu-switch", func(st *sim.State) {
			// The NICs' relaxed ordering agrees with the driver's.
			for _, a := range st.Firmware {
				for i := range a.Params {
					if a.Params[i].Name == "PCI_WR_ORDERING" {
						a.Params[i].Current, a.Params[i].Next = 1, 1
					}
				}
			}
			if stale {
				st.NVIDIA.StaleInitramfs = map[string]uint32{"EnableMSI": 1}
			}
		})
	}
	params := func(doc map[string]any) map[string]string {
		out := map[string]string{}
		list, _ := doc["driver_params"].([]any)
		for _, x := range list {
			m := x.(map[string]any)
			out[m["param"].(string)] = m["state"].(string) + " " + m["current"].(string)
		}
		return out
	}

	h := newHost(false)
	runJSON(t, "", 0, "--sim", h, "status", "-o", "json")
	runJSON(t, "", 3, "--sim", h, "apply", "--yes", "-f", spec)
	doc := s.check(t, "status, written", "status", runJSON(t, "", 3, "--sim", h, "status", "-o", "json"))
	if got := params(doc); len(got) != 1 || got["NVreg_EnablePCIERelaxedOrderingMode"] != "pending 0" || doc["reboot_required"] != true {
		t.Errorf("status after apply: driver_params %v, reboot_required %v", got, doc["reboot_required"])
	}
	text := runJSON(t, "", 3, "--sim", h, "status")
	if !strings.Contains(text, "Staged NVIDIA driver parameters (/var/lib/rdmaform/staged-nvidia.json):") ||
		!strings.Contains(text, "NVreg_EnablePCIERelaxedOrderingMode=1: /etc/modprobe.d/") || !strings.Contains(text, "in this boot: the running driver has 0; waits for its next load (a reboot)") {
		t.Errorf("status text after apply:\n%s", text)
	}
	runJSON(t, "", 0, "sim", "reboot", h)
	doc = s.check(t, "status, took", "status", runJSON(t, "", 0, "--sim", h, "status", "-o", "json"))
	if got := params(doc); got["NVreg_EnablePCIERelaxedOrderingMode"] != "took 1" || doc["reboot_required"] != false {
		t.Errorf("status after the reboot: driver_params %v, reboot_required %v", got, doc["reboot_required"])
	}
	if text := runJSON(t, "", 0, "--sim", h, "status"); !strings.Contains(text, "the running driver has it; the next apply drops the entry") || !strings.Contains(text, "Nothing waits for a reboot.") {
		t.Errorf("status text after the reboot:\n%s", text)
	}
	// The next apply drops it: nothing left to list.
	runJSON(t, "", 0, "--sim", h, "apply", "--yes", "-f", spec)
	if doc = s.check(t, "status, settled", "status", runJSON(t, "", 0, "--sim", h, "status", "-o", "json")); doc["driver_params"] != nil {
		t.Errorf("status after the ledger settled: %v", doc["driver_params"])
	}

	h2 := newHost(true)
	runJSON(t, "", 3, "--sim", h2, "apply", "--yes", "-f", spec)
	runJSON(t, "", 0, "sim", "reboot", h2)
	doc = s.check(t, "status, failed", "status", runJSON(t, "", 1, "--sim", h2, "status", "-o", "json"))
	if got := params(doc); got["NVreg_EnablePCIERelaxedOrderingMode"] != "failed 0" {
		t.Errorf("status after a reboot that did not bring it: driver_params %v", got)
	}
	if text := runJSON(t, "", 1, "--sim", h2, "status"); !strings.Contains(text, "! driver parameter NVreg_EnablePCIERelaxedOrderingMode=1 did not take") || !strings.Contains(text, "update-initramfs -u") {
		t.Errorf("status text after a reboot that did not bring it:\n%s", text)
	}
}
