package gpudriver

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/schema"
)

// LedgerPath is the staged ledger of driver parameters, beside the
// firmware's and the kernel arguments' and of their shape: each
// parameter written to ConfFile that the running driver does not have
// yet, with the boot it was written in, so that a later run tells a value
// a reboot did not bring (an activation failure) from one that waits for
// the driver's next load.
const LedgerPath = "/var/lib/rdmaform/staged-nvidia.json"

// LedgerEntry is one staged parameter.
type LedgerEntry struct {
	BootID   string    `json:"boot_id"`
	StagedAt time.Time `json:"staged_at"`
	// Param is the module parameter (NVreg_...), Value the value written.
	Param string `json:"param"`
	Value int    `json:"value"`
	File  string `json:"file"`
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
		if e.Param == "" || e.BootID == "" {
			return nil, fmt.Errorf("staged ledger %s: entry %d lacks its param or boot_id; move the file away to start a new one", LedgerPath, i+1)
		}
	}
	return l, nil
}

// Find returns the entry of a parameter at a value, or nil.
func (l *Ledger) Find(param string, value int) *LedgerEntry {
	if l == nil {
		return nil
	}
	for i := range l.Entries {
		if l.Entries[i].Param == param && l.Entries[i].Value == value {
			return &l.Entries[i]
		}
	}
	return nil
}

// writeLedger writes the ledger (0600), or removes the file when it is
// empty.
func writeLedger(f host.FS, l *Ledger) error {
	sort.SliceStable(l.Entries, func(i, j int) bool { return l.Entries[i].Param < l.Entries[j].Param })
	return host.WriteLedger(f, LedgerPath, l, len(l.Entries) == 0)
}

// States of a staged parameter, as status reports them (host.StagedState's).
const (
	StateWaits  = host.StagedWaits
	StateTook   = host.StagedTook
	StateFailed = host.StagedFailed
)

// Check tells an entry's state against the running driver and this
// boot's ID (host.StagedState), and the driver's value ("absent" when it
// does not print the parameter, "not loaded" without a driver: then the
// entry waits for the driver's next load, whatever the boot).
func (e LedgerEntry) Check(d *inventory.NVIDIADriver, bootID string) (state, current string) {
	if d == nil || !d.Loaded {
		return StateWaits, "not loaded"
	}
	key, _ := schema.NVIDIAParamKey(e.Param)
	cur, ok := d.Params[key]
	current = "absent"
	if ok {
		current = strconv.FormatUint(uint64(cur), 10)
	}
	return host.StagedState(ok && cur == shown(e.Value), e.BootID, bootID), current
}

// DidNotTake says why a parameter is an activation failure and what to do.
func (e LedgerEntry) DidNotTake(bootID string, current string) string {
	return fmt.Sprintf("driver parameter %s=%d did not take: %s was written for it on %s (boot %s), and after a reboot /proc/driver/nvidia/params shows %s (this is boot %s). The driver did not read it when it loaded: an initramfs that carries the nvidia module and an older copy of /etc/modprobe.d (update-initramfs -u, or dracut -f), or a later file or the kernel command line (nvidia.%s=) setting it. rdmaform will not write it again; find what loads the driver and fix it there",
		e.Param, e.Value, e.File, e.StagedAt.Format(time.RFC3339), e.BootID, current, bootID, e.Param)
}
