package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/words"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers"
	"github.com/rdmaform/rdmaform/session"
)

// ConfirmFile exists while an apply --confirm-timeout waits for
// `rdmaform confirm`; confirm removes it (rooted under --root/--sim).
const ConfirmFile = session.ConfirmFile

// awaitConfirm waits for `rdmaform confirm` until the deadline armed
// before the first change; without it, every change of this apply is
// reverted, last first, and the revert is reported. The journal and the
// watcher armRollback set up cover the case where this process dies.
func (a *app) awaitConfirm(ctx context.Context, h *host.Host, out apply.Outcome, timeout time.Duration, failed bool) error {
	if len(out.Done) == 0 {
		_ = h.FS.Remove(ConfirmFile)
		if j, err := session.ReadJournal(h); err == nil {
			a.endArmed(context.WithoutCancel(ctx), j, true)
		}
		session.Disarm(h)
		return nil
	}
	if !failed {
		// The operator gets the whole timeout from the question on, however
		// long the apply took: the journal says so before the question is
		// asked (the watcher reads its deadline there), and NetworkManager's
		// checkpoint is moved to the same deadline.
		deadline := time.Now().Add(timeout)
		if j, err := session.ReadJournal(h); err == nil {
			j.Deadline, j.Asked = deadline.UTC(), true
			if err := j.Write(h); err != nil {
				return &exitError{code: plan.ExitError, err: fmt.Errorf("recording the pending confirmation: %w", err)}
			}
			a.adjustCheckpoint(ctx, j.NMCheckpoint, timeout)
		}
		if err := h.FS.WriteFile(ConfirmFile, []byte(fmt.Sprintf("pid %d, revert at %s\n", os.Getpid(), deadline.UTC().Format(time.RFC3339))), 0o600); err != nil {
			return &exitError{code: plan.ExitError, err: fmt.Errorf("recording the pending confirmation: %w", err)}
		}
		fmt.Fprintf(a.msgs(), "Applied %d %s. Run '%s' within %s to keep them; otherwise they are reverted.\n", len(out.Done), words.Plural(len(out.Done), "change", "changes"), a.hint("confirm"), timeout)
		confirmed := waitConfirmed(ctx, h, deadline)
		// Whoever removes the file decides: `rdmaform confirm` (keep),
		// `rdmaform rollback`, the watcher or this process at the deadline
		// (revert). A decision taken just now by another is honoured.
		if !confirmed {
			if err := h.FS.Remove(ConfirmFile); errors.Is(err, fs.ErrNotExist) {
				confirmed = true
			}
		}
		if confirmed {
			if note, rolledBack := a.decidedElsewhere(h); rolledBack {
				fmt.Fprintln(a.msgs(), "Not kept: the changes were rolled back.")
				return &exitError{code: plan.ExitError, err: fmt.Errorf("the changes were %s", note)}
			}
			fmt.Fprintln(a.msgs(), "Confirmed: the changes are kept.")
			return nil
		}
		if ctx.Err() != nil {
			fmt.Fprintln(a.msgs(), "Interrupted before confirmation: reverting.")
		} else {
			fmt.Fprintf(a.msgs(), "Not confirmed within %s: reverting.\n", timeout)
		}
	} else {
		_ = h.FS.Remove(ConfirmFile)
		fmt.Fprintln(a.msgs(), "The apply failed: reverting what it changed.")
	}
	if j, err := session.ReadJournal(h); err == nil {
		a.endArmed(context.WithoutCancel(ctx), j, false)
	}
	progress, stop := a.progress()
	rev := apply.Revert(context.WithoutCancel(ctx), h, out.Done, providers.All(), apply.Options{Progress: progress, Grace: apply.DefaultGrace})
	stop()
	fmt.Fprintf(a.msgs(), "Reverted %d changes: %s\n", len(rev.Applied), plan.JoinAddrs(rev.Applied, ", "))
	if rev.Err != nil {
		// The journal stays for 'rdmaform rollback' (or the watcher) to
		// retry, and status names what is left.
		if j, err := session.ReadJournal(h); err == nil {
			return &exitError{code: plan.ExitError, err: session.KeepUnfinished(h, j, "the apply itself", rev.Applied, append(append([]plan.Address{}, rev.Failed...), rev.Skipped...), rev.Err, a.hint("rollback"))}
		}
		return &exitError{code: plan.ExitError, err: fmt.Errorf("revert incomplete:\n%v", rev.Err)}
	}
	_ = h.FS.WriteFile(RolledBackFile, []byte(fmt.Sprintf("rolled back at %s by the apply itself: %s\n", time.Now().UTC().Format(time.RFC3339), plan.JoinAddrs(rev.Applied, ", "))), 0o644)
	session.Disarm(h)
	if failed {
		return nil
	}
	if ctx.Err() != nil {
		// A signal ended the wait, not the clock.
		return &exitError{code: plan.ExitError, err: fmt.Errorf("interrupted before confirmation: the changes were reverted")}
	}
	return &exitError{code: plan.ExitError, err: fmt.Errorf("not confirmed within %s: the changes were reverted", timeout)}
}

