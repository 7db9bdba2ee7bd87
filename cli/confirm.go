package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers"
)

// ConfirmFile exists while an apply --confirm-timeout waits for
// `rdmaform confirm`; confirm removes it (rooted under --root/--sim).
const ConfirmFile = "/run/rdmaform/confirm-pending"

// guard refuses a plan that could cut the operator off or that confirm
// mode could not take back. It changes nothing.
func (a *app) guard(h *host.Host, p *plan.Plan, o applyOptions) error {
	var why []string
	if o.confirmTimeout > 0 {
		if !o.allowFirmware {
			for _, c := range p.Changes {
				if c.Activation == plan.NextBoot {
					why = append(why, fmt.Sprintf("%s is a firmware change: it takes effect at the next boot and a confirm timeout cannot take a reboot back; apply it on its own, or add --allow-firmware", c.Address))
				}
			}
		}
		for _, addr := range apply.NotRevertible(p, providers.All()) {
			if c := changeAt(p, addr); c != nil && c.Activation == plan.NextBoot && o.allowFirmware {
				continue // staged firmware is reverted by staging the old values, or reported
			}
			why = append(why, fmt.Sprintf("%s cannot be rolled back; apply it without --confirm-timeout", addr))
		}
	}
	if !o.allowMgmt && o.confirmTimeout == 0 {
		mgmt, err := h.ManagementNetdevs(a.env.Environ)
		if err != nil {
			return &exitError{code: plan.ExitError, err: err}
		}
		for _, c := range p.Changes {
			for _, nd := range c.Disrupts {
				if reason, ok := mgmt[nd]; ok {
					why = append(why, fmt.Sprintf("%s would take down, re-address or change the MTU of %s, and %s; add --allow-mgmt, or apply with --confirm-timeout to have it rolled back unless confirmed", c.Address, nd, reason))
				}
			}
		}
	}
	if len(why) == 0 {
		return nil
	}
	sort.Strings(why)
	return &exitError{code: plan.ExitError, err: fmt.Errorf("refusing to apply, nothing was changed:\n  %s", strings.Join(why, "\n  "))}
}

func changeAt(p *plan.Plan, addr string) *plan.Change {
	for _, c := range p.Changes {
		if c.Address == addr {
			return c
		}
	}
	return nil
}

// awaitConfirm waits for `rdmaform confirm` until the timeout; without it,
// every change of this apply is reverted, last first, and the revert is
// reported.
func (a *app) awaitConfirm(ctx context.Context, h *host.Host, out apply.Outcome, timeout time.Duration, failed bool) error {
	if len(out.Done) == 0 {
		return nil
	}
	if !failed {
		deadline := time.Now().Add(timeout)
		if err := h.FS.WriteFile(ConfirmFile, []byte(fmt.Sprintf("pid %d, revert at %s\n", os.Getpid(), deadline.UTC().Format(time.RFC3339))), 0o600); err != nil {
			return &exitError{code: plan.ExitError, err: fmt.Errorf("recording the pending confirmation: %w", err)}
		}
		fmt.Fprintf(a.msgs(), "Applied %d changes. Run '%s' within %s to keep them; otherwise they are reverted.\n", len(out.Done), a.hint("confirm"), timeout)
		confirmed := waitConfirmed(ctx, h, deadline)
		// Whoever removes the file decides: `rdmaform confirm` (keep) or this
		// process at the deadline (revert). A confirm that won the race just
		// now is honoured; one that comes later is told nothing waits.
		if !confirmed {
			if err := h.FS.Remove(ConfirmFile); errors.Is(err, fs.ErrNotExist) {
				confirmed = true
			}
		}
		if confirmed {
			fmt.Fprintln(a.msgs(), "Confirmed: the changes are kept.")
			return nil
		}
		if ctx.Err() != nil {
			fmt.Fprintln(a.msgs(), "Interrupted before confirmation: reverting.")
		} else {
			fmt.Fprintf(a.msgs(), "Not confirmed within %s: reverting.\n", timeout)
		}
	} else {
		fmt.Fprintln(a.msgs(), "The apply failed: reverting what it changed.")
	}
	progress, stop := a.progress()
	rev := apply.Revert(context.WithoutCancel(ctx), h, out.Done, providers.All(), apply.Options{Progress: progress})
	stop()
	fmt.Fprintf(a.msgs(), "Reverted %d changes: %s\n", len(rev.Applied), strings.Join(rev.Applied, ", "))
	if rev.Err != nil {
		return &exitError{code: plan.ExitError, err: fmt.Errorf("revert incomplete:\n%v", rev.Err)}
	}
	if failed {
		return nil
	}
	return &exitError{code: plan.ExitError, err: fmt.Errorf("not confirmed within %s: the changes were reverted", timeout)}
}

// waitConfirmed polls for the confirm file to disappear.
func waitConfirmed(ctx context.Context, h *host.Host, deadline time.Time) bool {
	for {
		if _, err := h.FS.Stat(ConfirmFile); errors.Is(err, fs.ErrNotExist) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (a *app) confirmCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "confirm",
		Short: "Keep the changes of an apply --confirm-timeout that waits for confirmation",
		Long: `An apply run with --confirm-timeout keeps its changes only if
'rdmaform confirm' runs on the same host before the timeout: run it once
you have checked you can still reach the host.

` + exitCodesHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := a.host()
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			if err := h.FS.Remove(ConfirmFile); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return &exitError{code: plan.ExitError, err: fmt.Errorf("nothing waits for confirmation on this host")}
				}
				return &exitError{code: plan.ExitError, err: err}
			}
			fmt.Fprintln(a.msgs(), "Confirmed.")
			return nil
		},
	}
}
