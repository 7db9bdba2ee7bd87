package host_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/systemdlab"
)

// TestTransientTimerOnRealSystemd: a transient timer armed on a real
// systemd manager runs its command once it elapses, with the environment
// given, and goes away; a timer disarmed in time never runs it.
func TestTransientTimerOnRealSystemd(t *testing.T) {
	l := systemdlab.Start(t)
	b := &host.SystemdBus{Address: l.Address}
	defer b.Close()
	ctx := context.Background()
	dir := t.TempDir()
	// The service prints its MARK variable to its log file.
	fired := filepath.Join(dir, "fired")

	start := time.Now()
	tm := host.TransientTimer{Name: "rdmaform-test-rollback", Description: "test", After: time.Second,
		Argv: []string{"/usr/bin/printenv", "MARK"}, Env: []string{"MARK=from-the-timer"}, Log: fired}
	if err := b.ArmTimer(ctx, tm); err != nil {
		t.Fatalf("%v\n%s", err, l.Log())
	}
	if on, err := b.TimerActive(ctx, tm.Name); err != nil || !on {
		t.Fatalf("timer active after arming: %v %v", on, err)
	}
	for time.Since(start) < 15*time.Second {
		if b, err := os.ReadFile(fired); err == nil && len(b) > 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	got, err := os.ReadFile(fired)
	if err != nil || string(got) != "from-the-timer\n" {
		t.Fatalf("the timer's command: %q %v\n%s", got, err, l.Log())
	}
	elapsed := time.Since(start)
	if elapsed < time.Second {
		t.Errorf("fired after %s, before its 1s", elapsed)
	}
	t.Logf("fired %s after arming (1s timer)", elapsed.Round(10*time.Millisecond))
	// Gone once elapsed and run: arming the same name again works.
	deadline := time.Now().Add(10 * time.Second)
	for {
		on, err := b.TimerActive(ctx, tm.Name)
		if err == nil && !on {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("timer still active after it ran: %v %v", on, err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Disarmed before it elapses: never runs.
	if err := os.Remove(fired); err != nil {
		t.Fatal(err)
	}
	tm.After = 2 * time.Second
	if err := b.ArmTimer(ctx, tm); err != nil {
		t.Fatal(err)
	}
	if err := b.DisarmTimer(ctx, tm.Name); err != nil {
		t.Fatal(err)
	}
	if on, err := b.TimerActive(ctx, tm.Name); err != nil || on {
		t.Errorf("timer active after disarming: %v %v", on, err)
	}
	time.Sleep(3 * time.Second)
	if _, err := os.Stat(fired); !os.IsNotExist(err) {
		t.Errorf("a disarmed timer ran its command: %v", err)
	}
	// Disarming what is not there is not an error.
	if err := b.DisarmTimer(ctx, tm.Name); err != nil {
		t.Errorf("disarming twice: %v", err)
	}
}
