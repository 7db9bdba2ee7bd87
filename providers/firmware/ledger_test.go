package firmware

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/host"
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
