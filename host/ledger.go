package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
)

// ReadLedger reads one of rdmaform's staged ledgers (a JSON document it
// wrote under /var/lib/rdmaform: the kernel arguments', the GPU driver
// parameters') into v, through ReadStateFile's bounds. It returns false
// when there is no such file. An error names the ledger, and a document
// that is not one rdmaform wrote says how to start over.
func ReadLedger(f FS, name string, v any) (bool, error) {
	data, err := ReadStateFile(f, name, MaxStateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("staged ledger %s: %w", name, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("staged ledger %s: not a ledger rdmaform wrote (%v); move it away to start a new one", name, err)
	}
	return true, nil
}

// WriteLedger writes v as the staged ledger name (indented JSON, 0600,
// its directory made), or removes the file when the ledger is empty.
func WriteLedger(f FS, name string, v any, empty bool) error {
	if empty {
		if err := f.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("staged ledger %s: %w", name, err)
		}
		return nil
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := f.MkdirAll(path.Dir(name), 0o755); err != nil {
		return fmt.Errorf("staged ledger %s: %w", name, err)
	}
	if err := f.WriteFile(name, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("staged ledger %s: %w", name, err)
	}
	return nil
}

// States of an entry of a staged ledger (kernel arguments, driver
// parameters), as status reports them.
const (
	// StagedWaits: written in this boot (or the boot is unknown), and
	// what loads it has not run since.
	StagedWaits = "pending"
	// StagedTook: the running system has the value.
	StagedTook = "took"
	// StagedFailed: written in an earlier boot, and the running system
	// does not have it: the reboot did not bring it (an activation
	// failure).
	StagedFailed = "failed"
)

// StagedState is the one rule every staged ledger's entries follow: an
// entry the running system has took; one written in this boot (or when
// the boot cannot be read) waits; any other is an activation failure.
func StagedState(took bool, stagedBoot, boot string) string {
	switch {
	case took:
		return StagedTook
	case boot == "" || stagedBoot == boot:
		return StagedWaits
	}
	return StagedFailed
}
