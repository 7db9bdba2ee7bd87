package sim_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// TestIRQAffinityModel: /proc/irq/N/smp_affinity_list as the kernel
// takes a write (the real kernel's answers are checked in the kernel
// lab, TestIRQAffinityKernelSemantics): printed back in the kernel's
// form, a CPU at or past the CPU count ERANGE, a malformed list or one
// without an online CPU EINVAL, a managed vector EIO, an IRQ that is no
// vector ENOENT; the lists, the node and online files, and a reboot
// gives every vector all CPUs again.
func TestIRQAffinityModel(t *testing.T) {
	s, h := simtest.New(t, "cx5-roce", 1, func(st *sim.State) {
		st.OfflineCPUs = []int{2, 3}
		st.Devices[1].ManagedIRQs = true
	})
	read := func(name string) string {
		t.Helper()
		b, err := h.FS.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	for name, want := range map[string]string{
		"/sys/devices/system/cpu/online":                  "0-1,4-15",
		"/sys/devices/system/node/node1/cpulist":          "8-15",
		"/sys/bus/pci/devices/0000:5e:00.0/local_cpulist": "0-7",
		"/sys/bus/pci/devices/0000:5e:00.0/msi_irqs/47":   "msix",
		"/proc/irq/40/smp_affinity_list":                  "0-15",
	} {
		if got := read(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	for _, c := range []struct {
		irq, data string
		want      error
		after     string
	}{
		{"40", "5,4,6\n", nil, "4-6"},
		{"40", "15", nil, "15"},
		{"40", "16", syscall.ERANGE, "15"},
		{"40", "2-3", syscall.EINVAL, "15"},
		{"40", "3-1", syscall.EINVAL, "15"},
		{"40", "x", syscall.EINVAL, "15"},
		{"40", "1-3", nil, "1-3"},
		{"48", "1", syscall.EIO, "0-15"},
		{"99", "1", syscall.ENOENT, ""},
	} {
		err := h.FS.WriteAttr("/proc/irq/"+c.irq+"/smp_affinity_list", []byte(c.data))
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("IRQ %s <- %q: %v, want %v", c.irq, c.data, err, c.want)
		}
		if c.after != "" {
			if got := read("/proc/irq/" + c.irq + "/smp_affinity_list"); got != c.after {
				t.Errorf("IRQ %s after %q: %s, want %s", c.irq, c.data, got, c.after)
			}
		}
	}
	if err := s.Reboot(); err != nil {
		t.Fatal(err)
	}
	if got := read("/proc/irq/40/smp_affinity_list"); got != "0-15" {
		t.Errorf("after the reboot: %s", got)
	}
}
