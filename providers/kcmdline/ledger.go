package kcmdline

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/schema"
)

// LedgerPath is the staged ledger of kernel arguments, beside the
// firmware's (/var/lib/rdmaform/staged.json) and of the same shape: each
// argument a bootloader configuration was written for, with the boot it
// was written in, so that a later run tells an argument a reboot did not
// bring (an activation failure) from one that waits for its first reboot.
// It is a file of its own because the firmware provider's settling keeps
// only the firmware values a spec asks for.
const LedgerPath = "/var/lib/rdmaform/staged-cmdline.json"

// LedgerEntry is one staged argument.
type LedgerEntry struct {
	BootID   string    `json:"boot_id"`
	StagedAt time.Time `json:"staged_at"`
	// Arg is the spec's argument (KEY=VALUE, or KEY for an absent one).
	Arg    string `json:"arg"`
	Absent bool   `json:"absent,omitempty"`
	// Tool is what regenerated the bootloader's configuration; File what
	// rdmaform wrote.
	Tool string `json:"tool"`
	File string `json:"file"`
}

// Ledger is the staged ledger's content.
type Ledger struct {
	Entries []LedgerEntry `json:"entries"`
}

// ReadLedger reads the ledger (empty when the file does not exist).
func ReadLedger(f host.FS) (*Ledger, error) {
	l := &Ledger{}
	if _, err := host.ReadLedger(f, LedgerPath, l); err != nil {
		return nil, err
	}
	for i, e := range l.Entries {
		if e.Arg == "" || e.BootID == "" {
			return nil, fmt.Errorf("staged ledger %s: entry %d lacks its arg or boot_id; move the file away to start a new one", LedgerPath, i+1)
		}
	}
	return l, nil
}

// Find returns the entry of an argument, or nil.
func (l *Ledger) Find(arg string, absent bool) *LedgerEntry {
	if l == nil {
		return nil
	}
	for i := range l.Entries {
		if l.Entries[i].Arg == arg && l.Entries[i].Absent == absent {
			return &l.Entries[i]
		}
	}
	return nil
}

// writeLedger writes the ledger (0600), or removes the file when it is
// empty.
func writeLedger(f host.FS, l *Ledger) error {
	sort.SliceStable(l.Entries, func(i, j int) bool { return l.Entries[i].Arg < l.Entries[j].Arg })
	return host.WriteLedger(f, LedgerPath, l, len(l.Entries) == 0)
}

// DidNotTake says why an argument is an activation failure and what to do.
func (e LedgerEntry) DidNotTake(bootID string) string {
	what := "is not on"
	if e.Absent {
		what = "is still on"
	}
	other := "a later file in " + GrubDir
	switch e.Tool {
	case BootKernelInstall:
		other = "a boot entry kernel-install did not write (another entry token, a UKI with its own command line)"
	case BootGrubby:
		other = "a default entry grubby did not list, GRUB_CMDLINE_LINUX in /etc/default/grub written into the entries again by grub2-mkconfig --update-bls-cmdline"
	}
	return fmt.Sprintf("kernel argument %s did not take: %s was written for it and %s ran on %s (boot %s), and after a reboot it %s /proc/cmdline (this is boot %s). Something else decides the command line: %s, a cloud image's or the firmware's boot entry, or a second bootloader. rdmaform will not write it again; find what boots this host and fix it there",
		e.Arg, e.File, e.Tool, e.StagedAt.Format(time.RFC3339), e.BootID, what, bootID, other)
}

// Entry states, as status reports them (host.StagedState's).
const (
	StateWaits  = host.StagedWaits
	StateTook   = host.StagedTook
	StateFailed = host.StagedFailed
)

// Check tells an entry's state against the running command line and boot.
func (e LedgerEntry) Check(running []string, bootID string) string {
	return host.StagedState(satisfied(running, schema.KernelArg{Arg: e.Arg, Absent: e.Absent}), e.BootID, bootID)
}

// Running reads the running kernel's command line and this boot's ID.
func Running(f host.FS) ([]string, string, error) {
	b, err := f.ReadFile(ProcCmdline)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("reading %s: %w", ProcCmdline, err)
	}
	boot, _ := host.ReadAttr(f, BootIDPath)
	return ParseCmdline(string(b)), boot, nil
}

// DropTaken removes from the ledger the arguments the running kernel's
// command line has (they took), and returns how many entries are left.
// activate calls it, with or without a spec, so that an argument that
// took is not reported as waiting.
//
// Equivalent to: editing /var/lib/rdmaform/staged-cmdline.json
func DropTaken(h *host.Host) (int, error) {
	l, err := ReadLedger(h.FS)
	if err != nil || len(l.Entries) == 0 {
		return 0, err
	}
	running, boot, err := Running(h.FS)
	if err != nil {
		return len(l.Entries), err
	}
	var keep []LedgerEntry
	for _, e := range l.Entries {
		if e.Check(running, boot) != StateTook {
			keep = append(keep, e)
		}
	}
	if len(keep) == len(l.Entries) {
		return len(keep), nil
	}
	return len(keep), writeLedger(h.FS, &Ledger{Entries: keep})
}
