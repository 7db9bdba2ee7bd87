package firmware

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"golang.org/x/sys/unix"
)

// TestLedgerReadBound: a ledger of exactly host.MaxStateFile bytes reads
// back; one byte more is refused by its size before it is read (a 35 MB
// ledger took 14 s and 366 MB to read); a FIFO at its name is refused at
// once instead of blocking.
func TestLedgerReadBound(t *testing.T) {
	dir := t.TempDir()
	f, err := host.NewRootFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, LedgerPath)
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	entry := `{"entries":[{"boot_id":"b0","device":"0000:3b:00.0","parameter":"SRIOV_EN","value":"True","tool":"mstconfig","staged_at":"2026-11-29T00:00:00Z"}]}`
	for _, size := range []int{host.MaxStateFile, host.MaxStateFile + 1} {
		// JSON allows the padding: the file is a valid ledger either way.
		if err := os.WriteFile(file, []byte(entry+strings.Repeat(" ", size-len(entry))), 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := ReadLedger(f)
		if size <= host.MaxStateFile {
			if err != nil || len(l.Entries) != 1 {
				t.Errorf("a ledger of %d bytes: %v", size, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "staged ledger "+LedgerPath) || !strings.Contains(err.Error(), "over the") {
			t.Errorf("a ledger of %d bytes: %v, want refused by its size", size, err)
		}
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(file, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadLedger(f); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "is a FIFO") {
			t.Errorf("a FIFO ledger: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadLedger blocked on a FIFO")
	}
}
