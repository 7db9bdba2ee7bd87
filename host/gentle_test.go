package host

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGentleCommandGetsSIGTERM: a Gentle command (a firmware set) whose
// context ends is sent SIGTERM and waited for; it is never SIGKILLed, and
// runs in its own process group (a Ctrl-C at the terminal does not reach
// it). A plain command is killed. Both report ErrInterrupted, not a
// timeout. The child is a real process (sh, as a stand-in for the tool).
func TestGentleCommandGetsSIGTERM(t *testing.T) {
	dir := t.TempDir()
	mark := filepath.Join(dir, "term")
	// On SIGTERM: take a while (the write finishing), note it, exit 7.
	script := "trap 'sleep 0.3; echo term > " + mark + "; exit 7' TERM; echo $$ $(ps -o pgid= -p $$); while :; do sleep 0.05; done"
	r := &ExecRunner{}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	// Waited for the handler: the exit code 7 comes only after its
	// sleep and its write (a clock comparison would fail on a loaded
	// machine, and did).
	res, err := r.Run(ctx, Cmd{Args: []string{"sh", "-c", script}, Gentle: true})
	var ee *ExitError
	if !errors.As(err, &ee) || !errors.Is(ee.Err, ErrInterrupted) || ee.Code != 7 {
		t.Fatalf("gentle: %v (code %v), want ErrInterrupted and the script's own exit 7", err, ee)
	}
	if b, err := os.ReadFile(mark); err != nil || strings.TrimSpace(string(b)) != "term" {
		t.Errorf("the gentle command did not get SIGTERM and finish its handler: %v %q", err, b)
	}
	f := strings.Fields(string(ee.Stdout) + string(res.Stdout))
	if len(f) < 2 || f[0] != f[1] {
		t.Errorf("the gentle command is not the leader of its own process group: pid/pgid %q", f)
	}

	// A plain command is killed at once (its TERM handler never runs).
	os.Remove(mark)
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	_, err = r.Run(ctx, Cmd{Args: []string{"sh", "-c", script}})
	if !errors.As(err, &ee) || !errors.Is(ee.Err, ErrInterrupted) || ee.Code != -1 {
		t.Fatalf("plain: %v, want ErrInterrupted with no exit code (killed)", err)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("the plain command ran its TERM handler: it was not killed")
	}

	// Its own timeout is a timeout.
	_, err = r.Run(context.Background(), Cmd{Args: []string{"sleep", "5"}, Timeout: 100 * time.Millisecond})
	if !errors.As(err, &ee) || !errors.Is(ee.Err, ErrTimeout) {
		t.Errorf("timeout: %v, want ErrTimeout", err)
	}
}
