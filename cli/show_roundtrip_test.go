package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/sim"
)

// TestShowRoundTripEveryProfile: on every simulated host profile
// (ConnectX-3 included), what show captures passes validate, with the
// firmware parameter database when it is installed, and plans nothing;
// also with firmware parameters named that some adapters lack (an
// Ethernet-only ConnectX-5 has no LINK_TYPE_Pn): those are left out of
// that adapter and noted on stderr and in the YAML, not an error.
func TestShowRoundTripEveryProfile(t *testing.T) {
	for _, prof := range sim.ProfileNames() {
		for _, fw := range []string{"", "LINK_TYPE_P1,LINK_TYPE_P2,SRIOV_EN,NUM_OF_VFS,NO_SUCH_PARAM"} {
			t.Run(prof+"/"+map[bool]string{true: "default", false: "named"}[fw == ""], func(t *testing.T) {
				dir := t.TempDir()
				h := filepath.Join(dir, "host")
				if code, _, errs := runCLI(t, "sim", "new", h, "--profile", prof); code != 0 {
					t.Fatalf("sim new: %s", errs)
				}
				args := []string{"--sim", h, "show"}
				if fw != "" {
					args = append(args, "--firmware", fw)
				}
				code, out, errs := runCLI(t, args...)
				hasTool := !strings.Contains(errs, "no firmware configuration tool")
				adapters := strings.Contains(out, "- pci: ")
				switch {
				case fw != "" && !hasTool:
					// Named parameters and no tool to read them: an error,
					// the rest still captured.
					if code != 1 {
						t.Fatalf("show --firmware without a tool: exit %d\n%s", code, errs)
					}
				case code != 0:
					t.Fatalf("show: exit %d\n%s", code, errs)
				case fw != "" && adapters && (!strings.Contains(errs, "rdmaform: note: device pci ") || !strings.Contains(errs, "no NO_SUCH_PARAM on this adapter")):
					t.Errorf("show --firmware: no note for the parameter the adapters lack:\n%s", errs)
				case fw != "" && adapters && (!strings.Contains(out, "left out: ") || !strings.Contains(out, "no NO_SUCH_PARAM on this adapter")):
					t.Errorf("show --firmware: the YAML does not say what was left out:\n%s", out)
				}
				file := filepath.Join(dir, "captured.yaml")
				if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				if code, vout, verrs := runCLI(t, "validate", "-f", file); code != 0 {
					t.Fatalf("validate of the capture: exit %d\n%s%s\n%s", code, vout, verrs, out)
				}
				if code, pout, perrs := runCLI(t, "--sim", h, "plan", "-f", file); code != 0 {
					t.Errorf("plan of the capture: exit %d\n%s%s\n%s", code, pout, perrs, out)
				}
			})
		}
	}
}
