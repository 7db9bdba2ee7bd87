package sim

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// The simulated machine's CPUs and the interrupt vectors of its adapter
// functions, after the kernel's interfaces:
//   - /sys/devices/system/cpu/online and /sys/devices/system/node/nodeN/
//     cpulist (Documentation/ABI/stable/sysfs-devices-node, testing/
//     sysfs-devices-system-cpu), each function's local_cpulist (its
//     node's CPUs) and msi_irqs/N (one file per vector, "msix");
//   - /proc/irq/N/smp_affinity_list (kernel/irq/proc.c
//     write_irq_affinity, Linux 6.1): the list is parsed as
//     bitmap_parselist does (a CPU at or past nr_cpu_ids: ERANGE), a
//     list with no online CPU is refused (EINVAL), a managed vector
//     refuses any write (EIO, irq_can_set_affinity_usr), and the list is
//     printed back with %*pbl: ascending, runs as ranges (0-3,8).
// A new vector's list is the kernel's default affinity, every CPU.
// The CPUs are split evenly over the nodes; a function's NUMA node -1
// (none) is local to every CPU.

const (
	defaultCPUs       = 16
	defaultNUMANodes  = 2
	defaultMSIVectors = 8
	firstMSIIRQ       = 40 // after the legacy and the IO-APIC's IRQs
)

var irqAffinityRE = regexp.MustCompile(`^/proc/irq/([0-9]+)/smp_affinity_list$`)

func (s *State) cpuCount() int {
	if s.CPUs > 0 {
		return s.CPUs
	}
	return defaultCPUs
}

func (s *State) nodeCount() int {
	if s.NUMANodes > 0 {
		return s.NUMANodes
	}
	return defaultNUMANodes
}

// nodeCPUs are the CPUs of a NUMA node (every CPU for node -1).
func (s *State) nodeCPUs(node int) []int {
	n, nodes := s.cpuCount(), s.nodeCount()
	var out []int
	for c := 0; c < n; c++ {
		if node < 0 || c*nodes/n == node {
			out = append(out, c)
		}
	}
	return out
}

// onlineCPUs are the CPUs not offline.
func (s *State) onlineCPUs() []int {
	var out []int
	for c := 0; c < s.cpuCount(); c++ {
		if !contains(intsText(s.OfflineCPUs), strconv.Itoa(c)) {
			out = append(out, c)
		}
	}
	return out
}

func intsText(l []int) []string {
	out := make([]string, len(l))
	for i, n := range l {
		out[i] = strconv.Itoa(n)
	}
	return out
}

// msiIRQs are the IRQ numbers of a device's vectors: numbered in the
// order of the devices, each device's vectors together.
func (s *State) msiIRQs(d *Device) []int {
	next := firstMSIIRQ
	for _, x := range s.Devices {
		if x.PCI == "" || x.Driver == "rxe" {
			continue
		}
		n := x.MSIVectors
		if n == 0 {
			n = defaultMSIVectors
		}
		if x == d {
			out := make([]int, n)
			for i := range out {
				out[i] = next + i
			}
			return out
		}
		next += n
	}
	return nil
}

// irqOwner is the device whose vector irq is, or nil.
func (s *State) irqOwner(irq int) *Device {
	for _, d := range s.Devices {
		for _, n := range s.msiIRQs(d) {
			if n == irq {
				return d
			}
		}
	}
	return nil
}

func (s *State) renderCPUs(t *tree) {
	t.file("/sys/devices/system/cpu/online", cpuListText(s.onlineCPUs())+"\n")
	t.file("/sys/devices/system/cpu/possible", cpuListText(s.nodeCPUs(-1))+"\n")
	for n := 0; n < s.nodeCount(); n++ {
		t.file(fmt.Sprintf("/sys/devices/system/node/node%d/cpulist", n), cpuListText(s.nodeCPUs(n))+"\n")
	}
}

// renderIRQs writes a probed function's msi_irqs and its vectors' /proc/irq.
func (s *State) renderIRQs(t *tree, d *Device) {
	irqs := s.msiIRQs(d)
	if len(irqs) == 0 {
		return
	}
	pd := s.pciDir(d.PCI)
	for _, irq := range irqs {
		t.file(fmt.Sprintf("%s/msi_irqs/%d", pd, irq), "msix\n")
		v, ok := s.IRQAffinity[irq]
		if !ok {
			v = cpuListText(s.nodeCPUs(-1))
		}
		t.file(fmt.Sprintf("/proc/irq/%d/smp_affinity_list", irq), v+"\n")
	}
}

// writeIRQAffinity takes a write to /proc/irq/N/smp_affinity_list.
func (st *State) writeIRQAffinity(name string, irq int, data string) error {
	d := st.irqOwner(irq)
	if d == nil {
		return perr("open", name, syscall.ENOENT)
	}
	if d.ManagedIRQs {
		return perr("write", name, syscall.EIO)
	}
	cpus, errno := parseCPUListKernel(data, st.cpuCount())
	if errno != 0 {
		return perr("write", name, errno)
	}
	online := false
	for _, c := range cpus {
		for _, o := range st.onlineCPUs() {
			if c == o {
				online = true
			}
		}
	}
	if !online {
		return perr("write", name, syscall.EINVAL)
	}
	if st.IRQAffinity == nil {
		st.IRQAffinity = map[int]string{}
	}
	st.IRQAffinity[irq] = cpuListText(cpus)
	return nil
}

// parseCPUListKernel parses a list written to the kernel: comma-separated
// CPUs and ranges, trailing white space ignored; a malformed list is
// EINVAL, a CPU at or past nbits ERANGE.
func parseCPUListKernel(s string, nbits int) ([]int, syscall.Errno) {
	s = strings.TrimRight(s, " \t\n")
	if s == "" {
		return nil, 0 // an empty mask: refused as having no online CPU
	}
	set := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		a, b, isRange := strings.Cut(part, "-")
		lo, err := strconv.Atoi(a)
		if err != nil || lo < 0 || a != strings.TrimSpace(a) {
			return nil, syscall.EINVAL
		}
		hi := lo
		if isRange {
			if hi, err = strconv.Atoi(b); err != nil || hi < 0 {
				return nil, syscall.EINVAL
			}
		}
		if hi < lo {
			return nil, syscall.EINVAL
		}
		if hi >= nbits {
			return nil, syscall.ERANGE
		}
		for c := lo; c <= hi; c++ {
			set[c] = true
		}
	}
	out := make([]int, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	sort.Ints(out)
	return out, 0
}

// cpuListText prints CPUs as the kernel's %*pbl does.
func cpuListText(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j]))
		} else {
			parts = append(parts, strconv.Itoa(cpus[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
