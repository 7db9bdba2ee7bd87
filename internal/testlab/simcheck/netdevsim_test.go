package simcheck_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// TestSRIOVRulesOnNetdevsim runs the SR-IOV count scenarios against the
// kernel's netdevsim where a kernel has it (/sys/bus/netdevsim) and
// against the simulator, and compares the kernel's answers: enabling
// from 0, N to M refused with EBUSY until 0 is written, the same count a
// no-op, 0 disabling. netdevsim has no sriov_totalvfs; its limit is
// max_vfs in debugfs (ENOMEM above it, where a PCI function answers
// ERANGE), so the limit is checked on each side with its own errno.
//
// No kernel of these machines has netdevsim (CONFIG_NETDEVSIM is not
// set), so here the test skips with the reason; it is the one lab test
// RDMAFORM_REQUIRE_LAB=1 does not turn into a failure.
func TestSRIOVRulesOnNetdevsim(t *testing.T) {
	const bus = "/sys/bus/netdevsim"
	if _, err := os.Stat(bus); err != nil {
		t.Skipf("this kernel has no netdevsim (%s: %v); modprobe netdevsim where CONFIG_NETDEVSIM is set", bus, err)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a netdevsim device")
	}
	// A device ID of our own, one port; removed at the end.
	id := 4000 + os.Getpid()%1000
	if err := os.WriteFile(bus+"/new_device", []byte(fmt.Sprintf("%d 1", id)), 0o200); err != nil {
		t.Fatalf("creating netdevsim%d: %v", id, err)
	}
	t.Cleanup(func() { _ = os.WriteFile(bus+"/del_device", []byte(strconv.Itoa(id)), 0o200) })
	numvfs := filepath.Join(bus, "devices", fmt.Sprintf("netdevsim%d", id), "sriov_numvfs")
	kernel := func(n int) syscall.Errno {
		err := os.WriteFile(numvfs, []byte(strconv.Itoa(n)), 0o200)
		var errno syscall.Errno
		if errors.As(err, &errno) {
			return errno
		}
		if err != nil {
			t.Fatalf("writing %d: %v", n, err)
		}
		return 0
	}

	var pci string
	_, h := simtest.New(t, "cx5-roce", 0, func(st *sim.State) {
		for _, a := range st.Firmware {
			a.Param("SRIOV_EN").Current, a.Param("NUM_OF_VFS").Current = 1, 4
		}
		pci = st.Devices[0].PCI
	})
	simulated := func(n int) syscall.Errno {
		err := h.FS.WriteAttr("/sys/bus/pci/devices/"+pci+"/sriov_numvfs", []byte(strconv.Itoa(n)+"\n"))
		var errno syscall.Errno
		if errors.As(err, &errno) {
			return errno
		}
		if err != nil {
			t.Fatalf("simulated write %d: %v", n, err)
		}
		return 0
	}
	// netdevsim's default max_vfs is 4, the simulated PF's NUM_OF_VFS too.
	for i, w := range []int{4, 2, 0, 2, 2, 0, 4} {
		k, s := kernel(w), simulated(w)
		if k != s {
			t.Errorf("write %d (%d): netdevsim says %v, the simulator %v", i, w, k, s)
		}
	}
	if k, s := kernel(0), simulated(0); k != 0 || s != 0 {
		t.Fatalf("disabling: %v %v", k, s)
	}
	if k := kernel(5); k != syscall.ENOMEM {
		t.Errorf("netdevsim above max_vfs: %v, want ENOMEM", k)
	}
	if s := simulated(5); s != syscall.ERANGE {
		t.Errorf("simulator above sriov_totalvfs: %v, want ERANGE", s)
	}
}
