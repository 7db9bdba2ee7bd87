package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/session"
)

// journalState is what the rollback journal and the confirm file say of
// an apply --confirm-timeout: one that waits for its confirmation, one
// whose deadline passed with nothing left to roll it back, a journal
// that does not read back. status and plan report it.
type journalState struct {
	// Waiting: the confirm file is there (an apply asked for its
	// confirmation and nobody decided yet).
	Waiting bool `json:"waiting"`
	// PID is the apply's, ApplyRunning whether it still runs.
	PID          int  `json:"pid,omitempty"`
	ApplyRunning bool `json:"apply_running"`
	// Deadline is when the confirmation is due; Expired that it passed.
	Deadline *time.Time `json:"deadline,omitempty"`
	Expired  bool       `json:"expired"`
	// Watcher is what holds the deadline ("watcher pid N", "systemd timer
	// rdmaform-rollback.timer", "" when unknown), WatcherRunning whether
	// it is still there (nil when that cannot be told).
	Watcher        string `json:"watcher,omitempty"`
	WatcherRunning *bool  `json:"watcher_running,omitempty"`
	// Stranded: the deadline passed, and neither the apply nor a watcher
	// is there to roll the changes back: an operator must decide.
	Stranded bool `json:"stranded"`
	// Damage names a journal copy that does not read back; Lost says that
	// no copy does (nothing can roll the apply back).
	Damage string `json:"damage,omitempty"`
	Lost   bool   `json:"lost"`
	// Addresses are the resources the apply changed.
	Addresses []string `json:"addresses,omitempty"`
}

// readJournalState reads the journal and the confirm file; nil when
// neither says anything (no journal, or only a rollback that failed
// part-way, which status reports on its own).
func (a *app) readJournalState(ctx context.Context, h *host.Host) *journalState {
	st := &journalState{}
	if _, err := h.FS.Lstat(ConfirmFile); err == nil {
		st.Waiting = true
	}
	j, err := session.ReadJournal(h)
	var dmg *session.DamagedError
	switch {
	case errors.As(err, &dmg):
		st.Damage, st.Lost = dmg.Error(), true
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		st.Damage, st.Lost = err.Error(), true
	case j != nil:
		st.Damage = j.Damage
	}
	if b, err := host.ReadStateFile(h.FS, damagedBootJournal, host.MaxStateFile); err == nil {
		// rollback --after-boot found the only copy damaged.
		st.Damage, st.Lost = strings.TrimSpace(string(b)), true
	}
	if j == nil && !st.Waiting && st.Damage == "" {
		return nil
	}
	if j != nil && j.Unfinished != nil && !st.Waiting {
		return nil // status's unfinished rollback says it
	}
	if j != nil {
		d := j.Deadline
		st.PID, st.Deadline, st.Addresses = j.PID, &d, j.Addresses
		a.watcherOf(ctx, j, st)
	} else if pid, d, ok := confirmFileSays(h); ok {
		st.PID, st.Deadline = pid, &d
	}
	st.ApplyRunning = host.ProcessAlive(st.PID)
	st.Expired = st.Deadline != nil && time.Now().After(*st.Deadline)
	watcherGone := st.WatcherRunning == nil || !*st.WatcherRunning
	st.Stranded = st.Expired && !st.ApplyRunning && (watcherGone || st.Lost)
	return st
}

// watcherOf fills in what holds j's deadline and whether it still runs.
func (a *app) watcherOf(ctx context.Context, j *session.Journal, st *journalState) {
	yes, no := true, false
	if mgr := journalManager(j); mgr != nil {
		defer mgr.Close()
		st.Watcher = "systemd timer " + rollbackUnit + ".timer"
		timer, err := mgr.TimerActive(ctx, rollbackUnit)
		if err != nil {
			return // cannot be told
		}
		service, err := mgr.Unit(ctx, rollbackUnit+".service")
		if timer || (err == nil && service.Active()) {
			st.WatcherRunning = &yes
		} else {
			st.WatcherRunning = &no
		}
		return
	}
	if j.WatcherPID > 0 {
		st.Watcher = "watcher pid " + strconv.Itoa(j.WatcherPID)
		if host.ProcessAlive(j.WatcherPID) {
			st.WatcherRunning = &yes
		} else {
			st.WatcherRunning = &no
		}
	}
}

