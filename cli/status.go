package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/words"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/firmware"
	"github.com/rdmaform/rdmaform/providers/firmware/mlxfmt"
	"github.com/rdmaform/rdmaform/providers/gpudriver"
	"github.com/rdmaform/rdmaform/providers/kcmdline"
	"github.com/rdmaform/rdmaform/schema"
	"github.com/rdmaform/rdmaform/session"
)

func (a *app) statusCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "status [-f SPEC] [-o text|json]",
		Short: "List what waits for a reboot, read from the host",
		Long: `List what waits for a reboot: firmware values staged for the next boot
(Next Boot differs from Current) and /run/reboot-required. Everything is
read from the host now, nothing from a cache. With -f SPEC only the
spec's firmware parameters are queried (fast); without it every adapter
gets a full query, and each entry of the staged ledger
(/var/lib/rdmaform/staged.json) is checked against it: staged in this
boot and waiting for a reboot, current now, no longer staged, or staged in
an earlier boot and still not current (an activation failure: a reboot
did not reload the firmware). An entry whose value cannot be read back
(no tool, no adapter) waits for a reboot when it was staged in this boot,
and cannot be checked when it was staged in an earlier one.

The kernel arguments apply wrote for the next boot (kernel_args; their
ledger is /var/lib/rdmaform/staged-cmdline.json) are listed too, each
checked against /proc/cmdline: written in this boot and waiting for a
reboot, on the running kernel's command line (took), or written in an
earlier boot and not there (an activation failure). So are the NVIDIA
driver parameters (gpu.driver_params; /var/lib/rdmaform/staged-nvidia.json),
checked against /proc/driver/nvidia/params: waiting for the driver's next
load, in the running driver (took), or missing from the driver loaded
after a reboot (an activation failure).

It also names an apply --confirm-timeout that waits for its confirmation
(its deadline, whether the apply and the watcher or timer holding the
deadline still run), one whose deadline passed with nothing left to roll
it back, and a rollback journal that is damaged (and whether its copy
stands in).

Exit codes: 0 nothing waits for a reboot; 1 error, an activation failure,
an entry of an earlier boot that cannot be checked, a rollback that
failed part-way, an unconfirmed apply past its deadline with nothing left
to roll it back, or a damaged rollback journal; 3 a reboot is
needed (an entry of this boot that cannot be read back waits for one).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := a.host()
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			defer a.recordSimCalls()
			var st statusOf
			if file != "" {
				spec, err := a.loadSpec(file)
				if err != nil {
					return err
				}
				res, err := plan.Build(cmd.Context(), h, spec, []plan.Provider{firmware.New()})
				if err != nil {
					return &exitError{code: plan.ExitError, err: err}
				}
				for _, f := range res.Plan.Errors {
					if !res.Plan.ActivationFailed(f) {
						return &exitError{code: plan.ExitError, err: &findingsError{Name: spec.Src.File, Report: res.Plan.Errors}}
					}
					st.failed = append(st.failed, f)
				}
				st.pending, st.failures = res.Plan.Pending, res.Plan.ActivationFailures
			} else {
				fw, err := readAllFirmware(cmd.Context(), h, a.env.Stderr)
				if err != nil {
					return &exitError{code: plan.ExitError, err: err}
				}
				st.pending = fw.pending
				if err := st.checkLedger(h, fw); err != nil {
					return &exitError{code: plan.ExitError, err: err}
				}
				st.full = fw.unread == ""
			}
			if err := st.checkKernelArgs(h); err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			if err := st.checkDriverParams(h); err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			marker, err := firmware.ReadRebootMarker(h)
			if err != nil {
				return &exitError{code: plan.ExitError, err: err}
			}
			st.journal = a.readJournalState(cmd.Context(), h)
			return a.printStatus(st, marker, unfinishedRollback(h))
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "spec `FILE` (- for stdin): query only its firmware parameters")
	a.outputFlag(cmd, "text", "text", "json")
	a.hostFlags(cmd)
	return cmd
}

// statusDoc is `status -o json`.
type statusDoc struct {
	FormatVersion int            `json:"format_version"`
	Pending       []plan.Pending `json:"pending"`
	// ActivationFailures are staged values a reboot did not activate:
	// exit 1.
	ActivationFailures []plan.ActivationFailure `json:"activation_failures,omitempty"`
	// BootID is this boot's (status without -f, with a staged ledger).
	BootID string `json:"boot_id,omitempty"`
	// Staged are the staged ledger's entries, each checked against its
	// adapter (status without -f).
	Staged []stagedItem `json:"staged,omitempty"`
	// KernelArgs are the kernel command line's staged ledger
	// (/var/lib/rdmaform/staged-cmdline.json), each entry checked against
	// the running kernel's /proc/cmdline.
	KernelArgs []kernelArgItem `json:"kernel_args,omitempty"`
	// DriverParams are the NVIDIA driver parameters' staged ledger
	// (/var/lib/rdmaform/staged-nvidia.json), each entry checked against
	// the running driver's /proc/driver/nvidia/params.
	DriverParams []driverParamItem `json:"driver_params,omitempty"`
	// RebootRequiredFile is /run/reboot-required (Debian's marker).
	RebootRequiredFile struct {
		Present  bool     `json:"present"`
		Packages []string `json:"packages"`
	} `json:"reboot_required_file"`
	RebootRequired bool `json:"reboot_required"`
	// UnfinishedRollback is a rollback that failed part-way: what it
	// left to undo (its journal stays for 'rdmaform rollback' to retry).
	UnfinishedRollback *session.Unfinished `json:"unfinished_rollback,omitempty"`
	// RollbackJournal is an apply --confirm-timeout's: one that waits for
	// its confirmation, one past its deadline, a damaged journal (exit 1
	// when stranded or lost).
	RollbackJournal *journalState `json:"rollback_journal,omitempty"`
}

// unfinishedRollback is what a rollback that failed part-way left, from
// its journal (the live one, else its copy that outlived a reboot).
func unfinishedRollback(h *host.Host) *session.Unfinished {
	for _, f := range []string{JournalFile, BootJournalFile} {
		if j, err := session.ReadJournalFile(h, f); err == nil {
			return j.Unfinished
		}
	}
	return nil
}

// kernelArgItem is one entry of the kernel command line's staged ledger
// in status's document.
type kernelArgItem struct {
	// Arg is the argument (KEY=VALUE, or KEY), Absent whether it is to be
	// absent from the command line.
	Arg    string `json:"arg"`
	Absent bool   `json:"absent,omitempty"`
	// File is what rdmaform wrote, Tool what wrote the boot entries.
	File     string `json:"file"`
	Tool     string `json:"tool"`
	StagedAt string `json:"staged_at"`
	BootID   string `json:"staged_boot_id"`
	// State: pending (written in this boot, waits for a reboot), took
	// (the running kernel has it) or failed (written in an earlier boot,
	// and the running kernel does not have it: an activation failure).
	State       string `json:"state"`
	EarlierBoot bool   `json:"earlier_boot"`

	entry kcmdline.LedgerEntry
}

// checkKernelArgs reads the kernel command line's staged ledger and
// checks each entry against /proc/cmdline and this boot's ID.
func (st *statusOf) checkKernelArgs(h *host.Host) error {
	l, err := kcmdline.ReadLedger(h.FS)
	if err != nil || len(l.Entries) == 0 {
		return err
	}
	running, boot, err := kcmdline.Running(h.FS)
	if err != nil {
		return err
	}
	st.argsBootID = boot
	for _, e := range l.Entries {
		st.kernelArgs = append(st.kernelArgs, kernelArgItem{Arg: e.Arg, Absent: e.Absent, File: e.File, Tool: e.Tool, StagedAt: e.StagedAt.Format(time.RFC3339),
			BootID: e.BootID, State: e.Check(running, boot), EarlierBoot: boot != "" && e.BootID != boot, entry: e})
	}
	return nil
}

// argsWait and argsFailed tell whether a kernel argument waits for a
// reboot, or did not take after one.
func (st *statusOf) argsWait() bool   { return st.argsIn(kcmdline.StateWaits) }
func (st *statusOf) argsFailed() bool { return st.argsIn(kcmdline.StateFailed) }

func (st *statusOf) argsIn(state string) bool {
	for _, it := range st.kernelArgs {
		if it.State == state {
			return true
		}
	}
	return false
}

// line is a kernel argument's entry in status's text.
func (it kernelArgItem) line(bootID string) string {
	what := it.Arg
	if it.Absent {
		what += " (to be absent)"
	}
	when := "in this boot"
	if it.EarlierBoot {
		when = "in boot " + it.BootID + " (an earlier boot)"
	}
	what = fmt.Sprintf("%s: %s written at %s %s, %s ran", what, it.File, it.StagedAt, when, it.Tool)
	switch it.State {
	case kcmdline.StateFailed:
		return "  ! " + it.entry.DidNotTake(bootID)
	case kcmdline.StateTook:
		return "    " + what + ": on /proc/cmdline now; the next apply or activate drops the entry"
	}
	return "    " + what + ": waits for a reboot"
}

// statusOf is what status read from the firmware: pending values, and
// activation failures with their findings (-f) or the staged ledger's
// entries (without -f).
type statusOf struct {
	pending  []plan.Pending
	failures []plan.ActivationFailure
	failed   []schema.Finding
	bootID   string
	staged   []stagedItem
	journal  *journalState
	// full: every adapter was read and the ledger checked (no -f).
	full bool
	// kernelArgs are the kernel command line's ledger entries, checked
	// in boot argsBootID.
	kernelArgs []kernelArgItem
	argsBootID string
	// driverParams are the NVIDIA driver parameters' ledger entries,
	// checked in boot paramsBootID.
	driverParams []driverParamItem
	paramsBootID string
}

// staleMarker tells whether /run/reboot-required is rdmaform's alone
// and nothing rdmaform staged waits, read in full: a run cut short after
// its firmware reset (activate killed) left it. It does not count.
func (st *statusOf) staleMarker(m firmware.RebootMarker) bool {
	if !st.full || !m.Required || len(m.Packages) != 1 || m.Packages[0] != "rdmaform" || len(st.pending) > 0 || len(st.failures) > 0 || st.argsWait() || st.paramsWait() {
		return false
	}
	for _, it := range st.staged {
		if it.State == firmware.EntryPending || it.State == firmware.EntryUnread {
			return false
		}
	}
	return true
}

// stagedItem is one staged ledger entry in status's document, and what
// became of it in this boot.
type stagedItem struct {
	Address   plan.Address `json:"address"`
	Attribute string       `json:"attribute"`
	Value     string       `json:"value"`
	StagedAt  string       `json:"staged_at"`
	BootID    string       `json:"staged_boot_id"`
	Tool      string       `json:"tool"`
	// State: pending, failed (an activation failure), took, unstaged or
	// unread (firmware.EntryState).
	State firmware.EntryState `json:"state"`
	// EarlierBoot: staged in another boot than this one.
	EarlierBoot bool `json:"earlier_boot"`
	// Activation is power-cycle when the tool said, as it staged the
	// value, that only a power cycle loads it.
	Activation string `json:"activation,omitempty"`
	// Current is the value running now, when it was read.
	Current string `json:"current,omitempty"`
	// Reason says why an unread entry could not be checked.
	Reason string `json:"reason,omitempty"`

	entry firmware.LedgerEntry
}

// checkLedger reads the staged ledger and this boot's ID and checks each
// entry against its card's rows of the full query: an activation failure
// is one of st.failures too.
func (st *statusOf) checkLedger(h *host.Host, fw *fwRead) error {
	l, err := firmware.ReadLedger(h.FS)
	if err != nil {
		return err
	}
	if len(l.Entries) == 0 {
		return nil
	}
	st.bootID, _ = host.ReadAttr(h.FS, firmware.BootIDPath)
	for _, e := range l.Entries {
		it := stagedItem{Address: firmware.Address(e.Device), Attribute: e.Parameter, Value: e.Value, StagedAt: e.StagedAt.Format(time.RFC3339),
			BootID: e.BootID, Tool: e.Tool, EarlierBoot: st.bootID != "" && e.BootID != st.bootID, Activation: e.Activation, entry: e}
		if e.Parameter == firmware.LedgerImage {
			st.checkImage(it, fw)
			continue
		}
		var row *mlxfmt.Param
		rows, read := fw.rows[pciSlot(e.Device)]
		switch {
		case fw.unread != "":
			it.Reason = fw.unread
		case !read:
			it.Reason = "no RDMA adapter at " + e.Device + " on this host"
		default:
			if r, ok := rows[e.Parameter]; ok {
				row = &r
				it.Current = r.Current.Display()
			} else {
				it.Reason = fmt.Sprintf("the query of %s printed no row for %s", e.Device, e.Parameter)
			}
		}
		it.State = e.Check(st.bootID, row)
		if it.State == firmware.EntryUnread && it.Reason == "" {
			it.Reason = "the tool does not show the current value of " + e.Parameter
		}
		if it.State == firmware.EntryFailed {
			st.failures = append(st.failures, plan.ActivationFailure{Address: it.Address, Attribute: e.Parameter, Current: it.Current,
				Staged: e.Value, StagedAt: it.StagedAt, BootID: e.BootID, Tool: e.Tool, Activation: e.PowerCycle()})
			st.pending = slices.DeleteFunc(st.pending, func(pe plan.Pending) bool {
				// Not pending: a reboot did not activate it (as in the plan).
				return pe.Attribute == e.Parameter && pciSlot(pe.Address.Key) == pciSlot(e.Device)
			})
		}
		st.staged = append(st.staged, it)
	}
	return nil
}

// checkImage checks a burned image's ledger entry against the running
// firmware version of its adapter function.
func (st *statusOf) checkImage(it stagedItem, fw *fwRead) {
	e := it.entry
	it.Address = firmware.ImageAddress(e.Device)
	it.Current = fw.running[e.Device]
	it.State = e.CheckImage(st.bootID, it.Current)
	if it.State == firmware.EntryUnread {
		it.Reason = "no RDMA adapter at " + e.Device + " reports its firmware version on this host"
	}
	if it.State == firmware.EntryFailed {
		st.failures = append(st.failures, plan.ActivationFailure{Address: it.Address, Attribute: "version", Current: it.Current,
			Staged: e.Value, StagedAt: it.StagedAt, BootID: e.BootID, Tool: e.Tool})
	}
	st.staged = append(st.staged, it)
}

// line is the entry in status's text: a "!" line when it is an error.
func (it stagedItem) line(bootID string) string {
	when := "in this boot"
	switch {
	case bootID == "":
		when = "in boot " + it.BootID + " (this host has no boot ID: a reboot cannot be told)"
	case it.EarlierBoot:
		when = "in boot " + it.BootID + " (an earlier boot; this is boot " + bootID + ")"
	}
	what := fmt.Sprintf("%s %s=%s staged at %s %s with %s", it.Address, it.Attribute, it.Value, it.StagedAt, when, it.Tool)
	switch it.State {
	case firmware.EntryFailed:
		return "  ! " + it.Address.String() + " " + it.entry.DidNotTake(it.Value, it.Current, bootID)
	case firmware.EntryUnread:
		if !it.EarlierBoot {
			return "  ! " + what + ": waits for a reboot (its value cannot be read back: " + it.Reason + ")"
		}
		return "  ! " + what + ": cannot be checked: " + it.Reason
	case firmware.EntryTook:
		return "    " + what + ": current now; the next apply drops the entry"
	case firmware.EntryUnstaged:
		return "    " + what + ": no longer staged (current " + it.Current + "); the next apply drops the entry or stages it again"
	}
	if it.Activation == plan.ByPowerCycle {
		return "    " + what + ": waits for a power cycle (" + it.Tool + " said so when it staged it)"
	}
	return "    " + what + ": waits for a reboot"
}

func (a *app) printStatus(st statusOf, m firmware.RebootMarker, u *session.Unfinished) (err error) {
	pending := st.pending
	stale := st.staleMarker(m)
	if stale {
		m.Required = false // only its presence is reported
	}
	if a.jsonOut() {
		doc := statusDoc{FormatVersion: FormatVersion, Pending: pending, ActivationFailures: st.failures, RebootRequired: len(pending) > 0 || m.Required || st.unreadWaits() || st.argsWait() || st.paramsWait(), UnfinishedRollback: u,
			BootID: st.bootID, Staged: st.staged, KernelArgs: st.kernelArgs, DriverParams: st.driverParams, RollbackJournal: st.journal}
		if doc.Pending == nil {
			doc.Pending = []plan.Pending{}
		}
		doc.RebootRequiredFile.Present = m.Required || stale
		doc.RebootRequiredFile.Packages = append([]string{}, m.Packages...)
		if err := a.writeJSON(doc); err != nil {
			return err
		}
		if u != nil || len(st.failures) > 0 || st.unchecked() || st.journal.stuck() || st.argsFailed() || st.paramsFailed() {
			return exitCode(plan.ExitError)
		}
		if doc.RebootRequired {
			return exitCode(plan.ExitReboot)
		}
		return nil
	}
	w := a.env.Stdout
	if u != nil {
		fmt.Fprintf(w, "  ! a rollback failed part-way (%s, by %s): still to undo %s: %s\n    run '%s' to retry\n",
			u.At.Format(time.RFC3339), u.By, strings.Join(u.Failed, ", "), u.Error, a.hint("rollback"))
		defer func() { err = exitCode(plan.ExitError) }()
	}
	if st.journal != nil {
		for _, l := range st.journal.lines(a.hint) {
			fmt.Fprintf(w, "  ! %s\n", l)
		}
		if st.journal.stuck() {
			defer func() { err = exitCode(plan.ExitError) }()
		}
	}
	for _, f := range st.failed {
		fmt.Fprintf(w, "  ! %s\n", words.Printable(f.String()))
	}
	if len(st.failed) > 0 {
		defer func() { err = exitCode(plan.ExitError) }()
	}
	for _, pe := range pending {
		fmt.Fprintf(w, "  ! %s\n", pe.Text())
	}
	if len(st.staged) > 0 {
		fmt.Fprintf(w, "Staged ledger (%s):\n", firmware.LedgerPath)
		for _, it := range st.staged {
			// The ledger may be edited by hand: escaped, one line each.
			fmt.Fprintln(w, words.Printable(it.line(st.bootID)))
		}
		if len(st.failures) > 0 || st.unchecked() {
			defer func() { err = exitCode(plan.ExitError) }()
		}
	}
	if len(st.kernelArgs) > 0 {
		fmt.Fprintf(w, "Staged kernel arguments (%s):\n", kcmdline.LedgerPath)
		for _, it := range st.kernelArgs {
			fmt.Fprintln(w, words.Printable(it.line(st.argsBootID)))
		}
		if st.argsFailed() {
			defer func() { err = exitCode(plan.ExitError) }()
		}
	}
	if len(st.driverParams) > 0 {
		fmt.Fprintf(w, "Staged NVIDIA driver parameters (%s):\n", gpudriver.LedgerPath)
		for _, it := range st.driverParams {
			fmt.Fprintln(w, words.Printable(it.line(st.paramsBootID)))
		}
		if st.paramsFailed() {
			defer func() { err = exitCode(plan.ExitError) }()
		}
	}
	if stale {
		fmt.Fprintf(w, "    %s lists only rdmaform, and nothing rdmaform staged waits: a run cut short after its firmware reset left it (the next %s or %s removes it)\n",
			firmware.RebootRequired, a.hint("apply"), a.hint("activate"))
	}
	if m.Required {
		line := "  ! " + firmware.RebootRequired + " is present"
		if len(m.Packages) > 0 {
			line += " (" + strings.Join(m.Packages, ", ") + ")"
		}
		fmt.Fprintln(w, words.Printable(line))
	}
	if len(pending) == 0 && !m.Required && !st.unreadWaits() && !st.argsWait() && !st.paramsWait() {
		fmt.Fprintln(w, "Nothing waits for a reboot.")
		return nil
	}
	fmt.Fprintln(w, "Reboot required.")
	return exitCode(plan.ExitReboot)
}

// unchecked tells whether an entry staged in an earlier boot could not
// be checked: whether the reboot activated it is unknown (exit 1).
func (st *statusOf) unchecked() bool {
	for _, it := range st.staged {
		if it.State == firmware.EntryUnread && it.EarlierBoot {
			return true
		}
	}
	return false
}

// unreadWaits tells whether an entry staged in this boot could not be
// read back: no reboot came since it was staged, so it waits for one.
func (st *statusOf) unreadWaits() bool {
	for _, it := range st.staged {
		if it.State == firmware.EntryUnread && !it.EarlierBoot {
			return true
		}
	}
	return false
}

// fwRead is what status read of every adapter's firmware.
type fwRead struct {
	// pending are the values whose Next Boot differs from Current.
	pending []plan.Pending
	// rows are each card's query rows by parameter, by PCI slot (the
	// card's functions share them).
	rows map[string]map[string]mlxfmt.Param
	// unread says why no firmware was read at all ("" when it was).
	unread string
	// running is each PCI function's running firmware (fw_ver), for the
	// ledger's burned images.
	running map[string]string
}

// pciSlot is a PCI function's card: 0000:3b:00.1 → 0000:3b:00.
func pciSlot(pci string) string {
	if i := strings.LastIndexByte(pci, '.'); i >= 0 {
		return pci[:i]
	}
	return pci
}

// pendingAll is readAllFirmware's pending values.
func pendingAll(ctx context.Context, h *host.Host, warn io.Writer) ([]plan.Pending, error) {
	fw, err := readAllFirmware(ctx, h, warn)
	if err != nil {
		return nil, err
	}
	return fw.pending, nil
}

// readAllFirmware queries every adapter's whole firmware configuration,
// one PCI function per card (the functions share it), in parallel, and
// lists the values whose Next Boot differs from Current. A host without a
// firmware tool or without adapters has nothing pending here.
func readAllFirmware(ctx context.Context, h *host.Host, warn io.Writer) (*fwRead, error) {
	fw, err := readAdapters(ctx, h, warn)
	if err != nil {
		return nil, err
	}
	if l, err := firmware.ReadLedger(h.FS); err == nil {
		for i, pe := range fw.pending {
			if pc := l.SaidPowerCycle(pe.Address.Key, pe.Attribute, pe.NextBoot); pc != nil {
				fw.pending[i].Activation = pc // the tool said so when it staged it
			}
		}
	}
	fw.pending = append(fw.pending, burnedImages(ctx, h, fw.running)...)
	return fw, nil
}

// burnedImages are the pending items of the staged ledger's burned
// images that wait for their first firmware reload in this boot (the
// function does not run the burned version yet), each with how it can
// become current, as the plan says of them. A ledger that cannot be read
// has none here (status's ledger check reports it).
//
// Equivalent to: cat /var/lib/rdmaform/staged.json; mstfwreset -d 0000:3b:00.0 query
func burnedImages(ctx context.Context, h *host.Host, running map[string]string) []plan.Pending {
	l, err := firmware.ReadLedger(h.FS)
	if err != nil {
		return nil
	}
	boot, _ := host.ReadAttr(h.FS, firmware.BootIDPath)
	tools := &firmware.ToolPicker{}
	var out []plan.Pending
	for _, e := range l.Entries {
		if e.Parameter != firmware.LedgerImage || e.CheckImage(boot, running[e.Device]) != firmware.EntryPending {
			continue
		}
		out = append(out, plan.Pending{Address: firmware.ImageAddress(e.Device), Attribute: "version", Current: running[e.Device], NextBoot: e.Value,
			Activation: firmware.Activation(ctx, h, tools, e.Tool, e.Device)})
	}
	return out
}

// readAdapters is readAllFirmware's query of every adapter.
func readAdapters(ctx context.Context, h *host.Host, warn io.Writer) (*fwRead, error) {
	fw := &fwRead{rows: map[string]map[string]mlxfmt.Param{}, running: map[string]string{}}
	inv, err := inventory.Discover(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("reading RDMA devices from sysfs: %w", err)
	}
	for _, d := range inv.Devices {
		if d.PCI != "" {
			fw.running[d.PCI] = d.FWVer
		}
	}
	seen := map[string]bool{}
	var pcis []string
	for _, d := range inv.Devices {
		if d.PCI == "" || !host.Exists(h.FS, "/sys/bus/pci/devices/"+d.PCI) {
			continue
		}
		if slot := pciSlot(d.PCI); !seen[slot] {
			seen[slot] = true
			pcis = append(pcis, d.PCI)
		}
	}
	sort.Strings(pcis)
	if len(pcis) == 0 {
		return fw, nil
	}
	tools := &firmware.ToolPicker{}
	if _, err := tools.Pick(ctx, h, "auto"); err != nil {
		if errors.Is(err, firmware.ErrNoTool) {
			fmt.Fprintf(warn, "rdmaform: firmware not read: %v\n", err)
			fw.unread = "firmware not read: " + err.Error()
			return fw, nil
		}
		return nil, err
	}
	mst := &firmware.MSTMap{}
	obs := make([]*firmware.AdapterObs, len(pcis))
	var wg sync.WaitGroup
	for i, pci := range pcis {
		wg.Add(1)
		go func() {
			defer wg.Done()
			obs[i] = firmware.ReadAdapter(ctx, h, tools, mst, "auto", pci, nil)
		}()
	}
	wg.Wait()
	for i, o := range obs {
		if o.Err != nil {
			return nil, fmt.Errorf("%s: %w", firmware.Address(pcis[i]), o.Err)
		}
		fw.rows[pciSlot(pcis[i])] = o.Params
		var names []string
		for n, p := range o.Params {
			if p.Pending() {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		var act *plan.ActivateBy
		if len(names) > 0 {
			act = firmware.Activation(ctx, h, tools, o.Tool, pcis[i])
		}
		for _, n := range names {
			p := o.Params[n]
			fw.pending = append(fw.pending, plan.Pending{Address: firmware.Address(pcis[i]), Attribute: n, Current: p.Current.Display(), NextBoot: p.NextBoot.Display(), Activation: act})
		}
	}
	return fw, nil
}
