package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/internal/testlab/fstree"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// TestRollbackGPUFiles: an apply of the GPU driver side (nvidia_peermem
// loaded and listed in modules-load.d, the driver's modprobe.d file with
// its NVreg_ parameter, and the staged ledger that records it) is refused
// in confirm mode without --allow-firmware, the parameter being a
// next-boot change, naming it; with it, the apply, killed
// while it waits for its confirmation, is rolled back: /etc is file for
// file what it was, the staged ledger is gone with the value it
// recorded, and nvidia_peermem is unloaded again. Then apply (the
// parameter waits for the driver's next load: exit 3), a reboot, and
// plan is empty.
func TestRollbackGPUFiles(t *testing.T) {
	l := newRBLab(t)
	h := simtest.Dir(t, "gpu-switch", func(st *sim.State) {
		for _, a := range st.Firmware {
			for i := range a.Params {
				if a.Params[i].Name == "PCI_WR_ORDERING" {
					a.Params[i].Current, a.Params[i].Next = 1, 1
				}
			}
		}
	})
	if err := os.MkdirAll(filepath.Join(h, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := l.spec("gpu.yaml", "version: 1\ngpu:\n  peer_memory: nvidia-peermem\n  driver_params:\n    - {name: NVreg_EnablePCIERelaxedOrderingMode, value: 1}\n")
	files := func() map[string]string {
		m := map[string]string{}
		for k, v := range fstree.Snapshot(t, filepath.Join(h, "etc")) {
			if len(v) < 4 || v[:4] != "dir " {
				m[k] = v
			}
		}
		return m
	}
	ledger := filepath.Join(h, "var/lib/rdmaform/staged-nvidia.json")
	peermem := func() bool {
		s, err := sim.Open(h)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range s.State().Modules {
			if m == "nvidia_peermem" {
				return true
			}
		}
		return false
	}
	before, loaded := files(), peermem()
	if loaded {
		t.Fatal("the gpu-switch profile has nvidia_peermem loaded already: the test proves nothing")
	}
	if out := l.must(1, "--sim", h, "apply", "--yes", "--confirm-timeout", "10m", "-f", spec); !strings.Contains(out, "gpu_driver[modprobe.d] takes effect at the next boot") || !strings.Contains(out, "--allow-firmware") {
		t.Errorf("confirm mode without --allow-firmware:\n%s", out)
	}
	if cmp.Diff(before, files()) != "" || peermem() {
		t.Fatal("the refused apply changed the host")
	}
	cmd, _, _ := startWaiting(t, l.bin, l.env, "--sim", h, "apply", "--yes", "--allow-firmware", "--confirm-timeout", "10m", "-f", spec)
	if cmp.Diff(before, files()) == "" || !peermem() || !exists(ledger) {
		t.Fatalf("the apply wrote no file, did not load nvidia_peermem (%v) or wrote no ledger (%v)", peermem(), exists(ledger))
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	l.must(0, "--sim", h, "rollback")
	if diff := cmp.Diff(before, files()); diff != "" {
		t.Errorf("/etc after the rollback (-before +after):\n%s", diff)
	}
	if exists(ledger) {
		b, _ := os.ReadFile(ledger)
		t.Errorf("the staged ledger outlives the rollback:\n%s", b)
	}
	if peermem() {
		t.Error("nvidia_peermem is still loaded after the rollback")
	}
	l.must(3, "--sim", h, "apply", "--yes", "-f", spec)
	l.must(0, "sim", "reboot", h)
	l.must(0, "--sim", h, "plan", "-f", spec)
}
