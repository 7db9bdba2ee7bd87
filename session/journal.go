package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// The rollback that survives rdmaform: apply --confirm-timeout writes a
// journal before its first change (the host's state before it, as a spec,
// and the resources the plan touches) and starts a watcher, a copy of
// rdmaform in a session of its own. If nobody confirms by the deadline,
// the watcher converges the touched resources back to that state, even
// when the apply was killed (SIGKILL, OOM) or its SSH session dropped.
const (
	// JournalFile is the undo journal (mode 0600).
	JournalFile = "/run/rdmaform/rollback.json"
	// RolledBackFile says when and what a rollback put back, for a
	// confirm that comes too late.
	RolledBackFile = "/run/rdmaform/rolled-back"
	// BootJournalFile is the journal's copy that outlives a reboot: the
	// boot unit rolls back an apply nobody confirmed before it
	// (rollback --after-boot).
	BootJournalFile = "/var/lib/rdmaform/unconfirmed.json"
)

// Journal is the undo journal.
type Journal struct {
	// PID is the apply that armed it.
	PID int `json:"pid"`
	// Deadline is when the confirmation is due. Armed before the first
	// change as the confirm timeout from then; once the changes are made
	// and the operator is asked (Asked), the timeout from the question.
	// Until the apply asks, the watcher leaves a living apply alone,
	// however long it takes, and rolls back a dead one at once: nobody
	// can confirm an apply that never asked.
	Deadline time.Time `json:"deadline"`
	Asked    bool      `json:"asked,omitempty"`
	// Addresses are the resources the plan touches; the rollback makes
	// no other change.
	Addresses []string `json:"addresses"`
	// Spec is the host's state before the apply, as a spec (show's
	// capture, plus absent entries for what the plan creates).
	Spec string `json:"spec"`
	// NMCheckpoint is NetworkManager's own checkpoint (its D-Bus path),
	// when the plan changes NetworkManager profiles: the daemon rolls
	// active connections back at the deadline by itself, and deletes the
	// profiles the apply added; the journal's spec covers inactive ones.
	NMCheckpoint string `json:"nm_checkpoint,omitempty"`
	// Systemd is the service manager holding the rollback timer
	// (the CLI's rdmaform-rollback.timer): "system", or the D-Bus address of a manager's
	// private socket; "" when a detached watcher holds the deadline.
	Systemd string `json:"systemd,omitempty"`
	// Files are the files the plan's changes write, as they were before
	// the apply (files.go): the rollback puts each back byte for
	// byte, or removes it when there was none.
	Files []FileState `json:"files,omitempty"`
	// BootSpec is the boot unit's spec copy before the apply, in a
	// journal written before Files held it ("" when there was none).
	BootSpec *string `json:"boot_spec,omitempty"`
	// Loaded are the modules the apply loads: the rollback unloads them
	// (as the apply's own revert does), after everything else; a
	// rollback that failed part-way keeps those it did not unload.
	Loaded []string `json:"loaded,omitempty"`
	// Unfinished is set by a rollback that failed part-way: the journal
	// stays (both copies) so that the next 'rdmaform rollback' retries,
	// and status names what is left.
	Unfinished *Unfinished `json:"unfinished,omitempty"`
	// WatcherPID is the detached watcher holding the deadline (0 when a
	// systemd timer holds it, or none was started): status tells whether
	// it still runs.
	WatcherPID int `json:"watcher_pid,omitempty"`

	// Damage names the live journal's damage when it was read from its
	// copy (LoadJournal); "" when the live journal read back.
	Damage string `json:"-"`
}

// Unfinished is what a rollback that failed part-way left to undo.
type Unfinished struct {
	At time.Time `json:"at"`
	By string    `json:"by"`
	// Failed are the resources not put back (failed, or skipped because
	// an undo they depend on failed).
	Failed []string `json:"failed"`
	Error  string   `json:"error"`
}

// Write stores the journal and its copy that outlives a reboot.
func (j *Journal) Write(h *host.Host) error {
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	if len(b) > host.MaxStateFile {
		// It would not read back: refused before it stands for anything.
		return fmt.Errorf("the rollback journal would be %d bytes, over the %d bytes it may hold (the files the plan writes are too large to record): apply without --confirm-timeout", len(b), host.MaxStateFile)
	}
	if err := h.FS.WriteFile(JournalFile, b, 0o600); err != nil {
		return fmt.Errorf("writing the rollback journal: %w", err)
	}
	if err := h.FS.WriteFile(BootJournalFile, b, 0o600); err != nil {
		return fmt.Errorf("writing the rollback journal's copy for a reboot: %w", err)
	}
	return nil
}

