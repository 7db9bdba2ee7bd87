package cli_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWarmRebootThatDidNotTake: apply stages LINK_TYPE_P1 and records it
// in the staged ledger (0600); a warm reboot that does not reload the
// firmware (sim reboot --keep-firmware) makes it an activation failure:
// plan, status and audit exit 1 naming it at its spec line, apply exits 1
// and does not stage it again (the emulated tool sees no set), the
// Prometheus audit has its series; a real reboot activates it, and the
// plan and the ledger are empty.
func TestWarmRebootThatDidNotTake(t *testing.T) {
	h, spec, ledger := ledgerHost(t)
	bootID := func() string {
		b, err := os.ReadFile(filepath.Join(h, "proc/sys/kernel/random/boot_id"))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 3 {
		t.Fatalf("apply: exit %d, want 3\n%s%s", code, out, errs)
	}
	fi, err := os.Stat(ledger)
	if err != nil {
		t.Fatalf("no ledger after staging: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("ledger mode %v, want 0600", fi.Mode().Perm())
	}
	var l struct {
		Entries []map[string]string `json:"entries"`
	}
	b, _ := os.ReadFile(ledger)
	if err := json.Unmarshal(b, &l); err != nil || len(l.Entries) != 1 {
		t.Fatalf("ledger: %v\n%s", err, b)
	}
	e := l.Entries[0]
	firstBoot := bootID()
	if e["boot_id"] != firstBoot || e["device"] != "0000:3b:00.0" || e["parameter"] != "LINK_TYPE_P1" || e["value"] != "ETH" || e["tool"] == "" || e["staged_at"] == "" {
		t.Errorf("ledger entry %v (boot %s)", e, firstBoot)
	}
	// Before a reboot it is pending, not a failure.
	if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 3 {
		t.Fatalf("plan before the reboot: exit %d, want 3\n%s%s", code, out, errs)
	}

	if code, out, errs := runCLI(t, "sim", "reboot", h, "--keep-firmware"); code != 0 {
		t.Fatalf("sim reboot --keep-firmware: %d\n%s%s", code, out, errs)
	}
	if bootID() == firstBoot {
		t.Fatal("the boot_id did not change")
	}
	want := spec + ":5:"
	for _, args := range [][]string{{"plan", "-f", spec}, {"status", "-f", spec}, {"audit", "-f", spec}} {
		code, out, errs := runCLI(t, append([]string{"--sim", h}, args...)...)
		all := out + errs
		if code != 1 || !strings.Contains(all, want) || !strings.Contains(all, "LINK_TYPE_P1=ETH did not take") ||
			!strings.Contains(all, "boot "+firstBoot) || !strings.Contains(all, "power-cycle") || !strings.Contains(all, "rdmaform activate --by fw-reset") || !strings.Contains(all, "mstfwreset -d 0000:3b:00.0 reset") {
			t.Errorf("%s after a warm reboot: exit %d, want 1 with the failure at %s\n%s", args[0], code, want, all)
		}
	}
	calls := filepath.Join(t.TempDir(), "calls")
	code, out, errs := runCLIEnv(t, []string{"RDMAFORM_SIM_CALLS=" + calls}, "--sim", h, "apply", "--yes", "-f", spec)
	if code != 1 || !strings.Contains(out+errs, "did not take") || strings.Contains(out+errs, "reboot required") {
		t.Errorf("apply after a warm reboot: exit %d, want 1 without staging again\n%s%s", code, out, errs)
	}
	if c, _ := os.ReadFile(calls); strings.Contains(string(c), " set ") {
		t.Errorf("apply staged again:\n%s", c)
	}
	code, out, errs = runCLI(t, "--sim", h, "audit", "-f", spec, "-o", "prometheus")
	if !strings.Contains(out, `rdmaform_activation_failed{resource="firmware[0000:3b:00.0]",parameter="LINK_TYPE_P1"} 1`) {
		t.Errorf("audit -o prometheus: exit %d, no activation failure series\n%s%s", code, out, errs)
	}
	schemas := loadSchemas(t)
	code, out, errs = runCLI(t, "--sim", h, "status", "-f", spec, "-o", "json")
	schemas.check(t, "status -o json", "status", out)
	if code != 1 || !strings.Contains(out, `"activation_failures": [`) || !strings.Contains(out, `"staged_boot_id": "`+firstBoot+`"`) {
		t.Errorf("status -o json after a warm reboot: exit %d, want 1 with the activation failure\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI(t, "--sim", h, "plan", "-f", spec, "-o", "json")
	schemas.check(t, "plan -o json", "plan", out)
	if code, aout, aerrs := runCLI(t, "--sim", h, "audit", "-f", spec, "-o", "json"); code != 1 || !strings.Contains(aout, `"activation_failures"`) {
		t.Errorf("audit -o json: exit %d\n%s%s", code, aout, aerrs)
	} else {
		schemas.check(t, "audit -o json", "audit", aout)
	}
	var pj struct {
		Pending  []any `json:"pending"`
		Failures []struct {
			Address, Attribute, Current, Staged, StagedBootID string
		} `json:"activation_failures"`
		Summary struct {
			RebootRequired bool `json:"reboot_required"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &pj); err != nil || code != 1 {
		t.Fatalf("plan -o json: exit %d, %v\n%s%s", code, err, out, errs)
	}
	// Not pending, and no reboot is asked for: no loop.
	if len(pj.Failures) != 1 || pj.Failures[0].Attribute != "LINK_TYPE_P1" || pj.Failures[0].Current != "IB" || pj.Failures[0].Staged != "ETH" ||
		len(pj.Pending) != 0 || pj.Summary.RebootRequired {
		t.Errorf("plan -o json after a warm reboot:\n%s", out)
	}

	if code, out, errs := runCLI(t, "sim", "reboot", h); code != 0 {
		t.Fatalf("sim reboot: %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 0 {
		t.Errorf("plan after a real reboot: exit %d, want 0\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 0 {
		t.Errorf("apply after a real reboot: exit %d, want 0\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(ledger); !os.IsNotExist(err) {
		t.Errorf("the ledger is still there after the value took: %v", err)
	}
	if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 0 {
		t.Errorf("plan at the end: exit %d, want 0\n%s%s", code, out, errs)
	}
}

// TestLedgerEntryLeavesWithTheSpec: a spec that no longer asks for a
// staged value (it stages the current one back) clears the entry; a
// corrupt ledger is an error naming the file and changes nothing.
func TestLedgerEntryLeavesWithTheSpec(t *testing.T) {
	dir := t.TempDir()
	h := filepath.Join(dir, "host")
	if code, _, errs := runCLI(t, "sim", "new", h, "--profile", "cx6-vpi-ib"); code != 0 {
		t.Fatalf("sim new: %s", errs)
	}
	write := func(name, lt string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte("version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params: {LINK_TYPE_P1: "+lt+"}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	eth, ib := write("eth.yaml", "ETH"), write("ib.yaml", "IB")
	ledger := filepath.Join(h, "var/lib/rdmaform/staged.json")
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", eth); code != 3 {
		t.Fatalf("apply ETH: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(ledger); err != nil {
		t.Fatalf("no ledger: %v", err)
	}
	// A corrupt ledger: plan and apply name the file, nothing changes.
	good, _ := os.ReadFile(ledger)
	if err := os.WriteFile(ledger, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	calls := filepath.Join(dir, "calls")
	for _, args := range [][]string{{"plan", "-f", ib}, {"apply", "--yes", "-f", ib}} {
		code, out, errs := runCLIEnv(t, []string{"RDMAFORM_SIM_CALLS=" + calls}, append([]string{"--sim", h}, args...)...)
		if code != 1 || !strings.Contains(out+errs, "/var/lib/rdmaform/staged.json") {
			t.Errorf("%s with a corrupt ledger: exit %d, want 1 naming the file\n%s%s", args[0], code, out, errs)
		}
	}
	if c, _ := os.ReadFile(calls); strings.Contains(string(c), " set ") {
		t.Errorf("apply with a corrupt ledger changed the firmware:\n%s", c)
	}
	// clears: apply f exits 0 and leaves no ledger, then plan is empty.
	clears := func(step, f string) {
		t.Helper()
		if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", f); code != 0 {
			t.Fatalf("%s: apply: exit %d\n%s%s", step, code, out, errs)
		}
		if _, err := os.Stat(ledger); !os.IsNotExist(err) {
			b, _ := os.ReadFile(ledger)
			t.Errorf("%s: the entry stayed:\n%s", step, b)
		}
		if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", f); code != 0 {
			t.Errorf("%s: plan at the end: exit %d\n%s%s", step, code, out, errs)
		}
	}
	if err := os.WriteFile(ledger, good, 0o600); err != nil {
		t.Fatal(err)
	}
	// The spec asks for IB again (the current value): un-staging it clears
	// the entry.
	clears("un-staging", ib)
	// Staged again, then a spec without the parameter: its apply (nothing
	// to change) drops the entry.
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", eth); code != 3 {
		t.Fatalf("apply ETH again: exit %d\n%s%s", code, out, errs)
	}
	none := filepath.Join(dir, "none.yaml")
	if err := os.WriteFile(none, []byte("version: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	clears("the spec dropped the parameter", none)
}

// TestStatusReadsTheLedger: status without -f checks each staged ledger
// entry against the full query: staged in this boot it waits for a
// reboot (exit 3); after a warm reboot that did not reload the firmware it
// is an activation failure, and no longer pending (exit 1), also when the
// ledger holds the value as the tool echoes it (ETH(2)); an entry whose
// adapter is not on the host cannot be checked (exit 1), or, staged in
// this boot, waits for a reboot (exit 3); after a real
// reboot it took (exit 0), and the apply then drops it, plan empty.
func TestStatusReadsTheLedger(t *testing.T) {
	h, spec, ledger := ledgerHost(t)
	schemas := loadSchemas(t)
	type item struct {
		Address, Attribute, Value, State, Current, Reason string
		StagedBootID                                      string `json:"staged_boot_id"`
		EarlierBoot                                       bool   `json:"earlier_boot"`
	}
	type doc struct {
		BootID   string `json:"boot_id"`
		Pending  []any  `json:"pending"`
		Failures []struct {
			Attribute, Staged, Current string
		} `json:"activation_failures"`
		Staged         []item `json:"staged"`
		RebootRequired bool   `json:"reboot_required"`
	}
	// status runs status and status -o json, both with exit want.
	status := func(step string, want int) (string, doc) {
		t.Helper()
		code, out, errs := runCLI(t, "--sim", h, "status")
		if code != want {
			t.Errorf("%s: status: exit %d, want %d\n%s%s", step, code, want, out, errs)
		}
		jcode, jout, jerrs := runCLI(t, "--sim", h, "status", "-o", "json")
		schemas.check(t, step+": status -o json", "status", jout)
		var d doc
		if err := json.Unmarshal([]byte(jout), &d); err != nil || jcode != want {
			t.Errorf("%s: status -o json: exit %d, want %d (%v)\n%s%s", step, jcode, want, err, jout, jerrs)
		}
		return out, d
	}
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 3 {
		t.Fatalf("apply: exit %d, want 3\n%s%s", code, out, errs)
	}
	out, d := status("staged", 3)
	first := d.BootID
	if len(d.Staged) != 1 || d.Staged[0].State != "pending" || d.Staged[0].EarlierBoot || d.Staged[0].StagedBootID != first || first == "" ||
		!strings.Contains(out, "LINK_TYPE_P1=ETH staged at ") || !strings.Contains(out, "in this boot with mlxconfig: waits for a reboot") {
		t.Errorf("status in the staging boot:\n%s%+v", out, d)
	}

	if code, out, errs := runCLI(t, "sim", "reboot", h, "--keep-firmware"); code != 0 {
		t.Fatalf("sim reboot --keep-firmware: %d\n%s%s", code, out, errs)
	}
	b, err := os.ReadFile(ledger)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"ETH", "ETH(2)"} {
		if err := os.WriteFile(ledger, []byte(strings.Replace(string(b), `"value": "ETH"`, `"value": "`+v+`"`, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		out, d = status("after a warm reboot, staged as "+v, 1)
		if len(d.Staged) != 1 || d.Staged[0].State != "failed" || !d.Staged[0].EarlierBoot || d.Staged[0].StagedBootID != first || d.Staged[0].Current != "IB" ||
			len(d.Failures) != 1 || d.Failures[0].Staged != v || len(d.Pending) != 0 || d.RebootRequired || d.BootID == first ||
			!strings.Contains(out, "LINK_TYPE_P1="+v+" did not take") || !strings.Contains(out, "(boot "+first+")") || strings.Contains(out, "Reboot required") {
			t.Errorf("status after a warm reboot, staged as %s:\n%s%+v", v, out, d)
		}
	}
	// An entry of an adapter the host does not have cannot be checked.
	if err := os.WriteFile(ledger, []byte(strings.Replace(string(b), "0000:3b:00.0", "0000:99:00.0", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, d = status("an adapter not on the host", 1)
	if len(d.Staged) != 1 || d.Staged[0].State != "unread" || !strings.Contains(d.Staged[0].Reason, "no RDMA adapter at 0000:99:00.0") ||
		!strings.Contains(out, "in boot "+first+" (an earlier boot; this is boot "+d.BootID+")") || !strings.Contains(out, "cannot be checked") {
		t.Errorf("status with an entry of a missing adapter:\n%s%+v", out, d)
	}
	// Staged in this boot, it cannot be read back either, but no reboot
	// came since: it waits for one.
	if err := os.WriteFile(ledger, []byte(strings.Replace(strings.Replace(string(b), "0000:3b:00.0", "0000:99:00.0", 1), first, d.BootID, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, d = status("an adapter not on the host, staged in this boot", 3)
	if len(d.Staged) != 1 || d.Staged[0].State != "unread" || d.Staged[0].EarlierBoot || !d.RebootRequired || !strings.Contains(out, "waits for a reboot (its value cannot be read back: no RDMA adapter at 0000:99:00.0") {
		t.Errorf("status with an entry of this boot of a missing adapter:\n%s%+v", out, d)
	}
	if err := os.WriteFile(ledger, b, 0o600); err != nil {
		t.Fatal(err)
	}

	if code, out, errs := runCLI(t, "sim", "reboot", h); code != 0 {
		t.Fatalf("sim reboot: %d\n%s%s", code, out, errs)
	}
	out, d = status("after a real reboot", 0)
	if len(d.Staged) != 1 || d.Staged[0].State != "took" || d.Staged[0].Current != "ETH" || !strings.Contains(out, "current now") {
		t.Errorf("status after a real reboot:\n%s%+v", out, d)
	}
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 0 {
		t.Errorf("apply after a real reboot: exit %d\n%s%s", code, out, errs)
	}
	out, d = status("after the apply", 0)
	if len(d.Staged) != 0 || strings.Contains(out, "Staged ledger") {
		t.Errorf("status after the apply dropped the entry:\n%s%+v", out, d)
	}
	if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 0 {
		t.Errorf("plan at the end: exit %d\n%s%s", code, out, errs)
	}
}

// ledgerHost is a simulated cx6-vpi-ib host, a spec that stages
// LINK_TYPE_P1=ETH on it, and where its staged ledger is.
func ledgerHost(t *testing.T) (h, spec, ledger string) {
	t.Helper()
	dir := t.TempDir()
	h = filepath.Join(dir, "host")
	if code, _, errs := runCLI(t, "sim", "new", h, "--profile", "cx6-vpi-ib"); code != 0 {
		t.Fatalf("sim new: %s", errs)
	}
	spec = filepath.Join(dir, "eth.yaml")
	if err := os.WriteFile(spec, []byte("version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params: {LINK_TYPE_P1: ETH}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return h, spec, filepath.Join(h, "var/lib/rdmaform/staged.json")
}

// TestDidNotTakeHintConverges: the activation failure's advice is a
// command that works. After a warm reboot that did not reload the
// firmware, `rdmaform activate --by fw-reset -f SPEC` (what the message
// says to run) resets the card, empties the ledger, and the plan is
// empty, with no reboot.
func TestDidNotTakeHintConverges(t *testing.T) {
	h, spec, ledger := ledgerHost(t)
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 3 {
		t.Fatalf("apply: exit %d, want 3\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "sim", "reboot", h, "--keep-firmware"); code != 0 {
		t.Fatalf("sim reboot --keep-firmware: %d\n%s%s", code, out, errs)
	}
	hint := "rdmaform activate --by fw-reset"
	code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec)
	if code != 1 || !strings.Contains(out+errs, hint) {
		t.Fatalf("plan after a warm reboot: exit %d, want 1 advising %q\n%s%s", code, hint, out, errs)
	}
	args := append([]string{"--sim", h}, strings.Fields(hint)[1:]...)
	if code, out, errs := runCLI(t, append(args, "-f", spec)...); code != 0 {
		t.Fatalf("%s -f SPEC: exit %d, want 0\n%s%s", hint, code, out, errs)
	}
	var l struct {
		Entries []any `json:"entries"`
	}
	if b, err := os.ReadFile(ledger); err == nil {
		if err := json.Unmarshal(b, &l); err != nil || len(l.Entries) != 0 {
			t.Errorf("ledger after the activation: %v\n%s", err, b)
		}
	}
	if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 0 {
		t.Errorf("plan after the activation: exit %d, want 0\n%s%s", code, out, errs)
	}
}

// TestDidNotTakeHintWithRuntimePart: the README's ib-to-eth example
// (a link type and the RoCE settings that wait for it) after a warm
// reboot that did not reload the firmware. The plan names one finding
// (the value that did not take); RoCE waits for the link type as before
// the reboot, not an error of its own. The command the message names,
// with the spec, resets the card and applies the RoCE settings: exit 0,
// then the plan is empty and status has nothing waiting.
func TestDidNotTakeHintWithRuntimePart(t *testing.T) {
	h := filepath.Join(t.TempDir(), "host")
	if code, _, errs := runCLI(t, "sim", "new", h, "--profile", "cx6-vpi-ib"); code != 0 {
		t.Fatalf("sim new: %s", errs)
	}
	spec := "../examples/ib-to-eth.yaml"
	if code, out, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec); code != 3 {
		t.Fatalf("apply: exit %d, want 3\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "sim", "reboot", h, "--keep-firmware"); code != 0 {
		t.Fatalf("sim reboot --keep-firmware: %d\n%s%s", code, out, errs)
	}
	code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec)
	if code != 1 || strings.Count(out+errs, ": error: ") != 1 || !strings.Contains(out+errs, "did not take") ||
		!strings.Contains(out, "? rdma_cm[mlx5_0/1] waits for LINK_TYPE_P1=ETH on 0000:3b:00.0 (a reboot did not load it") {
		t.Fatalf("plan after a warm reboot: exit %d, want 1 with one finding (did not take) and RoCE deferred\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "activate", "--by", "fw-reset", "-f", spec); code != 0 ||
		!strings.Contains(out, "Runtime settings applied again: 1 applied") {
		t.Fatalf("activate --by fw-reset -f %s: exit %d, want 0 with the RoCE settings applied\n%s%s", spec, code, out, errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 0 {
		t.Errorf("plan after the activation: exit %d, want 0\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "status"); code != 0 {
		t.Errorf("status after the activation: exit %d, want 0\n%s%s", code, out, errs)
	}
}

// TestConfirmTimeoutRevertsStagedFirmware: apply --confirm-timeout
// --allow-firmware stages KEEP_IB_LINK_UP_P1=1 (ledger entry, reboot
// marker); nobody confirms, so the apply stages back the value that runs
// at the deadline. Nothing waits for a reboot then: no ledger entry (none
// with an empty value), no /run/reboot-required, status exits 0, and the
// plan shows the change again.
func TestConfirmTimeoutRevertsStagedFirmware(t *testing.T) {
	bin := buildRdmaform(t)
	dir := t.TempDir()
	h := filepath.Join(dir, "host")
	if code, _, errs := runCLI(t, "sim", "new", h, "--profile", "cx6-vpi-ib"); code != 0 {
		t.Fatalf("sim new: %s", errs)
	}
	spec := filepath.Join(dir, "keep.yaml")
	if err := os.WriteFile(spec, []byte("version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params: {KEEP_IB_LINK_UP_P1: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--sim", h, "apply", "--yes", "--allow-firmware", "--confirm-timeout", "2s", "-f", spec)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "Reverted 1 ") {
		t.Fatalf("apply --confirm-timeout 2s: %v, want exit 1 after the revert\n%s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(h, "var/lib/rdmaform/staged.json")); err == nil {
		t.Errorf("staged ledger after the revert:\n%s", b)
	}
	if exists(filepath.Join(h, "run/reboot-required")) {
		t.Error("/run/reboot-required is left after the revert")
	}
	if code, out, errs := runCLI(t, "--sim", h, "status"); code != 0 || !strings.Contains(out, "Nothing waits for a reboot.") {
		t.Errorf("status after the revert: exit %d, want 0\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "--sim", h, "plan", "-f", spec); code != 2 || !strings.Contains(out, "KEEP_IB_LINK_UP_P1") {
		t.Errorf("plan after the revert: exit %d, want 2 with the change again\n%s%s", code, out, errs)
	}
}
