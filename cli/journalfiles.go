package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/providers/bootunit"
	"github.com/rdmaform/rdmaform/providers/kcmdline"
	"github.com/rdmaform/rdmaform/providers/subnetmanager"
	"github.com/rdmaform/rdmaform/session"
)

// retellOpenSM has the running opensm read its files again once the
// rollback changed them: each running opensm unit (Debian's
// opensm@GUID.service per InfiniBand port, opensm.service) is restarted,
// as the subnet manager provider does for a key it reads only at start.
// Without a service manager that can, it says what to do.
func (a *app) retellOpenSM(ctx context.Context, h *host.Host) error {
	sig, ok := h.Systemd.(host.UnitSignaller)
	if h.Systemd == nil || !ok {
		return fmt.Errorf("opensm's files are back, but no service manager here restarts opensm: restart it to have it read them")
	}
	units := []string{}
	if inv, err := inventory.Discover(ctx, h); err == nil {
		for _, d := range inv.Devices {
			for _, pt := range d.Ports {
				if pt.GUID != "" {
					units = append(units, subnetmanager.Units(&subnetmanager.LocalPort{GUID: pt.GUID})[0])
				}
			}
		}
	}
	units = append(units, subnetmanager.Units(nil)...)
	var errs error
	for _, u := range units {
		st, err := h.Systemd.Unit(ctx, u)
		if err != nil || !st.Active() {
			continue
		}
		if pid, err := sig.MainPID(ctx, u); err != nil || pid == 0 {
			continue // Debian's opensm.service: a oneshot that starts the instances
		}
		if err := sig.Restart(ctx, u); err != nil {
			errs = errors.Join(errs, fmt.Errorf("restarting %s to have opensm read its restored files: %w", u, err))
		}
	}
	return errs
}

// afterRestore tells the services that read restored files: the service
// manager reloads a restored boot unit, update-grub or kernel-install
// writes the boot entries again from a restored kernel command line file,
// and opensm reads its files again.
// Failures are warnings: the files are back.
func (a *app) afterRestore(ctx context.Context, h *host.Host, changed []session.FileState) {
	unit, sm, grub, ki := false, false, false, false
	for _, f := range changed {
		switch {
		case f.Path == kcmdline.GrubFile:
			grub = true
		case f.Path == kcmdline.KernelCmdline:
			ki = true
		case f.Path == bootunit.UnitPath || f.Path == bootunit.WantsPath:
			unit = true
		case slices.Contains(session.JournalPaths(subnetmanager.PartitionsAddr), f.Path) || slices.Contains(session.JournalPaths(subnetmanager.ConfAddr), f.Path) || f.Path == subnetmanager.Debian.Ports:
			sm = true
		}
	}
	if unit && h.Systemd != nil {
		if err := h.Systemd.Reload(ctx); err != nil {
			fmt.Fprintf(a.env.Stderr, "rdmaform: warning: reloading the service manager after restoring %s: %v\n", bootunit.UnitPath, err)
		}
	}
	if grub {
		if err := kcmdline.Regenerate(ctx, h); err != nil {
			fmt.Fprintf(a.env.Stderr, "rdmaform: warning: after restoring %s: %v\n", kcmdline.GrubFile, err)
		}
	}
	if ki {
		if err := kcmdline.RegenerateKernelInstall(ctx, h); err != nil {
			fmt.Fprintf(a.env.Stderr, "rdmaform: warning: after restoring %s: %v\n", kcmdline.KernelCmdline, err)
		}
	}
	if sm {
		if err := a.retellOpenSM(ctx, h); err != nil {
			fmt.Fprintf(a.env.Stderr, "rdmaform: warning: %v\n", err)
		}
	}
}
