package simcheck

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

const realReset = "../../../testdata/real/mstfwreset"

// TestResetEmulatorMatchesReal: the simulator's mstfwreset prints, byte
// for byte, every case of testdata/real/mstfwreset (the captures of
// Debian's mstfwreset 4.21 and the src-* cases mstflint's source prints),
// with the same exit status, on a simulated host set up as each case's
// device was: no adapter at the captured address, or a ConnectX-6 at
// 0000:3b:00.0 whose MFRL register reports the case's levels (and VFs the
// reset cannot remove for src-reset-vfs).
func TestResetEmulatorMatchesReal(t *testing.T) {
	outs, _ := filepath.Glob(filepath.Join(realReset, "*.stdout"))
	if len(outs) < 8 {
		t.Fatalf("only %d cases in %s", len(outs), realReset)
	}
	setups := map[string]struct {
		levels []int
		sync   bool
		fault  string
		vfs    bool
	}{
		"src-query-l34":       {levels: []int{3, 4}},
		"src-query-l034-sync": {levels: []int{0, 3, 4}, sync: true},
		"src-query-no-level":  {fault: sim.ResetPowerCycle},
		"src-reset-l3":        {levels: []int{3, 4}},
		"src-reset-vfs":       {levels: []int{3, 4}, fault: sim.ResetVFs, vfs: true},
	}
	for _, f := range outs {
		name := strings.TrimSuffix(filepath.Base(f), ".stdout")
		t.Run(name, func(t *testing.T) {
			if name == "open-device-reset" {
				t.Skip("the capture machine is a virtual machine, which mstfwreset refuses to reset; the simulated host is none")
			}
			var argv []string
			b, err := os.ReadFile(filepath.Join(realReset, name+".cmd"))
			if err == nil {
				err = json.Unmarshal(b, &argv)
			}
			if err != nil {
				t.Fatal(err)
			}
			setup, ok := setups[name]
			if !ok && strings.HasPrefix(name, "src-") {
				t.Fatalf("no simulated setup for %s", name)
			}
			s, h := simtest.New(t, "cx6-vpi-ib", 0, func(st *sim.State) {
				st.Tools = append(st.Tools, "mstfwreset")
				for _, a := range st.Firmware {
					a.ResetLevels, a.ResetDriverSync = setup.levels, setup.sync
				}
			})
			if setup.fault != "" {
				if err := s.AddFault(sim.Fault{Reset: setup.fault}); err != nil {
					t.Fatal(err)
				}
			}
			if setup.vfs {
				enableVFs(t, s, h)
			}
			res, err := h.Runner.Run(context.Background(), host.Cmd{Args: argv})
			stdout, stderr, code := res.Stdout, res.Stderr, 0
			var ee *host.ExitError
			if errors.As(err, &ee) {
				stdout, stderr, code = ee.Stdout, ee.Stderr, ee.Code
			} else if err != nil {
				t.Fatal(err)
			}
			want := func(ext string) string {
				b, _ := os.ReadFile(filepath.Join(realReset, name+ext))
				return string(b)
			}
			if diff := cmp.Diff(want(".stdout"), string(stdout)); diff != "" {
				t.Errorf("stdout (-real +emulator):\n%s", diff)
			}
			if diff := cmp.Diff(want(".stderr"), string(stderr)); diff != "" {
				t.Errorf("stderr (-real +emulator):\n%s", diff)
			}
			if w, _ := strconv.Atoi(strings.TrimSpace(want(".exit"))); w != code {
				t.Errorf("exit %d, real %d", code, w)
			}
		})
	}
}

// enableVFs turns SR-IOV on in the card's firmware, reboots, and creates
// two VFs on its first function.
func enableVFs(t *testing.T, s *sim.Sim, h *host.Host) {
	t.Helper()
	ctx := context.Background()
	if _, err := h.Runner.Run(ctx, host.Cmd{Args: []string{"mlxconfig", "-d", "0000:3b:00.0", "-y", "set", "SRIOV_EN=1", "NUM_OF_VFS=4"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Reboot(); err != nil {
		t.Fatal(err)
	}
	if err := h.FS.WriteAttr("/sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs", []byte("2\n")); err != nil {
		t.Fatal(err)
	}
}
