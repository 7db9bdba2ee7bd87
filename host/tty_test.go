package host

import (
	"os"
	"testing"
)

// TestIsTerminal: /dev/null is a character device, not a terminal; a
// pipe is neither.
func TestIsTerminal(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if IsTerminal(null.Fd()) {
		t.Error("/dev/null is taken for a terminal")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if IsTerminal(r.Fd()) || IsTerminal(w.Fd()) {
		t.Error("a pipe is taken for a terminal")
	}
}
