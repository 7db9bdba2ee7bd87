package irqaffinity

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Make implements plan.TypedProvider: each vector's CPU list is written
// to /proc/irq/N/smp_affinity_list and read back; the kernel prints a
// list in its own form (0-3,8), so the two are compared as sets. EIO is
// the kernel's answer for a vector whose affinity it manages itself
// (irq_can_set_affinity_usr), EINVAL for CPUs none of which is online.
//
// Equivalent to: echo CPU > /proc/irq/N/smp_affinity_list; cat /proc/irq/N/smp_affinity_list
func (p *Provider) Make(_ context.Context, h *host.Host, _ *plan.Change, pl *payload) error {
	for _, s := range pl.irqs {
		name := AffinityPath(s.irq)
		if err := h.FS.WriteAttr(name, []byte(s.want+"\n")); err != nil {
			if errors.Is(err, syscall.EIO) {
				return fmt.Errorf("IRQ %d of %s: writing %s to %s: %w (the kernel manages this vector's affinity itself: a managed IRQ)", s.irq, pl.pci, s.want, name, err)
			}
			return fmt.Errorf("IRQ %d of %s: writing %s to %s: %w", s.irq, pl.pci, s.want, name, err)
		}
		b, err := h.FS.ReadFile(name)
		if err != nil {
			return fmt.Errorf("IRQ %d of %s: reading back: %w", s.irq, pl.pci, err)
		}
		got := strings.TrimSpace(string(b))
		if !sameList(got, s.want) {
			return fmt.Errorf("IRQ %d of %s: %s reads %s after writing %s: the kernel did not take it", s.irq, pl.pci, name, got, s.want)
		}
	}
	return nil
}

// sameList tells whether two CPU lists name the same CPUs.
func sameList(a, b string) bool {
	x, err1 := parseKernelList(a)
	y, err2 := parseKernelList(b)
	return err1 == nil && err2 == nil && formatList(x) == formatList(y)
}
