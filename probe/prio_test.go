package probe

import (
	"strings"
	"testing"
)

// TestComparePrio: the counters' judgement at its edges: exactly 1 %
// elsewhere passes and one byte more fails; a pause frame on another
// priority fails, on the priority itself does not; a counter that went
// back (reset) counts as no move.
func TestComparePrio(t *testing.T) {
	before := counterSnap{"tx_prio3_bytes": 1000, "tx_prio0_bytes": 50, "rx_prio5_pause": 7, "tx_prio3_pause": 1}
	cases := []struct {
		after  counterSnap
		result string
		got    string
	}{
		{counterSnap{"tx_prio3_bytes": 101000, "tx_prio0_bytes": 1050, "rx_prio5_pause": 7, "tx_prio3_pause": 9}, CheckOK, "tx_prio3_bytes +100000, other priorities +1000; no pause frame on other priorities"},
		{counterSnap{"tx_prio3_bytes": 101000, "tx_prio0_bytes": 1051, "rx_prio5_pause": 7}, CheckFailed, "(more than 1 % elsewhere)"},
		{counterSnap{"tx_prio3_bytes": 101000, "tx_prio0_bytes": 50, "rx_prio5_pause": 8}, CheckFailed, "pause frames on other priorities: rx_prio5_pause +1"},
		{counterSnap{"tx_prio3_bytes": 10, "tx_prio0_bytes": 50}, CheckFailed, "tx_prio3_bytes +0, other priorities +0 (nothing on the priority)"},
	}
	for _, c := range cases {
		res, got := comparePrio(before, c.after, 3, []string{"tx"})
		if res != c.result || !strings.Contains(got, c.got) {
			t.Errorf("%v: %s %q; want %s %q", c.after, res, got, c.result, c.got)
		}
	}
}

// TestReadPrioCountersFormat: ethtool's layout ("     name: value"), the
// mlx5 names only; another driver's counters are not per-priority ones.
func TestReadPrioCountersFormat(t *testing.T) {
	out := "NIC statistics:\n     rx_packets: 5\n     rx_prio3_bytes: 42\n     tx_prio7_packets: 1\n     rx_prio2_pause: 3\n     rx_prio2_pause_duration: 9\n     rx_prio8_bytes: 1\n"
	got := map[string]string{}
	for _, m := range prioCounterRE.FindAllStringSubmatch(out, -1) {
		got[m[1]] = m[4]
	}
	if len(got) != 3 || got["rx_prio3_bytes"] != "42" || got["tx_prio7_packets"] != "1" || got["rx_prio2_pause"] != "3" {
		t.Errorf("%v", got)
	}
}
