package sriov

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"syscall"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Make implements plan.TypedProvider: autoprobe first, then the sriov_numvfs
// writes in order (0, then the new count, when VFs are enabled already).
//
// Equivalent to: echo 0 > /sys/bus/pci/devices/PCI/sriov_numvfs; echo M > .../sriov_numvfs
func (p *Provider) Make(ctx context.Context, h *host.Host, c *plan.Change, _ any) error {
	if vp, err := plan.PayloadOf[*vfPayload](c); err == nil {
		return applyVF(ctx, h, vp)
	}
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return err
	}
	dir := Dir(pl.pci)
	if pl.autoprobe != nil {
		v := "0\n"
		if *pl.autoprobe {
			v = "1\n"
		}
		name := path.Join(dir, "sriov_drivers_autoprobe")
		if err := h.FS.WriteAttr(name, []byte(v)); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	name := path.Join(dir, "sriov_numvfs")
	for _, n := range pl.writes {
		if err := h.FS.WriteAttr(name, []byte(strconv.Itoa(n)+"\n")); err != nil {
			return numVFsError(name, n, err)
		}
	}
	return readBack(h, pl)
}

// readBack proves the writes took: a write the kernel accepts is not yet
// a VF count (a driver may fail to enable VFs and keep 0), and the VF
// settings that depend on this change must not run on VFs that are not
// there.
//
// Equivalent to: cat /sys/bus/pci/devices/PCI/sriov_{numvfs,drivers_autoprobe}
func readBack(h *host.Host, pl *payload) error {
	got, err := Read(h, pl.pci)
	if err != nil {
		return fmt.Errorf("reading SR-IOV state of %s back: %w", pl.pci, err)
	}
	var bad []string
	if pl.autoprobe != nil && got.Autoprobe != *pl.autoprobe {
		bad = append(bad, fmt.Sprintf("sriov_drivers_autoprobe is %t, not %t", got.Autoprobe, *pl.autoprobe))
	}
	if len(pl.writes) > 0 && got.NumVFs != pl.want {
		bad = append(bad, fmt.Sprintf("sriov_numvfs is %d, not %d", got.NumVFs, pl.want))
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s after the writes: %s", pl.pci, strings.Join(bad, "; "))
	}
	return nil
}

// numVFsError explains the kernel's answers to a sriov_numvfs write.
func numVFsError(name string, n int, err error) error {
	switch {
	case errors.Is(err, syscall.ERANGE):
		return fmt.Errorf("writing %d to %s: %w (more than sriov_totalvfs; firmware NUM_OF_VFS caps it)", n, name, err)
	case errors.Is(err, syscall.EBUSY):
		return fmt.Errorf("writing %d to %s: %w (VFs are enabled; the count changed since the plan was made)", n, name, err)
	case errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("writing %d to %s: %w (the driver does not support SR-IOV configuration through sysfs)", n, name, err)
	}
	return fmt.Errorf("writing %d to %s: %w", n, name, err)
}