// confirmFileSays reads the apply's pid and deadline from the confirm
// file ("pid N, revert at RFC3339"), for a journal that does not read
// back.
func confirmFileSays(h *host.Host) (int, time.Time, bool) {
	note, err := session.ReadNote(h, ConfirmFile)
	if err != nil {
		return 0, time.Time{}, false
	}
	var pid int
	var at string
	if _, err := fmt.Sscanf(note, "pid %d, revert at %s", &pid, &at); err != nil {
		return 0, time.Time{}, false
	}
	d, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return 0, time.Time{}, false
	}
	return pid, d, true
}

// lines is the state in status's and plan's text: "!" lines.
func (st *journalState) lines(hint func(args ...string) string) []string {
	var out []string
	if st.Damage != "" {
		if st.Lost {
			out = append(out, fmt.Sprintf("the rollback journal is damaged: %s: nothing can roll the apply back; check the host, then run '%s' to keep it as it is", st.Damage, hint("rollback", "--abandon")))
		} else {
			out = append(out, "the rollback journal is damaged: "+st.Damage)
		}
	}
	if st.PID == 0 && st.Deadline == nil {
		return out
	}
	apply := fmt.Sprintf("the apply of pid %d (%s)", st.PID, runningWord(st.ApplyRunning))
	watcher := "no watcher is known"
	if st.Watcher != "" {
		switch {
		case st.WatcherRunning == nil:
			watcher = st.Watcher + ", whose state cannot be read"
		case *st.WatcherRunning:
			watcher = st.Watcher + " (running)"
		default:
			watcher = st.Watcher + " (gone)"
		}
	}
	deadline := ""
	if st.Deadline != nil {
		deadline = st.Deadline.Local().Format(time.RFC3339)
	}
	switch {
	case st.Stranded:
		out = append(out, fmt.Sprintf("%s was not confirmed by %s, and nothing is left to roll it back (%s): its changes are still in place. Run '%s' to put them back, or '%s' to keep them",
			apply, deadline, watcher, hint("rollback"), hint("rollback", "--abandon")))
	case st.Expired:
		out = append(out, fmt.Sprintf("%s was not confirmed by %s: its rollback is due (%s)", apply, deadline, watcher))
	case st.Waiting:
		out = append(out, fmt.Sprintf("%s waits for confirmation until %s (in %s; %s): run '%s' to keep its changes, '%s' to undo them",
			apply, deadline, time.Until(*st.Deadline).Round(time.Second), watcher, hint("confirm"), hint("rollback")))
	default:
		out = append(out, fmt.Sprintf("%s has not asked for confirmation yet; its rollback journal is armed until %s (%s)", apply, deadline, watcher))
	}
	return out
}

func runningWord(alive bool) string {
	if alive {
		return "running"
	}
	return "gone"
}

// stuck: an operator must act or look (exit 1): a journal copy is
// damaged (lost, or its copy stands in), or the apply is stranded past
// its deadline.
func (st *journalState) stuck() bool { return st != nil && (st.Damage != "" || st.Stranded) }

// warnJournal says on stderr, for plan, what of the rollback journal
// needs an operator: an apply past its deadline (stranded or with its
// rollback due) or a damaged journal; the plan is the host as it is now,
// and its changes would be refused until then.
func (a *app) warnJournal(ctx context.Context, h *host.Host) {
	st := a.readJournalState(ctx, h)
	if st == nil || (!st.Expired && st.Damage == "") {
		return
	}
	for _, l := range st.lines(a.hint) {
		fmt.Fprintf(a.env.Stderr, "rdmaform: warning: %s\n", l)
	}
}
