package firmware

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/firmware/mlxfmt"
)

// LedgerPath is the staged ledger: every firmware value an apply staged,
// with the boot it was staged in, so that a later run can tell a value a
// reboot did not activate (an activation failure) from one that waits for
// its first reboot.
const LedgerPath = "/var/lib/rdmaform/staged.json"

// BootIDPath is the kernel's identity of this boot; it changes on every boot.
const BootIDPath = "/proc/sys/kernel/random/boot_id"

// LedgerEntry is one staged value.
type LedgerEntry struct {
	BootID    string    `json:"boot_id"`
	StagedAt  time.Time `json:"staged_at"`
	Device    string    `json:"device"`
	Parameter string    `json:"parameter"`
	Value     string    `json:"value"`
	Tool      string    `json:"tool"`
	// Activation is plan.ByPowerCycle when the tool said, as it staged
	// the value, that only a power cycle loads it (mlxfmt.
	// SetPowerCycleNotice); empty otherwise.
	Activation string `json:"activation,omitempty"`
}

// Ledger is the staged ledger's content.
type Ledger struct {
	Entries []LedgerEntry `json:"entries"`
}

// LedgerError is a ledger file that could not be read or written.
type LedgerError struct {
	Path string
	Err  error
}

func (e *LedgerError) Error() string {
	return fmt.Sprintf("staged ledger %s: %v", e.Path, e.Err)
}

func (e *LedgerError) Unwrap() error { return e.Err }

// ReadLedger reads the staged ledger through the host's FS (an empty
// ledger when the file does not exist).
func ReadLedger(f host.FS) (*Ledger, error) {
	// Bounded, and only a regular file: a ledger is a few kilobytes.
	data, err := host.ReadStateFile(f, LedgerPath, host.MaxStateFile)
	if errors.Is(err, fs.ErrNotExist) {
		data, err = nil, nil
	}
	if sf := (*host.StateFileError)(nil); errors.As(err, &sf) {
		err = sf.Err // the path is the LedgerError's
	}
	if err != nil {
		return nil, &LedgerError{Path: LedgerPath, Err: err}
	}
	l := &Ledger{}
	if data == nil {
		return l, nil
	}
	if err := json.Unmarshal(data, l); err != nil {
		return nil, &LedgerError{Path: LedgerPath, Err: fmt.Errorf("not a ledger rdmaform wrote (%v); move it away to start a new one", err)}
	}
	for i, e := range l.Entries {
		if e.Device == "" || e.Parameter == "" || e.BootID == "" {
			return nil, &LedgerError{Path: LedgerPath, Err: fmt.Errorf("entry %d lacks its device, parameter or boot_id; move the file away to start a new one", i+1)}
		}
	}
	return l, nil
}

// Find returns the entry of a device's parameter, or nil.
func (l *Ledger) Find(pci, param string) *LedgerEntry {
	if l == nil {
		return nil
	}
	for i := range l.Entries {
		if l.Entries[i].Device == pci && l.Entries[i].Parameter == param {
			return &l.Entries[i]
		}
	}
	return nil
}

// ledgerMu serialises the ledger's read-modify-write: the firmware sets of
// several cards run at once.
var ledgerMu sync.Mutex

// updateLedger rewrites the ledger (0600, atomically) with fn's changes,
// and removes the file when no entry is left. It writes nothing when fn
// changes nothing.
func updateLedger(f host.FS, fn func(*Ledger) bool) error {
	ledgerMu.Lock()
	defer ledgerMu.Unlock()
	l, err := ReadLedger(f)
	if err != nil {
		return err
	}
	if !fn(l) {
		return nil
	}
	if len(l.Entries) == 0 {
		if err := f.Remove(LedgerPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return &LedgerError{Path: LedgerPath, Err: err}
		}
		return nil
	}
	sort.SliceStable(l.Entries, func(i, j int) bool {
		a, b := l.Entries[i], l.Entries[j]
		if a.Device != b.Device {
			return a.Device < b.Device
		}
		return a.Parameter < b.Parameter
	})
	data, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return &LedgerError{Path: LedgerPath, Err: err}
	}
	if err := f.MkdirAll(path.Dir(LedgerPath), 0o755); err != nil {
		return &LedgerError{Path: LedgerPath, Err: err}
	}
	if err := f.WriteFile(LedgerPath, append(data, '\n'), 0o600); err != nil {
		return &LedgerError{Path: LedgerPath, Err: err}
	}
	return nil
}

