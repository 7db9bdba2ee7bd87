package irqaffinity

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Plan implements plan.TypedProvider: the CPUs of the spec (local: the
// function's local_cpulist that is online; a list: every CPU of it must
// be online), spread one per vector in IRQ order, round-robin; a vector
// whose list is not that one CPU changes. A running irqbalance that
// would move the vectors is a finding naming what to add.
func (p *Provider) Plan(req *plan.Request, obs *Observed, _ *plan.Facts) plan.Proposal {
	var prop plan.Proposal
	for _, t := range targets(req) {
		if t.pci == "" {
			prop.Errors = append(prop.Errors, req.Finding(t.path, "%s has no PCI function (a Soft-RoCE device?): irq_affinity needs one", t.dev))
			continue
		}
		prop.Managed = append(prop.Managed, plan.Managed{Address: Address(t.pci), Path: t.path})
		if obs == nil {
			prop.Errors = append(prop.Errors, req.Unreadable(t.path, "the interrupt vectors of %s were not read", t.pci))
			continue
		}
		if e, ok := obs.Errs[t.pci]; ok {
			prop.Errors = append(prop.Errors, req.Finding(t.path, "%s", e))
			continue
		}
		if obs.OnlineErr != "" {
			prop.Errors = append(prop.Errors, req.Finding(t.path, "reading the online CPUs: %s", obs.OnlineErr))
			continue
		}
		f := obs.Funcs[t.pci]
		ia := req.Spec.Devices[t.index].IRQAffinity
		cpus, msg := cpusFor(ia.CPUs, f, obs.Online)
		if msg != "" {
			prop.Errors = append(prop.Errors, req.Finding(t.path+".cpus", "%s: %s", t.pci, msg))
			continue
		}
		if ia.IRQBalance != "ignore" {
			for _, d := range obs.IRQBalance {
				if m := d.moves(f.IRQs, f.Driver); len(m) > 0 {
					prop.Errors = append(prop.Errors, req.Finding(t.path, "%s", irqbalanceFinding(d, t.pci, f, m)))
				}
			}
		}
		pl := &payload{pci: t.pci}
		var attrs []plan.Attr
		for i, irq := range f.IRQs {
			want := strconv.Itoa(cpus[i%len(cpus)])
			if have, err := parseKernelList(f.Affinity[irq]); err == nil && len(have) == 1 && strconv.Itoa(have[0]) == want {
				continue
			}
			pl.irqs = append(pl.irqs, irqSet{irq: irq, want: want, before: f.Affinity[irq]})
			attrs = append(attrs, plan.Attr{Name: "irq " + strconv.Itoa(irq), Before: f.Affinity[irq], After: want})
		}
		if len(pl.irqs) == 0 {
			continue
		}
		prop.Changes = append(prop.Changes, &plan.Change{Address: Address(t.pci), Action: plan.Update, Activation: plan.Runtime,
			Source: req.Pos(t.path), Attributes: attrs, Payload: pl})
	}
	return prop
}

// cpusFor is the CPUs the vectors are spread over, in order, or why
// there are none.
func cpusFor(spec string, f *Func, online []int) ([]int, string) {
	if spec == schema.IRQAffinityLocal {
		var out []int
		for _, c := range f.Local {
			if slices.Contains(online, c) {
				out = append(out, c)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Sprintf("no CPU of its NUMA node (local_cpulist %s) is online (online: %s)", formatList(f.Local), formatList(online))
		}
		return out, ""
	}
	cpus, err := schema.ParseCPUList(spec)
	if err != nil {
		return nil, err.Error() // validate refuses it first
	}
	var off []int
	for _, c := range cpus {
		if !slices.Contains(online, c) {
			off = append(off, c)
		}
	}
	if len(off) > 0 {
		return nil, fmt.Sprintf("CPU %s not online on this host (online: %s); the kernel refuses a vector on an offline CPU", formatList(off), formatList(online))
	}
	return cpus, ""
}

// irqbalanceFinding says that d would move the IRQs m of a function and
// what keeps it off them.
func irqbalanceFinding(d Daemon, pci string, f *Func, m []int) string {
	var ban []string
	for _, irq := range m {
		ban = append(ban, "--banirq="+strconv.Itoa(irq))
	}
	opts := strings.Join(ban, " ") + " (these numbers change at boot)"
	if f.Driver != "" {
		opts = "--banmod=" + f.Driver + " (every function of that driver; stable across boots) or " + opts
	}
	s := fmt.Sprintf("irqbalance (pid %d) is running and does not ban IRQ %s of %s: it would move them off these CPUs. "+
		"Add %s to IRQBALANCE_ARGS in /etc/default/irqbalance and restart irqbalance, or stop and disable irqbalance",
		d.PID, listInts(m), pci, opts)
	if d.PolicyScript != "" {
		s += fmt.Sprintf("; if its policy script %s bans them (ban=true), set irq_affinity.irqbalance: ignore", d.PolicyScript)
	}
	return s
}

func listInts(l []int) string {
	s := make([]string, len(l))
	for i, n := range l {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, " ")
}