// decidedElsewhere tells, once another process removed the confirm file,
// whether it rolled the changes back (and its note) or confirmed them.
// confirm drops the journal before it removes the confirm file, and no
// rollback note exists then (arming removed it); 'rdmaform rollback' and
// the watcher remove the confirm file first and write the note when
// their rollback is over, whether it dropped the journal or, incomplete,
// kept it. So: a note is a rollback; a journal without a note is a
// rollback under way, waited for; neither is a confirmation.
func (a *app) decidedElsewhere(h *host.Host) (string, bool) {
	for start := time.Now(); ; {
		note, err := session.ReadNote(h, RolledBackFile)
		if err == nil && note != "" {
			return strings.TrimSpace(note), true
		}
		if _, err := session.ReadJournal(h); errors.Is(err, fs.ErrNotExist) {
			// The journal went: confirmed, unless the note was written
			// between the two reads.
			if note, err := session.ReadNote(h, RolledBackFile); err == nil && note != "" {
				return strings.TrimSpace(note), true
			}
			return "", false
		}
		if time.Since(start) > rollbackWait {
			return fmt.Sprintf("taken out of this apply's hands, and no rollback has finished within %s: its journal is still there; see '%s', or run '%s'", rollbackWait, a.hint("status"), a.hint("rollback")), true
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// rollbackWait bounds how long a waiting apply waits for a rollback that
// another process took over to finish.
const rollbackWait = 5 * time.Minute

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
			// Past its deadline, an apply that is gone cannot be confirmed:
			// nobody confirmed it in time, and its rollback is due (its
			// watcher's, or, with none left, the operator's).
			if st := a.readJournalState(cmd.Context(), h); st != nil && st.Waiting && st.Expired && !st.ApplyRunning {
				return &exitError{code: plan.ExitError, err: a.tooLate(st)}
			}
			// Only an apply that waits can be confirmed; then the journal
			// goes first: an apply that sees the confirm file gone and the
			// journal still there takes it for a rollback.
			if _, err := h.FS.Lstat(ConfirmFile); err == nil {
				if j, err := session.ReadJournal(h); err == nil {
					a.endArmed(cmd.Context(), j, true)
				}
				session.Disarm(h)
			}
			if err := h.FS.Remove(ConfirmFile); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					if note, err := session.ReadNote(h, RolledBackFile); err == nil && note != "" {
						return &exitError{code: plan.ExitError, err: fmt.Errorf("too late: the changes were %s", note)}
					}
					return &exitError{code: plan.ExitError, err: fmt.Errorf("nothing waits for confirmation on this host")}
				}
				return &exitError{code: plan.ExitError, err: err}
			}
			session.Disarm(h)
			fmt.Fprintln(a.msgs(), "Confirmed.")
			return nil
		},
	}
}

// tooLate is confirm's refusal of an apply past its deadline whose
// process is gone: the changes stay until the rollback that is due, or
// the operator, decides.
func (a *app) tooLate(st *journalState) error {
	when := "its deadline"
	if st.Deadline != nil {
		when = st.Deadline.Local().Format(time.RFC3339)
	}
	if st.Stranded {
		return fmt.Errorf("too late: the apply of pid %d was not confirmed by %s, and nothing is left to roll it back (the apply and its rollback watcher are gone); its changes are still in place, unconfirmed. Run '%s' to put them back, or '%s' to keep them",
			st.PID, when, a.hint("rollback"), a.hint("rollback", "--abandon"))
	}
	return fmt.Errorf("too late: the apply of pid %d was not confirmed by %s and its rollback is due (%s): nothing was confirmed. Run '%s' to roll back now, or '%s' to keep the changes",
		st.PID, when, st.Watcher, a.hint("rollback"), a.hint("rollback", "--abandon"))
}
