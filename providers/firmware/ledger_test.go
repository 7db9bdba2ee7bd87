package firmware

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/providers/firmware/mlxfmt"
)

// TestLedgerFile: the ledger is written 0600 under the host's root, read
// back as written, refused with its path when an entry lacks what it
// needs, and removed when its last entry goes.
func TestLedgerFile(t *testing.T) {
	dir := t.TempDir()
	f, err := host.NewRootFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	e := LedgerEntry{BootID: "b0", Device: "0000:3b:00.0", Parameter: "SRIOV_EN", Value: "True", Tool: MSTConfig}
	if err := updateLedger(f, func(l *Ledger) bool { l.Entries = append(l.Entries, e); return true }); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, LedgerPath)
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("ledger %v, %v: want mode 0600", fi, err)
	}
	l, err := ReadLedger(f)
	if err != nil || len(l.Entries) != 1 || *l.Find("0000:3b:00.0", "SRIOV_EN") != e {
		t.Fatalf("read back %+v, %v", l, err)
	}
	if err := os.WriteFile(file, []byte(`{"entries": [{"boot_id": "b0", "device": "0000:3b:00.0"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadLedger(f); err == nil || !strings.Contains(err.Error(), LedgerPath) || !strings.Contains(err.Error(), "entry 1") {
		t.Errorf("an entry without its parameter: %v", err)
	}
	if err := updateLedger(f, func(l *Ledger) bool { return true }); err == nil {
		t.Error("a ledger that cannot be read was rewritten")
	}
	if err := os.WriteFile(file, []byte(`{"entries": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := updateLedger(f, func(l *Ledger) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("an empty ledger stays: %v", err)
	}
}

// TestKeepEntry: after an apply a ledger entry stays while the spec asks
// for its value (written as the spec or the tool writes it: ETH, eth,
// ETH(2)) and the value is not current; it leaves when the value is
// current or the spec asks for another value or nothing.
func TestKeepEntry(t *testing.T) {
	const pci = "0000:3b:00.0"
	ib, eth := mlxfmt.Enum("IB", 1), mlxfmt.Enum("ETH", 2)
	for _, tc := range []struct {
		name    string
		staged  string
		asked   string // "" = the spec does not ask for the parameter
		current mlxfmt.Value
		keep    bool
	}{
		{"pending", "ETH", "ETH", ib, true},
		{"echoed, asked by name", "ETH(2)", "ETH", ib, true},
		{"by name, asked echoed", "ETH", "ETH(2)", ib, true},
		{"other case", "eth", "ETH", ib, true},
		{"current read fails", "ETH", "ETH", mlxfmt.Value{}, true},
		{"took", "ETH", "ETH", eth, false},
		{"echoed took", "ETH(2)", "ETH", eth, false},
		{"spec asks another value", "ETH(2)", "IB", ib, false},
		{"spec drops it", "ETH", "", ib, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := map[string]map[string]string{pci: {}}
			if tc.asked != "" {
				asked[pci]["LINK_TYPE_P1"] = tc.asked
			}
			current := map[string]map[string]mlxfmt.Value{pci: {}}
			if tc.current.Kind != mlxfmt.KindAbsent {
				current[pci]["LINK_TYPE_P1"] = tc.current
			}
			e := LedgerEntry{BootID: "b0", Device: pci, Parameter: "LINK_TYPE_P1", Value: tc.staged}
			if got := keepEntry(e, asked, current); got != tc.keep {
				t.Errorf("keepEntry(%s staged, %q asked, current %v) = %v, want %v", tc.staged, tc.asked, tc.current, got, tc.keep)
			}
		})
	}
}

// TestEntryCheck: what became of a ledger entry, from its parameter's row
// and this boot's ID.
func TestEntryCheck(t *testing.T) {
	ib, eth := mlxfmt.Enum("IB", 1), mlxfmt.Enum("ETH", 2)
	e := LedgerEntry{BootID: "b0", Device: "0000:3b:00.0", Parameter: "LINK_TYPE_P1", Value: "ETH"}
	echoed := e
	echoed.Value = "ETH(2)"
	for _, tc := range []struct {
		name  string
		entry LedgerEntry
		boot  string
		row   *mlxfmt.Param
		want  EntryState
	}{
		{"staged this boot", e, "b0", &mlxfmt.Param{Current: ib, NextBoot: eth}, EntryPending},
		{"a reboot did not take", e, "b1", &mlxfmt.Param{Current: ib, NextBoot: eth}, EntryFailed},
		{"echoed, a reboot did not take", echoed, "b1", &mlxfmt.Param{Current: ib, NextBoot: eth}, EntryFailed},
		{"no boot ID", e, "", &mlxfmt.Param{Current: ib, NextBoot: eth}, EntryPending},
		{"took", e, "b1", &mlxfmt.Param{Current: eth, NextBoot: eth}, EntryTook},
		{"echoed took", echoed, "b1", &mlxfmt.Param{Current: eth, NextBoot: eth}, EntryTook},
		{"un-staged", e, "b1", &mlxfmt.Param{Current: ib, NextBoot: ib}, EntryUnstaged},
		{"not read", e, "b1", nil, EntryUnread},
		{"no Current column", e, "b1", &mlxfmt.Param{NextBoot: eth}, EntryUnread},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.entry.Check(tc.boot, tc.row); got != tc.want {
				t.Errorf("Check = %s, want %s", got, tc.want)
			}
		})
	}
}