// KeepUnfinished records a rollback that failed part-way in the journal,
// which stays, and writes the note a confirm or the waiting apply reads.
// It returns the error to report.
func KeepUnfinished(h *host.Host, j *Journal, who string, done []plan.Address, failed []plan.Address, cause error, retry string) error {
	now := time.Now().UTC()
	u := &Unfinished{At: now, By: who, Failed: []string{}, Error: cause.Error()}
	for _, a := range UniqueAddrs(failed) {
		u.Failed = append(u.Failed, a.String())
	}
	j.Unfinished = u
	werr := j.Write(h)
	put := "nothing"
	if len(done) > 0 {
		put = plan.JoinAddrs(UniqueAddrs(done), ", ")
	}
	still := strings.Join(u.Failed, ", ")
	if still == "" {
		still = "see the errors"
	}
	note := fmt.Sprintf("partly rolled back at %s by %s: put back %s; still to undo: %s (the journal is kept: run '%s' to retry)\n", now.Format(time.RFC3339), who, put, still, retry)
	_ = h.FS.WriteFile(RolledBackFile, []byte(note), 0o644)
	return errors.Join(fmt.Errorf("rollback incomplete (still to undo: %s; run '%s' to retry):\n%v", still, retry, cause), werr)
}

// ReadJournal reads the journal (LoadJournal of h's files).
func ReadJournal(h *host.Host) (*Journal, error) { return LoadJournal(h.FS) }

// ReadJournalFile reads one copy of the journal, name (JournalFile or
// BootJournalFile): a regular file of at most host.MaxStateFile bytes
// that holds a journal rdmaform wrote, else a *host.StateFileError that
// names the damage. A missing copy is fs.ErrNotExist.
func ReadJournalFile(h *host.Host, name string) (*Journal, error) { return readCopy(h.FS, name) }

func readCopy(f host.FS, name string) (*Journal, error) {
	b, err := host.ReadStateFile(f, name, host.MaxStateFile)
	if err != nil {
		return nil, err
	}
	j := &Journal{}
	if err := json.Unmarshal(b, j); err != nil {
		return nil, &host.StateFileError{Path: name, Err: fmt.Errorf("not a journal rdmaform wrote (%d bytes: %v)", len(b), err)}
	}
	if j.PID <= 0 || j.Deadline.IsZero() || j.Spec == "" {
		return nil, &host.StateFileError{Path: name, Err: fmt.Errorf("not a journal rdmaform wrote (%d bytes: no pid, deadline or spec)", len(b))}
	}
	return j, nil
}

// DamagedError is a journal neither copy of which reads back: the state
// before the apply is lost, so nothing can roll it back. Copies are the
// damage of each copy there is.
type DamagedError struct {
	Copies []error
}

func (e *DamagedError) Error() string {
	var s []string
	for _, c := range e.Copies {
		s = append(s, c.Error())
	}
	return "the rollback journal is damaged and has no intact copy: " + strings.Join(s, "; ")
}

// LoadJournal reads the live journal (JournalFile). Where it is damaged
// (not a regular file, over the bound, not a journal), its copy
// (BootJournalFile, written with it) stands in, and Damage names what was
// wrong with the live one; where both are, a *DamagedError. A missing
// live journal is fs.ErrNotExist whatever the copy holds: a copy alone is
// what a reboot left (rollback --after-boot).
func LoadJournal(f host.FS) (*Journal, error) {
	j, err := readCopy(f, JournalFile)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return j, err
	}
	live := err
	j, err = readCopy(f, BootJournalFile)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("%s: missing", BootJournalFile)
		}
		return nil, &DamagedError{Copies: []error{live, err}}
	}
	j.Damage = fmt.Sprintf("%v; read its copy %s instead", live, BootJournalFile)
	return j, nil
}

// Disarm drops the journal: the changes are kept, or already reverted.
func Disarm(h *host.Host) {
	_ = h.FS.Remove(BootJournalFile)
	_ = h.FS.Remove(JournalFile)
}

// ConfirmFile exists while an apply with a confirm timeout waits for
// `rdmaform confirm`; confirm removes it (rooted under --root/--sim).
const ConfirmFile = "/run/rdmaform/confirm-pending"

// MaxNote bounds the notes rdmaform leaves beside the journal
// (ConfirmFile, RolledBackFile): a line or a few.
const MaxNote = 64 << 10

// ReadNote reads one of those notes, bounded and only from a regular
// file (host.ReadStateFile), without its trailing newline.
func ReadNote(h *host.Host, name string) (string, error) {
	b, err := host.ReadStateFile(h.FS, name, MaxNote)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(b), " \n"), nil
}

// UniqueAddrs is addrs with each address once, in the order first met: a
// rollback puts a resource back with more than one change (a module's
// modules-load.d entry and its unload), and names it once.
func UniqueAddrs(addrs []plan.Address) []plan.Address {
	var out []plan.Address
	for _, a := range addrs {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}
