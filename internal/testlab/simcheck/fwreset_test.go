package simcheck

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/need"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

const realReset = "../../../testdata/real/mstfwreset"

// TestResetEmulatorMatchesReal: the simulator's mstfwreset prints, byte
// for byte, every case of testdata/real/mstfwreset (the captures of
// Debian's mstfwreset 4.21 and the src-* cases mstflint's source prints),
// with the same exit status, on a simulated host set up as each case's
// device was: no adapter at the captured address (a virtual machine, as
// the capture machine is, for the reset), or a ConnectX-6 at
// 0000:3b:00.0 whose MFRL register reports the case's levels (and VFs the
// reset cannot remove for src-reset-vfs).
func TestResetEmulatorMatchesReal(t *testing.T) {
	outs, _ := filepath.Glob(filepath.Join(realReset, "*.stdout"))
	if len(outs) < 8 {
		t.Fatalf("only %d cases in %s", len(outs), realReset)
	}
	setups := map[string]struct {
		levels     []int
		sync       bool
		fault      string
		vfs        bool
		hypervisor string
	}{
		// The capture machine is a KVM guest: the tool refuses the reset
		// before it looks for the device.
		"open-device-reset":   {hypervisor: "KVM"},
		"src-query-l34":       {levels: []int{3, 4}},
		"src-query-l034-sync": {levels: []int{0, 3, 4}, sync: true},
		"src-query-no-level":  {fault: sim.ResetPowerCycle},
		"src-reset-l3":        {levels: []int{3, 4}},
		"src-reset-vfs":       {levels: []int{3, 4}, fault: sim.ResetVFs, vfs: true},
	}
	for _, f := range outs {
		name := strings.TrimSuffix(filepath.Base(f), ".stdout")
		t.Run(name, func(t *testing.T) {
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
				st.Hypervisor = setup.hypervisor
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

// TestRealResetRefusedInVM runs the real mstfwreset's reset of the
// capture (open-device-reset) on this machine when it is a virtual
// machine by the tool's own test (lscpu prints "Hypervisor vendor") and
// has no device at the address: the tool refuses before it opens any
// device, so nothing is reset. Its output and exit status are the
// capture's, byte for byte, and so are the simulated virtual machine's
// (TestResetEmulatorMatchesReal): the capture is checked against the
// tool, not only against the emulator. On bare metal it skips (the tool
// would go on to the device), or fails under RDMAFORM_REQUIRE_LAB=1.
func TestRealResetRefusedInVM(t *testing.T) {
	tool := need.Tool(t, "mstfwreset", "apt-get install mstflint")
	lscpu := need.Tool(t, "lscpu", "apt-get install util-linux")
	need.Root(t, "mstfwreset opens the device as root")
	var argv []string
	b, err := os.ReadFile(filepath.Join(realReset, "open-device-reset.cmd"))
	if err == nil {
		err = json.Unmarshal(b, &argv)
	}
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(lscpu).Output()
	if err != nil {
		t.Fatalf("lscpu: %v", err)
	}
	if !strings.Contains(string(out), "Hypervisor vendor") {
		need.Skip(t, "this machine is not a virtual machine (lscpu names no hypervisor): the real %s would go on to the device", strings.Join(argv, " "))
	}
	if _, err := os.Stat("/sys/bus/pci/devices/" + argv[2]); err == nil {
		need.Skip(t, "this machine has a device at %s", argv[2])
	}
	cmd := exec.Command(tool, argv[1:]...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(realReset, "open-device-reset.stdout"))
	if diff := cmp.Diff(string(want), stdout.String()); diff != "" || stderr.Len() > 0 {
		t.Errorf("real %s: stdout (-capture +now):\n%s\nstderr: %q", strings.Join(argv, " "), diff, stderr.String())
	}
	if exit, _ := os.ReadFile(filepath.Join(realReset, "open-device-reset.exit")); strings.TrimSpace(string(exit)) != strconv.Itoa(code) {
		t.Errorf("real exit %d, capture %s", code, exit)
	}
}
