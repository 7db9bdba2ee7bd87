package session_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/session"
)

// TestJournalBound: a journal of exactly host.MaxStateFile bytes reads
// back, one byte more is refused by its size (and its copy stands in,
// named); Write refuses a journal that would not read back, before it
// stands for anything.
func TestJournalBound(t *testing.T) {
	h := open(t)
	j := &session.Journal{PID: 1, Deadline: time.Now().Add(time.Hour), Addresses: []string{"module[rdma_ucm]"}, Spec: "version: 1\n"}
	if err := j.Write(h); err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(h.FS.Root(), session.JournalFile)
	b, err := os.ReadFile(live)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{host.MaxStateFile, host.MaxStateFile + 1} {
		if err := os.WriteFile(live, append(append([]byte{}, b...), []byte(strings.Repeat(" ", size-len(b)))...), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := session.ReadJournal(h)
		switch {
		case err != nil:
			t.Errorf("%d bytes: %v", size, err)
		case size <= host.MaxStateFile && got.Damage != "":
			t.Errorf("%d bytes: read as damaged: %s", size, got.Damage)
		case size > host.MaxStateFile && !strings.Contains(got.Damage, "over the"):
			t.Errorf("%d bytes: damage %q, want it named by its size", size, got.Damage)
		}
	}
	// Neither copy reads back: a *DamagedError naming both.
	copyPath := filepath.Join(h.FS.Root(), session.BootJournalFile)
	if err := os.WriteFile(copyPath, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	var dmg *session.DamagedError
	if _, err := session.ReadJournal(h); !errors.As(err, &dmg) || !strings.Contains(err.Error(), session.JournalFile) || !strings.Contains(err.Error(), "unexpected end of JSON input") {
		t.Errorf("both copies damaged: %v", err)
	}
	// Write: a journal of exactly the bound is written (and reads back),
	// one byte more is refused.
	at := &session.Journal{PID: 1, Deadline: time.Now().UTC(), Spec: ""}
	empty, err := json.MarshalIndent(at, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	at.Spec = strings.Repeat("x", host.MaxStateFile-len(empty))
	if err := at.Write(h); err != nil {
		t.Errorf("a journal of exactly %d bytes: %v", host.MaxStateFile, err)
	}
	if fi, err := os.Stat(live); err != nil || fi.Size() != host.MaxStateFile {
		t.Errorf("the journal written at the bound: %v, %v", fi, err)
	}
	if got, err := session.ReadJournal(h); err != nil || got.Damage != "" || len(got.Spec) != len(at.Spec) {
		t.Errorf("the journal at the bound reads back: %v", err)
	}
	at.Spec += "x"
	if err := at.Write(h); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Errorf("a journal one byte over the bound was written: %v", err)
	}
}

// TestNoteBound: the notes beside the journal (the confirm file, the
// rollback note) are read up to session.MaxNote bytes: at the bound they
// read, one past it they are refused by their size; a FIFO there is
// refused at once.
func TestNoteBound(t *testing.T) {
	h := open(t)
	p := filepath.Join(h.FS.Root(), session.ConfirmFile)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{session.MaxNote, session.MaxNote + 1} {
		if err := os.WriteFile(p, []byte(strings.Repeat("x", size)), 0o600); err != nil {
			t.Fatal(err)
		}
		note, err := session.ReadNote(h, session.ConfirmFile)
		if size <= session.MaxNote && (err != nil || len(note) != size) {
			t.Errorf("%d bytes: %d read, %v", size, len(note), err)
		}
		if size > session.MaxNote && (err == nil || !strings.Contains(err.Error(), "over the")) {
			t.Errorf("%d bytes: %v, want refused by its size", size, err)
		}
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := session.ReadNote(h, session.ConfirmFile); err == nil || !strings.Contains(err.Error(), "is a FIFO") {
		t.Errorf("a FIFO: %v", err)
	}
	// An apply is refused while something stands there, naming it.
	var busy *session.BusyError
	if err := session.CheckFree(h, nil); !errors.As(err, &busy) || !strings.Contains(err.Error(), "is a FIFO") {
		t.Errorf("CheckFree with a FIFO at the confirm file: %v", err)
	}
}
