package sim

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/fstree"
)

// resetHost is a cx6-vpi-ib host with mstfwreset, LINK_TYPE_P1 staged to
// ETH on the card (function .0), and runtime state on both functions:
// ib1 at MTU 4092 with an address, rdma_cm of mlx5_1 set, two VFs on .0.
func resetHost(t *testing.T) (*Sim, *host.Host) {
	t.Helper()
	st, err := NewState("cx6-vpi-ib", "node1", 0)
	if err != nil {
		t.Fatal(err)
	}
	st.Tools = append(st.Tools, "mstfwreset")
	s, err := Create(t.TempDir(), st)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.RunTool(ctx, []string{"mlxconfig", "-d", "0000:3b:00.0", "-y", "set", "SRIOV_EN=1", "NUM_OF_VFS=4"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Reboot(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RunTool(ctx, []string{"mlxconfig", "-d", "0000:3b:00.0", "-y", "set", "LINK_TYPE_P1=ETH"}); err != nil {
		t.Fatal(err)
	}
	h, err := s.Host()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.FS.WriteAttr("/sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if err := s.mutate(false, func(st *State) error {
		nd := st.Netdev("ib1")
		nd.MTU, nd.Addrs = 4092, []string{"192.0.2.11/24"}
		st.RdmaCM = map[string]RoceDefaults{"mlx5_1/1": {Mode: "IB/RoCE v1", Tos: 106}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return s, h
}

func runReset(t *testing.T, s *Sim, args ...string) (string, int) {
	t.Helper()
	res, err := s.RunTool(context.Background(), append([]string{"mstfwreset"}, args...))
	var ee *host.ExitError
	switch {
	case errors.As(err, &ee):
		return string(ee.Stdout), ee.Code
	case err != nil:
		t.Fatal(err)
	}
	return string(res.Stdout), 0
}

// TestFirmwareResetReloadsTheCard: a level 3 reset through one function
// makes Next Boot values current on both functions of the card (the port
// takes its new link layer), and the card re-registers as after a driver
// restart: its VFs are gone (the tool set sriov_numvfs to 0), each netdev
// is made anew (the driver's MTU, no addresses) and rdma_cm is the
// kernel's default; the boot_id stays.
func TestFirmwareResetReloadsTheCard(t *testing.T) {
	s, _ := resetHost(t)
	boot := s.State().BootID()
	out, code := runReset(t, s, "-d", "0000:3b:00.0", "reset", "-y", "--level", "3")
	if code != 0 || !strings.HasSuffix(out, "-I- FW was loaded successfully.\n") {
		t.Fatalf("reset exit %d:\n%s", code, out)
	}
	st := s.State()
	for _, a := range st.Firmware {
		if p := a.Param("LINK_TYPE_P1"); p.Current != 2 || p.Next != 2 {
			t.Errorf("%s LINK_TYPE_P1 current %d next %d, want 2 (ETH) in both", a.BDF, p.Current, p.Next)
		}
	}
	if ll := st.DeviceByPCI("0000:3b:00.0").Ports[0].LinkLayer; ll != "Ethernet" {
		t.Errorf("port of 0000:3b:00.0 runs %s after the reset, want Ethernet", ll)
	}
	if d := st.DeviceByPCI("0000:3b:00.0"); d.SRIOV != nil {
		t.Errorf("VFs after the reset: %+v", d.SRIOV)
	}
	nd := st.Netdev("ib1")
	if nd == nil || nd.MTU != 2044 || len(nd.Addrs) != 0 {
		t.Errorf("ib1 after the reset: %+v, want a new netdev (MTU 2044, no addresses)", nd)
	}
	if _, ok := st.RdmaCM["mlx5_1/1"]; ok {
		t.Errorf("rdma_cm of mlx5_1 kept across the reset: %+v", st.RdmaCM)
	}
	if st.BootID() != boot {
		t.Errorf("boot_id changed across a firmware reset")
	}
}

// TestFirmwareResetMinimalLevel: without --level the reset runs the
// lowest supported level (3 on the default adapter), which it names; an
// unsupported level is refused with the tool's message and changes
// nothing; without -y an answer other than y aborts.
func TestFirmwareResetMinimalLevel(t *testing.T) {
	s, _ := resetHost(t)
	out, code := runReset(t, s, "-d", "0000:3b:00.0", "reset", "--level", "0", "-y")
	if code != 1 || out != "\n-E- Reset-level '0' is not supported in the current state of this device.\n" {
		t.Errorf("level 0: exit %d %q", code, out)
	}
	out, code = runReset(t, s, "-d", "0000:3b:00.1", "reset")
	if code != 1 || !strings.HasSuffix(out, "Continue with reset?[y/N] -E- Aborted by user.\n") {
		t.Errorf("without -y: exit %d %q", code, out)
	}
	if p := s.State().Firmware[0].Param("LINK_TYPE_P1"); p.Current != 1 {
		t.Fatalf("a refused reset activated LINK_TYPE_P1")
	}
	out, code = runReset(t, s, "-d", "mlx5_1", "r", "-y")
	if code != 0 || !strings.HasPrefix(out, "\nMinimal reset level for device, mlx5_1:\n\n3: Driver restart and PCI reset\n") {
		t.Errorf("minimal: exit %d:\n%s", code, out)
	}
	if p := s.State().Firmware[0].Param("LINK_TYPE_P1"); p.Current != 2 {
		t.Errorf("a reset through mlx5_1 did not reload the card's firmware")
	}
}

// TestResetFaults: a power-cycle fault is firmware whose MFRL reports no
// level: query and reset fail with the tool's message and nothing
// changes. A vfs fault refuses the reset only while the card has VFs.
func TestResetFaults(t *testing.T) {
	t.Run("power-cycle", func(t *testing.T) {
		s, _ := resetHost(t)
		if err := s.AddFault(Fault{Reset: ResetPowerCycle, Match: "0000:3b:00.1"}); err != nil {
			t.Fatal(err)
		}
		if out, code := runReset(t, s, "-d", "0000:3b:00.0", "q"); code != 1 || out != "\n-E- There is no supported reset-level.\n" {
			t.Errorf("query: exit %d %q", code, out)
		}
		if out, code := runReset(t, s, "-d", "0000:3b:00.0", "reset", "-y", "--level", "3"); code != 1 || !strings.Contains(out, "Reset-level '3' is not supported") {
			t.Errorf("reset: exit %d %q", code, out)
		}
		st := s.State()
		if p := st.Firmware[0].Param("LINK_TYPE_P1"); p.Current != 1 || st.Netdev("ib1").MTU != 4092 {
			t.Errorf("a refused reset changed the card")
		}
	})
	t.Run("vfs", func(t *testing.T) {
		s, h := resetHost(t)
		if err := s.AddFault(Fault{Reset: ResetVFs}); err != nil {
			t.Fatal(err)
		}
		out, code := runReset(t, s, "-d", "0000:3b:00.0", "reset", "-y", "--level", "3")
		if code != 1 || !strings.HasSuffix(out, "-E- Reset virtual functions failed! Please reset virtual functions manually and resume operation.\n") {
			t.Errorf("with VFs: exit %d %q", code, out)
		}
		if d := s.State().DeviceByPCI("0000:3b:00.0"); d.SRIOV == nil || d.SRIOV.NumVFs != 2 {
			t.Errorf("a refused reset changed the VFs: %+v", d.SRIOV)
		}
		if err := h.FS.WriteAttr("/sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs", []byte("0")); err != nil {
			t.Fatal(err)
		}
		if out, code := runReset(t, s, "-d", "0000:3b:00.0", "reset", "-y", "--level", "3"); code != 0 {
			t.Errorf("without VFs: exit %d %q", code, out)
		}
	})
}

// TestResetNoReturn: with a no-return fault the reset succeeds and loads
// the firmware, but the card's functions do not register again: the PCI
// functions are there with no RDMA device and no netdevs, sriov_numvfs
// refuses as with no driver bound (ENOENT), and the tree is what a full
// rendering writes. A reboot probes them again.
func TestResetNoReturn(t *testing.T) {
	s, h := resetHost(t)
	if err := s.AddFault(Fault{Reset: ResetNoReturn, Match: "0000:3b:00.1", Times: 1}); err != nil {
		t.Fatal(err)
	}
	out, code := runReset(t, s, "-d", "0000:3b:00.0", "reset", "-y", "--level", "3")
	if code != 0 || !strings.HasSuffix(out, "-I- FW was loaded successfully.\n") {
		t.Fatalf("reset exit %d:\n%s", code, out)
	}
	st := s.State()
	if p := st.Firmware[0].Param("LINK_TYPE_P1"); p.Current != 2 {
		t.Errorf("LINK_TYPE_P1 current %d after the reset, want 2 (the firmware was loaded)", p.Current)
	}
	for _, name := range []string{"mlx5_0", "mlx5_1"} {
		if st.Device(name) != nil {
			t.Errorf("%s registered after a no-return reset", name)
		}
	}
	for _, name := range []string{"ib0", "ib1", "ens1f0np0"} {
		if st.Netdev(name) != nil {
			t.Errorf("netdev %s after a no-return reset", name)
		}
	}
	for _, p := range []string{"/sys/class/infiniband/mlx5_0", "/sys/bus/pci/devices/0000:3b:00.0/infiniband", "/sys/bus/pci/devices/0000:3b:00.1/net"} {
		if _, err := h.FS.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after a no-return reset: %v, want it gone", p, err)
		}
	}
	if _, err := h.FS.Stat("/sys/bus/pci/devices/0000:3b:00.0/config"); err != nil {
		t.Errorf("the PCI function is gone too: %v", err)
	}
	err := h.FS.WriteAttr("/sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs", []byte("2"))
	if !errors.Is(err, syscall.ENOENT) {
		t.Errorf("sriov_numvfs with no driver: %v, want ENOENT", err)
	}
	full, err := Create(t.TempDir(), s.State())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sysTree(t, full.Dir), sysTree(t, s.Dir)); diff != "" {
		t.Errorf("the tree after the reset differs from a full rendering (-full +reset):\n%s", diff)
	}
	if err := s.Reboot(); err != nil {
		t.Fatal(err)
	}
	st = s.State()
	if st.Device("mlx5_0") == nil || st.Device("mlx5_1") == nil || st.Netdev("ens1f0np0") == nil || st.Netdev("ib1") == nil || len(st.Unprobed) != 0 {
		t.Errorf("after a reboot: devices %v, unprobed %v, want the card back with its netdevs", st.Devices, st.Unprobed)
	}
}

// TestResetUnderSIGTERM: a firmware reset whose context ends while it
// runs: run plainly it is killed and nothing is reset; run gently
// (host.Cmd.Gentle: SIGTERM, waited for) it stops at the signal early in
// its run (mstfwreset's handler: "Signal 15 received, Exiting...", exit
// 1, nothing reset) and runs to its end later in it (the firmware is
// loaded).
func TestResetUnderSIGTERM(t *testing.T) {
	args := []string{"mstfwreset", "-d", "0000:3b:00.0", "reset", "-y", "--level", "3"}
	linkType := func(s *Sim) int64 { return s.State().Firmware[0].Param("LINK_TYPE_P1").Current }
	slow := func(t *testing.T) (*Sim, *host.Host) {
		s, h := resetHost(t)
		if err := s.mutateSaved(func(st *State) error {
			st.Latency = map[string]Duration{"mstfwreset reset": Duration(time.Second)}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return s, h
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, gentle := range []bool{false, true} {
		s, h := slow(t)
		_, err := h.Runner.Run(ended, host.Cmd{Args: args, Gentle: gentle})
		var ee *host.ExitError
		if !errors.As(err, &ee) || !errors.Is(ee.Err, host.ErrInterrupted) {
			t.Fatalf("gentle %v, interrupted at the start: %v, want ErrInterrupted", gentle, err)
		}
		want := -1 // killed
		if gentle {
			want = 1
			if string(ee.Stdout) != "\nSignal 15 received, Exiting...\n" {
				t.Errorf("gentle, interrupted at the start: stdout %q", ee.Stdout)
			}
		}
		if ee.Code != want || linkType(s) != 1 {
			t.Errorf("gentle %v, interrupted at the start: exit %d (want %d), LINK_TYPE_P1 current %d (want 1: no reset)", gentle, ee.Code, want, linkType(s))
		}
	}
	s, h := slow(t)
	late, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(700*time.Millisecond, cancel)
	if res, err := h.Runner.Run(late, host.Cmd{Args: args, Gentle: true}); err != nil || !strings.HasSuffix(string(res.Stdout), "-I- FW was loaded successfully.\n") || linkType(s) != 2 {
		t.Errorf("gentle, interrupted late: %v %q, LINK_TYPE_P1 current %d, want the reset done (2)", err, res.Stdout, linkType(s))
	}
	st := s.State()
	for _, tt := range []struct {
		args []string
		want time.Duration
	}{{args, time.Second}, {[]string{"mstfwreset", "-d", "0000:3b:00.0", "query"}, 0}} {
		if got := st.latencyOf(tt.args); got != tt.want {
			t.Errorf("latency of %v: %s, want %s", tt.args, got, tt.want)
		}
	}
}

// TestResetLate: with a late fault the card is unprobed after the reset
// until its delay has passed; a process that opens the host after that
// finds it registered again, with its netdevs.
func TestResetLate(t *testing.T) {
	s, _ := resetHost(t)
	if err := s.AddFault(Fault{Reset: ResetLate, Delay: Duration(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if out, code := runReset(t, s, "-d", "0000:3b:00.0", "reset", "-y", "--level", "3"); code != 0 {
		t.Fatalf("reset exit %d:\n%s", code, out)
	}
	again, err := Open(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	st := again.State()
	if st.Device("mlx5_0") != nil || len(st.Unprobed) != 2 {
		t.Fatalf("within the delay: devices %v, unprobed %v, want the card unprobed", st.Devices, st.Unprobed)
	}
	// The delay passes (the state says when the probe is due).
	if err := again.mutateSaved(func(st *State) error {
		for _, d := range st.Unprobed {
			d.ProbeAt = time.Now().Add(-time.Second)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	again, err = Open(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	st = again.State()
	if st.Device("mlx5_0") == nil || st.Device("mlx5_1") == nil || st.Netdev("ens1f0np0") == nil || st.Netdev("ib1") == nil || len(st.Unprobed) != 0 {
		t.Errorf("after the delay: devices %v, unprobed %v, want the card back with its netdevs", st.Devices, st.Unprobed)
	}
	h, err := again.Host()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.FS.Stat("/sys/class/infiniband/mlx5_0"); err != nil {
		t.Errorf("mlx5_0 not rendered after the delay: %v", err)
	}
}

// TestResetFaultValidate: a reset fault names a known answer and nothing
// a tool fault has.
func TestResetFaultValidate(t *testing.T) {
	for _, tt := range []struct {
		f  Fault
		ok bool
	}{
		{Fault{Reset: ResetPowerCycle}, true},
		{Fault{Reset: ResetVFs, Match: "0000:3b:00.0", Times: 1}, true},
		{Fault{Reset: ResetNoReturn}, true},
		{Fault{Reset: ResetNoReturn, Hang: true}, false},
		{Fault{Reset: ResetLate, Delay: Duration(time.Nanosecond)}, true},
		{Fault{Reset: ResetLate}, false},
		{Fault{Reset: ResetNoReturn, Delay: Duration(time.Second)}, false},
		{Fault{Reset: "reboot"}, false},
		{Fault{Reset: ResetVFs, Exit: 1}, false},
		{Fault{Reset: ResetVFs, Tool: "mstfwreset"}, false},
	} {
		if err := tt.f.Validate(); (err == nil) != tt.ok {
			t.Errorf("%+v: %v, want ok %v", tt.f, err, tt.ok)
		}
	}
}

// TestResetLevel4Reboots: a level 4 reset is a warm reboot of the host:
// a new boot_id, the firmware reloaded.
func TestResetLevel4Reboots(t *testing.T) {
	s, _ := resetHost(t)
	boot := s.State().BootID()
	if out, code := runReset(t, s, "-d", "0000:3b:00.0", "reset", "-y", "--level", "4"); code != 0 {
		t.Fatalf("exit %d %q", code, out)
	}
	st := s.State()
	if st.BootID() == boot || st.Firmware[0].Param("LINK_TYPE_P1").Current != 2 {
		t.Errorf("level 4: boot_id %s (was %s), LINK_TYPE_P1 current %d", st.BootID(), boot, st.Firmware[0].Param("LINK_TYPE_P1").Current)
	}
}

// TestResetRendersWhatAFullRenderWould: the tree after resets (rendered
// only where the cards changed, against the rendering in memory) is, file
// for file, the tree a full rendering of the same state writes, for a
// link layer change with VFs and rdma_cm state, and for two cards reset
// at once.
func TestResetRendersWhatAFullRenderWould(t *testing.T) {
	check := func(t *testing.T, s *Sim) {
		t.Helper()
		full, err := Create(t.TempDir(), s.State())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(sysTree(t, full.Dir), sysTree(t, s.Dir)); diff != "" {
			t.Errorf("the tree after the reset differs from a full rendering (-full +reset):\n%s", diff)
		}
	}
	t.Run("link layer, VFs, rdma_cm", func(t *testing.T) {
		s, _ := resetHost(t)
		if out, code := runReset(t, s, "-d", "0000:3b:00.0", "reset", "-y", "--level", "3"); code != 0 {
			t.Fatalf("exit %d %q", code, out)
		}
		check(t, s)
	})
	t.Run("two cards at once", func(t *testing.T) {
		st, err := NewState("gpu-node", "n", 2)
		if err != nil {
			t.Fatal(err)
		}
		st.Latency = map[string]Duration{"mlxfwreset": Duration(50 * time.Millisecond)}
		s, err := Create(t.TempDir(), st)
		if err != nil {
			t.Fatal(err)
		}
		for _, set := range [][2]string{{"0000:10:00.0", "LINK_TYPE_P1=ETH"}, {"0000:20:00.1", "LINK_TYPE_P2=ETH"}} {
			if _, err := s.RunTool(context.Background(), []string{"mlxconfig", "-d", set[0], "-y", "set", set[1]}); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for _, pci := range []string{"0000:10:00.0", "0000:20:00.0"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.RunTool(context.Background(), []string{"mlxfwreset", "-d", pci, "reset", "-y", "--level", "3"}); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		check(t, s)
	})
}

// sysTree is the simulated host's /sys and /proc, file by file.
func sysTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for p, v := range fstree.Snapshot(t, dir) {
		if strings.HasPrefix(p, "sys/") || strings.HasPrefix(p, "proc/") {
			out[p] = v
		}
	}
	return out
}
