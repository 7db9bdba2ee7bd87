package cli_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/providers/firmware"
)

// ledgerParams lists the parameters the simulated host's staged ledger
// holds (none without the file).
func ledgerParams(t *testing.T, h string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h, firmware.LedgerPath))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var l firmware.Ledger
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range l.Entries {
		out = append(out, e.Device+" "+e.Parameter)
	}
	return out
}

// TestActivateCardDoesNotReturn: the firmware reset succeeds but the
// driver does not probe the card again (a no-return reset fault): activate
// --wait 1s (its lower limit) gives up after the wait, exit 1, naming the
// RDMA devices and netdevs that did not come back and the --wait, and why
// the VFs it set to 0 are not back; the JSON result says failed with that
// reason; the staged ledger keeps its entry. The fault cleared and the
// host rebooted (the driver probes the card again), apply restores the
// runtime part and the plan is empty.
func TestActivateCardDoesNotReturn(t *testing.T) {
	for _, out := range []string{"text", "json"} {
		t.Run(out, func(t *testing.T) {
			_, h, spec := stagedEthHost(t)
			staged := ledgerParams(t, h)
			if len(staged) == 0 {
				t.Fatal("apply staged nothing in the ledger")
			}
			if code, _, errs := runCLI(t, "sim", "fault", h, "--reset", "no-return", "--match", "0000:3b:00.1"); code != 0 {
				t.Fatal(errs)
			}
			start := time.Now()
			code, stdout, errs := runCLI(t, "--sim", h, "activate", "-f", spec, "--wait", "1s", "-o", out)
			// Not a measurement: the wait is bounded by --wait and not by
			// the default (2m), so it cannot take a minute.
			if took := time.Since(start); took > time.Minute {
				t.Errorf("activate --wait 1s took %s", took)
			}
			if code != 1 {
				t.Fatalf("activate: exit %d, want 1\n%s%s", code, stdout, errs)
			}
			wants := []string{
				"the RDMA device of 0000:3b:00.0 (was mlx5_0) and its netdevs (were ib0)",
				"the RDMA device of 0000:3b:00.1 (was mlx5_1) and its netdevs (were ib1)",
				"did not come back within 1s (--wait",
				"the 2 VFs of 0000:3b:00.0 are not restored: it did not come back",
			}
			reason := stdout + errs
			if out == "json" {
				loadSchemas(t).check(t, "activate -o json", "activate", stdout)
				var doc struct {
					Cards []struct {
						Card, Result, Reason string
					} `json:"cards"`
					Errors []struct{ Message string } `json:"errors"`
				}
				if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
					t.Fatalf("%v\n%s", err, stdout)
				}
				if len(doc.Cards) != 1 || doc.Cards[0].Result != "failed" || len(doc.Errors) == 0 {
					t.Fatalf("activate -o json: want the card failed, with errors\n%s", stdout)
				}
				reason = doc.Cards[0].Reason
			}
			for _, w := range wants {
				if !strings.Contains(reason, w) {
					t.Errorf("activate -o %s: want %q in\n%s", out, w, reason)
				}
			}
			if got := ledgerParams(t, h); strings.Join(got, ",") != strings.Join(staged, ",") {
				t.Errorf("ledger after the failed activate: %v, want %v kept", got, staged)
			}
			if code, _, errs := runCLI(t, "sim", "fault", h, "--clear"); code != 0 {
				t.Fatal(errs)
			}
			if code, _, errs := runCLI(t, "sim", "reboot", h); code != 0 {
				t.Fatal(errs)
			}
			// Nothing is staged, but the reboot took the VFs: activate -f
			// exits 0 only when the plan is empty.
			if code, out, errs := runCLI(t, "--sim", h, "activate", "-f", spec); code != 2 || !strings.Contains(out, "Nothing is staged") ||
				!strings.Contains(out, "1 change (sriov[0000:3b:00.0]); run rdmaform --sim "+h+" apply -f "+spec) {
				t.Errorf("activate after the reboot: exit %d, want 2, nothing staged and the change named\n%s%s", code, out, errs)
			}
			if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 0 {
				t.Errorf("apply after the reboot: exit %d, want 0\n%s%s", code, out, errs)
			}
			if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 0 || numVFs(t, h) != "2" {
				t.Errorf("plan after apply: exit %d, want 0 (VFs %s)\n%s%s", code, numVFs(t, h), out, errs)
			}
			if got := ledgerParams(t, h); len(got) != 0 {
				t.Errorf("ledger after the values are current: %v, want empty", got)
			}
		})
	}
}

// TestActivateWaitsForALateCard: the card registers again a second after
// the reset (a late reset fault: the driver's probe is slow); activate
// waits for it (--wait 1m), restores the VFs and the runtime part, and
// the plan is empty.
func TestActivateWaitsForALateCard(t *testing.T) {
	_, h, spec := stagedEthHost(t)
	if code, _, errs := runCLI(t, "sim", "fault", h, "--reset", "late", "--delay", "1s"); code != 0 {
		t.Fatal(errs)
	}
	code, out, errs := runCLI(t, "--sim", h, "activate", "-f", spec, "--wait", "1m")
	if code != 0 || !strings.Contains(out, "0000:3b:00: firmware reset (level 3) done, the card is back (VFs restored: 0000:3b:00.0 2)") {
		t.Fatalf("activate: exit %d, want 0 with the card back\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 0 || numVFs(t, h) != "2" {
		t.Errorf("plan after activate: exit %d, want 0 (VFs %s)\n%s%s", code, numVFs(t, h), out, errs)
	}
}
