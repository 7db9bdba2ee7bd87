package firmware

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/firmware/mlxfmt"
)

// TestActivationOf: how staged values become current, from the card's
// reset query: level 3 supported is a fw-reset at 3 (whatever else is);
// only a warm reboot (4) is a reboot; no level, or the tool's "no
// supported reset-level", a power cycle; a missing tool or a failed query
// a reboot that says why.
func TestActivationOf(t *testing.T) {
	q := func(levels ...int) mlxfmt.ResetQuery {
		var out mlxfmt.ResetQuery
		for _, l := range []int{0, 3, 4} {
			sup := false
			for _, x := range levels {
				sup = sup || x == l
			}
			out.Levels = append(out.Levels, mlxfmt.ResetOption{Value: l, Description: fmt.Sprint("level ", l), Supported: sup})
		}
		return out
	}
	for _, tt := range []struct {
		name  string
		obs   *ResetObs
		by    string
		level int
		why   string
	}{
		{"levels 3 and 4", &ResetObs{Tool: MSTFWReset, Dev: "0000:3b:00.0", Query: q(3, 4)}, plan.ByFWReset, 3, "mstfwreset -d 0000:3b:00.0 query: level 3 (level 3) is supported"},
		{"level 3 only", &ResetObs{Tool: MLXFWReset, Dev: "0000:3b:00.0", Query: q(3)}, plan.ByFWReset, 3, "mlxfwreset -d 0000:3b:00.0 query"},
		{"live patch and warm reboot", &ResetObs{Tool: MSTFWReset, Dev: "0000:3b:00.0", Query: q(0, 4)}, plan.ByReboot, 0, "a warm reboot (level 4)"},
		{"no level listed", &ResetObs{Tool: MSTFWReset, Dev: "0000:3b:00.0", Query: q()}, plan.ByPowerCycle, 0, "power-cycle"},
		{"no supported reset-level", &ResetObs{Tool: MSTFWReset, Dev: "0000:3b:00.0", Err: fmt.Errorf("x: %w", &mlxfmt.ResetToolError{Kind: mlxfmt.ResetErrNoLevel, Message: "There is no supported reset-level"})}, plan.ByPowerCycle, 0, "There is no supported reset-level"},
		{"tool missing", &ResetObs{Tool: MSTFWReset, Err: fmt.Errorf("mstfwreset: %w on PATH", host.ErrNotFound)}, plan.ByReboot, 0, "package mstflint"},
		{"MFT tool missing", &ResetObs{Tool: MLXFWReset, Err: fmt.Errorf("mlxfwreset: %w on PATH", host.ErrNotFound)}, plan.ByReboot, 0, "NVIDIA MFT"},
		{"query failed", &ResetObs{Tool: MSTFWReset, Err: errors.New("mstfwreset -d 0000:3b:00.0 query: -E- Failed to Identify Device")}, plan.ByReboot, 0, "Failed to Identify Device"},
		{"not asked", nil, plan.ByReboot, 0, "not asked"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := activationOf(tt.obs)
			if got.By != tt.by || got.Level != tt.level || !strings.Contains(got.Why, tt.why) {
				t.Errorf("got %+v, want by %s level %d why containing %q", got, tt.by, tt.level, tt.why)
			}
		})
	}
}