// recordStaged adds (or replaces) the ledger entries of the values a set
// just staged: the boot ID, the time, the device, parameter, value, tool,
// and plan.ByPowerCycle when the set's output (out) said only a power
// cycle loads them. A value set back to the one that runs (Current at
// plan time: Revert's, or a spec's that un-stages) waits for nothing: its
// entry leaves the ledger instead. waits tells whether a value the set
// staged waits for a reboot, left how many entries the ledger holds now.
func recordStaged(h *host.Host, out []byte, pls ...*payload) (waits bool, left int, err error) {
	by := ""
	if mlxfmt.SetNeedsPowerCycle(out) {
		by = plan.ByPowerCycle
	}
	boot, err := host.ReadAttr(h.FS, BootIDPath)
	if err != nil {
		return false, 0, &LedgerError{Path: LedgerPath, Err: fmt.Errorf("reading the boot ID: %w", err)}
	}
	now := time.Now().UTC().Truncate(time.Second)
	err = updateLedger(h.FS, func(l *Ledger) bool {
		for _, pl := range pls {
			for _, s := range pl.sets {
				name := setName(s)
				value, ok := pl.values[name]
				if !ok {
					// Nothing says what was staged: an empty value would
					// be an entry no check can read.
					value = strings.TrimPrefix(s, name+"=")
				}
				if cur, ok := pl.current[name]; ok && cur.Kind != mlxfmt.KindAbsent && mlxfmt.Equal(value, cur) {
					l.Entries = slices.DeleteFunc(l.Entries, func(e LedgerEntry) bool { return e.Device == pl.pci && e.Parameter == name })
					continue
				}
				waits = true
				e := LedgerEntry{BootID: boot, StagedAt: now, Device: pl.pci, Parameter: name, Value: value, Tool: pl.tool, Activation: by}
				if old := l.Find(pl.pci, name); old != nil {
					*old = e
				} else {
					l.Entries = append(l.Entries, e)
				}
			}
		}
		left = len(l.Entries)
		return true
	})
	return waits, left, err
}

// sameStaged tells whether a ledger entry's value is the value a spec
// asks for. Either may be written as the operator writes it (ETH, eth, 2)
// or as the tool echoes it (ETH(2)): besides sameMeaning, each is read as
// a table value and compared with the other by the rule Next Boot and
// Current values are compared with (mlxfmt.Equal), so ETH(2) and ETH agree
// and ETH(2) and IB do not.
func sameStaged(staged, asked string) bool {
	return sameMeaning(staged, asked) ||
		mlxfmt.Equal(asked, mlxfmt.ParseValue(staged)) ||
		mlxfmt.Equal(staged, mlxfmt.ParseValue(asked))
}

// keepEntry tells whether a ledger entry still stands: the spec asks for
// its value on its device, and the value is not current.
func keepEntry(e LedgerEntry, asked map[string]map[string]string, current map[string]map[string]mlxfmt.Value) bool {
	want, ok := asked[e.Device][e.Parameter]
	if !ok || !sameStaged(e.Value, want) {
		return false
	}
	cur, ok := current[e.Device][e.Parameter]
	return !ok || !mlxfmt.Equal(e.Value, cur)
}

