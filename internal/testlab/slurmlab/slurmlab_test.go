package slurmlab_test

import (
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/internal/testlab/slurmlab"
)

// TestLab starts a three-node cluster: every node registers idle, a job
// pinned to n2 runs there (sinfo: allocated) while the others stay idle,
// and scancel gives the node back.
func TestLab(t *testing.T) {
	l := slurmlab.Start(t, 3)
	id := l.Submit(t, "n2", 300)
	for n, want := range map[string]string{"n1": "idle", "n2": "allocated", "n3": "idle"} {
		if got := l.State(t, n); got != want {
			t.Errorf("%s: %s, want %s", n, got, want)
		}
	}
	l.MustRun(t, "scancel", id)
	l.WaitState(t, "n2", "idle", 60*time.Second)
}
