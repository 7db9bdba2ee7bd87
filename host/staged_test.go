package host_test

import (
	"testing"

	"github.com/rdmaform/rdmaform/host"
)

// TestStagedState: the staged ledgers' one rule, each case.
func TestStagedState(t *testing.T) {
	for _, c := range []struct {
		took             bool
		stagedBoot, boot string
		want             string
	}{
		{true, "b1", "b2", host.StagedTook},   // took after a reboot
		{true, "b1", "b1", host.StagedTook},   // took in the same boot (a driver reload)
		{false, "b1", "b1", host.StagedWaits}, // written in this boot
		{false, "b1", "", host.StagedWaits},   // this boot unknown: not a failure
		{false, "b1", "b2", host.StagedFailed},
	} {
		if got := host.StagedState(c.took, c.stagedBoot, c.boot); got != c.want {
			t.Errorf("StagedState(%v, %q, %q) = %q, want %q", c.took, c.stagedBoot, c.boot, got, c.want)
		}
	}
}
