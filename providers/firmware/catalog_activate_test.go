package firmware_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/sim"
)

// entryPos is the position (FILE:LINE:COL) of the value of the first
// "activation:" key in spec, the text of file.
func entryPos(t *testing.T, file, spec string) string {
	t.Helper()
	for i, l := range strings.Split(spec, "\n") {
		if j := strings.Index(l, "activation: "); j >= 0 {
			return fmt.Sprintf("%s:%d:%d", file, i+1, j+len("activation: ")+1)
		}
	}
	t.Fatalf("no activation in\n%s", spec)
	return ""
}

// TestCatalogActivationOverBy: the ConnectX-5's catalog entry says its
// image becomes active by a reboot (the card itself could be reset).
// After the burn, `activate --by fw-reset` is refused before anything is
// reset, naming the card and the entry's position (exit 1; no reset
// tool runs; the image still pending); without --by, activate takes the
// catalog's way, a reboot (--yes), after which apply, then plan is
// empty. An entry that says power-cycle: activate is refused with and
// without --by, naming the entry, and nothing changes.
func TestCatalogActivationOverBy(t *testing.T) {
	img5 := sim.ImageFile(cx5.psid, cx5.to)
	for _, act := range []string{"reboot", "power-cycle"} {
		t.Run(act, func(t *testing.T) {
			spec := catalogSpec("", entry{psid: cx5.psid, version: cx5.to, image: "/srv/fw/cx5.bin", sha: digest(img5), activation: act})
			hostDir, specFile := catalogHost(t, cx5.profile, nil, spec)
			if err := os.MkdirAll(filepath.Join(hostDir, "srv/fw"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(hostDir, "srv/fw/cx5.bin"), img5, 0o644); err != nil {
				t.Fatal(err)
			}
			sd := "--sim=" + hostDir
			addr := "firmware_image[" + cx5.pci + "]"
			if code, out, _ := runCalls(t, sd, "apply", "-f", specFile, "--yes"); code != plan.ExitReboot {
				t.Fatalf("apply: exit %d, want %d\n%s", code, plan.ExitReboot, out)
			}
			pos := entryPos(t, specFile, spec)
			want := map[string]string{
				"reboot":      "0000:5e:00: --by fw-reset, but the firmware catalog entry at " + pos + " says this model's image becomes active by a reboot; activate with --by reboot, or without --by (the catalog's way)",
				"power-cycle": "0000:5e:00: only a power cycle activates what is staged (the catalog entry (" + pos + ") says this model's firmware becomes active by a power cycle only)",
			}[act]
			ways := [][]string{{"--by", "fw-reset"}}
			if act == "power-cycle" {
				ways = append(ways, nil)
			}
			for _, by := range ways {
				args := append([]string{sd, "activate", "-f", specFile, "--yes"}, by...)
				code, out, calls := runCalls(t, args...)
				if code != plan.ExitError || !strings.Contains(out, "Nothing was changed:\n  "+want) {
					t.Errorf("activate %v: exit %d, want %d with %q\n%s", by, code, plan.ExitError, want, out)
				}
				for _, c := range calls {
					if strings.Contains(c, "fwreset") && strings.Contains(c, " reset") {
						t.Errorf("activate %v reset a card: %q", by, c)
					}
				}
				step(t, plan.ExitReboot, []string{addr, cx5.from, cx5.to, "after " + act}, sd, "plan", "-f", specFile)
			}
			if act != "reboot" {
				return
			}
			// Without --by: the catalog's way.
			step(t, plan.ExitOK, []string{"A reboot activates:"}, sd, "activate", "-f", specFile, "--yes")
			step(t, plan.ExitOK, nil, sd, "apply", "-f", specFile, "--yes")
			step(t, plan.ExitOK, []string{"No changes."}, sd, "plan", "-f", specFile)
		})
	}
}
