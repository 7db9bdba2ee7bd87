package mlxfmt

import (
	"os"
	"testing"
)

// TestSetNeedsPowerCycle: the power cycle notice of a set (the src case:
// a real set's output ending as mstflint 4.21's source prints it when the
// firmware refuses MFRL's warm boot trigger) and the reboot notice of the
// real capture it is made from.
func TestSetNeedsPowerCycle(t *testing.T) {
	for _, c := range []struct {
		file string
		want bool
	}{
		{"../../../testdata/real/mstconfig/src-set-power-cycle.stdout", true},
		{"../../../testdata/real/mstconfig/issue-mstflint551-set.stdout", false},
		{"../../../testdata/real/mlxconfig/issue-maas2-cx6-set.stdout", false},
	} {
		out, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		if got := SetNeedsPowerCycle(out); got != c.want {
			t.Errorf("%s: SetNeedsPowerCycle = %v, want %v", c.file, got, c.want)
		}
	}
	for _, s := range []string{"", "Please power cycle machine to load new configurations", "-E- Please power cycle machine to load new configurations.\n"} {
		if SetNeedsPowerCycle([]byte(s)) {
			t.Errorf("SetNeedsPowerCycle(%q) = true", s)
		}
	}
}
