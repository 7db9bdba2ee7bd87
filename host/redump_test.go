package host

import (
	"errors"
	"testing"

	"github.com/vishvananda/netlink"
)

// TestRedump: a dump the kernel interrupted (NLM_F_DUMP_INTR) is read
// again, up to dumpTries times; the first whole one is taken, and after
// dumpTries interrupted reads the error stands. Another error is not
// retried.
func TestRedump(t *testing.T) {
	for _, tc := range []struct {
		interrupted int // reads interrupted before a whole one
		other       error
		wantReads   int
		wantErr     error
	}{
		{0, nil, 1, nil},
		{2, nil, 3, nil},
		{dumpTries - 1, nil, dumpTries, nil},
		{dumpTries, nil, dumpTries, netlink.ErrDumpInterrupted},
		{0, errors.New("no such device"), 1, nil},
	} {
		reads := 0
		v, err := redump(func() (int, error) {
			reads++
			if tc.other != nil {
				return 0, tc.other
			}
			if reads <= tc.interrupted {
				return -1, netlink.ErrDumpInterrupted
			}
			return reads, nil
		})
		want := tc.wantErr
		if tc.other != nil {
			want = tc.other
		}
		if reads != tc.wantReads || !errors.Is(err, want) || (want == nil && v != reads) {
			t.Errorf("%d interrupted, other %v: %d reads, value %d, error %v; want %d reads, error %v", tc.interrupted, tc.other, reads, v, err, tc.wantReads, want)
		}
	}
}
