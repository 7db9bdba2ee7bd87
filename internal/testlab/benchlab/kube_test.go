package benchlab

import (
	"testing"
	"time"
)

// TestProcUsage: this process's resident memory is there and its CPU
// time grows with work done, in 10 ms ticks.
func TestProcUsage(t *testing.T) {
	u0, err := ProcUsage(0)
	if err != nil {
		t.Fatal(err)
	}
	if u0.RSS <= 0 || u0.Peak < u0.RSS {
		t.Errorf("RSS %d, peak %d", u0.RSS, u0.Peak)
	}
	x := 0
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); {
		x++
	}
	u1, err := ProcUsage(0)
	if err != nil {
		t.Fatal(err)
	}
	if d := u1.CPU - u0.CPU; d < 50*time.Millisecond || d%(10*time.Millisecond) != 0 {
		t.Errorf("CPU grew %s over 300 ms of work (%d loops), want 50 ms or more in 10 ms ticks", d, x)
	}
	if _, err := ProcUsage(-1); err == nil {
		t.Error("ProcUsage(-1): no error")
	}
}