// Settle implements plan.Settler: after an apply, the ledger keeps only
// the entries the spec still asks for whose value is not current yet (a
// value that became current, or that the spec no longer asks for, leaves).
//
// Equivalent to: editing /var/lib/rdmaform/staged.json
func (p *Provider) Settle(ctx context.Context, h *host.Host, res *plan.Result) error {
	obs := plan.Observation[*Observed](res.Observed[p.Name()])
	if obs == nil || obs.LedgerErr != nil || obs.Ledger == nil || len(obs.Ledger.Entries) == 0 {
		return nil
	}
	asked := map[string]map[string]string{}
	current := map[string]map[string]mlxfmt.Value{}
	for _, t := range targets(res.Request) {
		for _, prm := range res.Request.Spec.Devices[t.index].Firmware.Params {
			if asked[t.pci] == nil {
				asked[t.pci] = map[string]string{}
			}
			asked[t.pci][prm.Name] = prm.Value
		}
		a := obs.Adapters[t.index]
		if a == nil || a.Err != nil {
			continue
		}
		current[t.pci] = map[string]mlxfmt.Value{}
		for name, prm := range a.Params {
			current[t.pci][name] = prm.Current
		}
	}
	return updateLedger(h.FS, func(l *Ledger) bool {
		var keep []LedgerEntry
		for _, e := range l.Entries {
			if e.Parameter == LedgerImage {
				if keepImageEntry(e, res.Request) {
					keep = append(keep, e)
				}
				continue
			}
			if keepEntry(e, asked, current) {
				keep = append(keep, e)
			}
		}
		changed := len(keep) != len(l.Entries)
		l.Entries = keep
		return changed
	})
}

// EntryState is what became of a ledger entry, read against its adapter
// now (status without a spec).
type EntryState string

// The states of a ledger entry.
const (
	// EntryPending: staged in this boot, still Next Boot, not current.
	EntryPending EntryState = "pending"
	// EntryFailed: staged in an earlier boot, still Next Boot, not
	// current: an activation failure.
	EntryFailed EntryState = "failed"
	// EntryTook: current now; the next apply drops the entry.
	EntryTook EntryState = "took"
	// EntryUnstaged: neither current nor Next Boot (staged back by other
	// means); the next apply drops the entry or stages it again.
	EntryUnstaged EntryState = "unstaged"
	// EntryUnread: the adapter or its parameter could not be read, or
	// the tool does not show Current: nothing can be said.
	EntryUnread EntryState = "unread"
)

// Check tells what became of the entry on a host in boot bootID, from
// its parameter's row (nil: not read). A host without a boot ID (a --root
// copy) cannot tell a reboot: a value not current is pending there. Values
// compare by sameStaged's and mlxfmt.Equal's rules (ETH and ETH(2) agree).
func (e LedgerEntry) Check(bootID string, row *mlxfmt.Param) EntryState {
	switch {
	case row == nil || row.Current.Kind == mlxfmt.KindAbsent:
		return EntryUnread
	case mlxfmt.Equal(e.Value, row.Current):
		return EntryTook
	case !mlxfmt.Equal(e.Value, row.NextBoot):
		return EntryUnstaged
	case bootID != "" && e.BootID != bootID:
		return EntryFailed
	}
	return EntryPending
}

// PowerCycle is how the entry's value can become current when the tool
// said, as it staged it, that only a power cycle loads it; nil otherwise.
func (e *LedgerEntry) PowerCycle() *plan.ActivateBy {
	if e == nil || e.Activation != plan.ByPowerCycle {
		return nil
	}
	return &plan.ActivateBy{By: plan.ByPowerCycle, Why: fmt.Sprintf("%s said so when it staged %s=%s on %s at %s (%q): neither a firmware reset nor a warm reboot loads it; power-cycle the host",
		e.Tool, e.Parameter, e.Value, e.Device, e.StagedAt.Format(time.RFC3339), mlxfmt.SetPowerCycleNotice)}
}

// SaidPowerCycle returns how a value staged on the card of pci can
// become current when the ledger records that the tool said only a power
// cycle loads it (the entry of param on any function of the card, with
// that value); nil otherwise.
func (l *Ledger) SaidPowerCycle(pci, param, value string) *plan.ActivateBy {
	if l == nil {
		return nil
	}
	for i := range l.Entries {
		e := &l.Entries[i]
		if slotOf(e.Device) == slotOf(pci) && e.Parameter == param && sameStaged(e.Value, value) {
			if a := e.PowerCycle(); a != nil {
				return a
			}
		}
	}
	return nil
}

