// Package irqaffinity pins the interrupt vectors of a NIC's PCI function
// to CPUs (devices[].irq_affinity): the function's MSI/MSI-X vectors
// (/sys/bus/pci/devices/BDF/msi_irqs), in IRQ number order, take one CPU
// each, round-robin over the online CPUs of the function's NUMA node (its
// local_cpulist) or over a CPU list, as Mellanox's
// set_irq_affinity_bynode.sh and set_irq_affinity_cpulist.sh spread them.
// Each vector's /proc/irq/N/smp_affinity_list is written and read back.
// The setting lives until the next boot (or the driver's next probe,
// which allocates the vectors again): the boot unit sets it again.
//
// irqbalance moves IRQs it does not ban every 10 seconds; a running
// irqbalance whose command line bans neither these IRQs (--banirq) nor
// the function's driver (--banmod) is a plan finding that says what to
// add (see irqbalance.go for why rdmaform does not write it itself).
package irqaffinity

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Provider is the IRQ affinity provider.
type Provider struct{}

var _ plan.TypedProvider[*Observed, *payload] = (*Provider)(nil)

// New is the provider as plan.Build and apply take it.
func New() plan.Provider { return plan.Adapt[*Observed, *payload](&Provider{}) }

// Name implements plan.Provider.
func (*Provider) Name() string { return "irq_affinity" }

// Kind is the kind of this provider's addresses.
const Kind = "irq_affinity"

// Address is the plan address of one PCI function's vectors:
// irq_affinity[0000:3b:00.0].
func Address(pci string) plan.Address { return plan.Addr(Kind, pci) }

// Paths the provider reads and writes (Documentation/core-api/irq/
// irq-affinity.rst, Documentation/ABI/testing/sysfs-bus-pci: msi_irqs,
// local_cpulist; sysfs-devices-system-cpu: online).
const (
	pciDevices = "/sys/bus/pci/devices/"
	cpuOnline  = "/sys/devices/system/cpu/online"
)

// AffinityPath is one IRQ's CPU list in /proc.
func AffinityPath(irq int) string { return "/proc/irq/" + strconv.Itoa(irq) + "/smp_affinity_list" }

// Observed is what Observe read.
type Observed struct {
	// Online are the online CPUs; nil when not read (OnlineErr says why).
	Online    []int
	OnlineErr string `json:",omitempty"`
	Funcs     map[string]*Func
	// Errs are functions whose vectors could not be read, with why.
	Errs map[string]string `json:",omitempty"`
	// IRQBalance is the running irqbalance daemons.
	IRQBalance []Daemon `json:",omitempty"`
}

// Func is one PCI function's vectors and where they may run.
type Func struct {
	// Local is the function's local_cpulist as read (the CPUs of its
	// NUMA node; every CPU on a host without NUMA).
	Local  []int
	Driver string
	// IRQs are its vectors in number order, Affinity each one's CPU list
	// as the kernel prints it.
	IRQs     []int
	Affinity map[int]string
}

// target is one function a spec entry names.
type target struct {
	pci, path, dev string
	index          int
}

// targets are the spec's devices with an irq_affinity block and their PCI
// addresses, or for show every PCI function of the inventory
// (plan.DeviceTargets).
func targets(req *plan.Request) []target {
	var out []target
	for _, d := range plan.DeviceTargets(req, "irq_affinity", func(d *schema.Device) bool { return d.IRQAffinity != nil }) {
		out = append(out, target{pci: d.PCI, path: d.Path, dev: d.Dev, index: d.Index})
	}
	return out
}

// Observe implements plan.TypedProvider: each named function's vectors,
// their CPU lists and its local CPUs, the online CPUs and the running
// irqbalance. Nothing is written.
//
// Equivalent to: ls /sys/bus/pci/devices/BDF/msi_irqs; cat /proc/irq/N/smp_affinity_list
func (p *Provider) Observe(_ context.Context, h *host.Host, req *plan.Request) (*Observed, error) {
	ts := targets(req)
	if len(ts) == 0 {
		return nil, nil
	}
	obs := &Observed{Funcs: map[string]*Func{}, Errs: map[string]string{}}
	if b, err := h.FS.ReadFile(cpuOnline); err != nil {
		obs.OnlineErr = err.Error()
	} else if obs.Online, err = parseKernelList(string(b)); err != nil {
		obs.OnlineErr = cpuOnline + ": " + err.Error()
	}
	for _, t := range ts {
		if t.pci == "" {
			continue // Plan says why
		}
		f, err := readFunc(h, t.pci)
		if err != nil {
			obs.Errs[t.pci] = err.Error()
			continue
		}
		obs.Funcs[t.pci] = f
	}
	d, err := findIRQBalance(h)
	if err != nil {
		return nil, err
	}
	obs.IRQBalance = d
	return obs, nil
}

// readFunc reads one function's vectors and local CPUs.
func readFunc(h *host.Host, pci string) (*Func, error) {
	dir := pciDevices + pci
	if _, err := h.FS.Stat(dir); err != nil {
		return nil, fmt.Errorf("no PCI function %s in %s", pci, strings.TrimSuffix(pciDevices, "/"))
	}
	b, err := h.FS.ReadFile(dir + "/local_cpulist")
	if err != nil {
		return nil, err
	}
	f := &Func{Affinity: map[int]string{}}
	if f.Local, err = parseKernelList(string(b)); err != nil {
		return nil, fmt.Errorf("%s/local_cpulist: %w", dir, err)
	}
	if l, err := h.FS.Readlink(dir + "/driver"); err == nil {
		f.Driver = path.Base(l)
	}
	ents, err := h.FS.ReadDir(dir + "/msi_irqs")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s has no MSI or MSI-X vectors (no msi_irqs: no driver bound, or it uses legacy INTx)", pci)
	}
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%s/msi_irqs/%s: not an IRQ number", dir, e.Name())
		}
		f.IRQs = append(f.IRQs, n)
	}
	if len(f.IRQs) == 0 {
		return nil, fmt.Errorf("%s has no MSI or MSI-X vectors enabled (msi_irqs is empty: is its driver bound?)", pci)
	}
	sort.Ints(f.IRQs)
	for _, irq := range f.IRQs {
		b, err := h.FS.ReadFile(AffinityPath(irq))
		if err != nil {
			return nil, err
		}
		f.Affinity[irq] = strings.TrimSpace(string(b))
	}
	return f, nil
}

// payload is what Make needs: the CPU list each IRQ gets, and what it
// had for Revert.
type payload struct {
	pci  string
	irqs []irqSet
}

type irqSet struct {
	irq          int
	want, before string
}

// parseKernelList reads a CPU list as the kernel prints it (%*pbl:
// 0-3,8 and a newline).
func parseKernelList(s string) ([]int, error) {
	return schema.ParseCPUList(strings.TrimSpace(s))
}

// formatList writes CPUs as the kernel prints a list: ascending, runs as
// ranges (0-3,8).
func formatList(cpus []int) string {
	c := append([]int(nil), cpus...)
	sort.Ints(c)
	var b strings.Builder
	for i := 0; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] == c[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(c[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(c[j]))
		}
		i = j + 1
	}
	return b.String()
}