// DidNotTake says why a staged value is an activation failure and what to
// do: when and in which boot it was staged, the value still running, this
// boot. When the tool said, as it staged it, that only a power cycle
// loads it, that is what it says to do.
func (e LedgerEntry) DidNotTake(value, current, bootID string) string {
	if e.Activation == plan.ByPowerCycle {
		return fmt.Sprintf("%s=%s did not take: it was staged on %s at %s (boot %s), when %s said %q, and a reboot has not made it current (%s still runs %s; this is boot %s). rdmaform will not stage it again: power-cycle the host (power off and on, through the BMC or PDU); neither a reboot nor a firmware reset loads it",
			e.Parameter, value, e.Device, e.StagedAt.Format(time.RFC3339), e.BootID, e.Tool, mlxfmt.SetPowerCycleNotice, e.Device, current, bootID)
	}
	return fmt.Sprintf("%s=%s did not take: it was staged on %s at %s (boot %s) and a reboot has not made it current (%s still runs %s; this is boot %s): the firmware was not reloaded. rdmaform will not stage it again: power-cycle the host, or reset the adapter's firmware with rdmaform activate --by fw-reset (it takes the VFs down and back, applies the runtime settings again and verifies; by hand: mstfwreset -d %s reset, or mlxfwreset with MFT)",
		e.Parameter, value, e.Device, e.StagedAt.Format(time.RFC3339), e.BootID, e.Device, current, bootID, e.Device)
}

// DropTaken removes from the staged ledger the entries whose value runs
// now (EntryTook: a firmware reset or a reboot loaded it), read from each
// entry's adapter (one query of the entry's parameters per card; a burned
// image against the function's running firmware version). Entries that
// cannot be read, or that still wait, stay. It returns how many entries
// are left. activate calls it after its resets, and again on the next
// run when it was cut short, so that a value that runs is not reported
// as staged.
//
// Equivalent to: mstconfig -d PCI query PARAM...; editing /var/lib/rdmaform/staged.json
func DropTaken(ctx context.Context, h *host.Host) (int, error) {
	l, err := ReadLedger(h.FS)
	if err != nil || len(l.Entries) == 0 {
		return 0, err
	}
	running := map[string]string{}
	if inv, err := inventory.Discover(ctx, h); err == nil {
		for _, d := range inv.Devices {
			if d.PCI != "" {
				running[d.PCI] = d.FWVer
			}
		}
	}
	boot, _ := host.ReadAttr(h.FS, BootIDPath)
	names := map[string][]string{} // card -> parameters
	first := map[string]string{}   // card -> the function to query
	var cards []string
	for _, e := range l.Entries {
		if e.Parameter == LedgerImage {
			continue
		}
		slot := slotOf(e.Device)
		if _, ok := first[slot]; !ok {
			first[slot] = e.Device
			cards = append(cards, slot)
		}
		if !slices.Contains(names[slot], e.Parameter) {
			names[slot] = append(names[slot], e.Parameter)
		}
	}
	rows := map[string]map[string]mlxfmt.Param{}
	tools, mst := &ToolPicker{}, &MSTMap{}
	for _, slot := range cards {
		if !host.Exists(h.FS, "/sys/bus/pci/devices/"+first[slot]) {
			continue
		}
		if a := ReadAdapter(ctx, h, tools, mst, "auto", first[slot], names[slot]); a.Err == nil {
			rows[slot] = a.Params
		}
	}
	left := 0
	err = updateLedger(h.FS, func(l *Ledger) bool {
		var keep []LedgerEntry
		for _, e := range l.Entries {
			var st EntryState
			if e.Parameter == LedgerImage {
				st = e.CheckImage(boot, running[e.Device])
			} else if r, ok := rows[slotOf(e.Device)][e.Parameter]; ok {
				st = e.Check(boot, &r)
			}
			if st != EntryTook {
				keep = append(keep, e)
			}
		}
		changed := len(keep) != len(l.Entries)
		l.Entries, left = keep, len(keep)
		return changed
	})
	return left, err
}
