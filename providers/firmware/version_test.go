package firmware_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/plan"
)

// TestFirmwareVersionOnTheSimulator: devices[].firmware.version and
// min_version against the running firmware (fw_ver of the simulated
// ConnectX-6, 20.35.1012). Met: no change, the plan is empty, apply has
// nothing to do. Not met: a plan error at the spec line naming both
// versions, exit 1; the host is left alone.
func TestFirmwareVersionOnTheSimulator(t *testing.T) {
	cases := []struct {
		name, key, want string
		code            int
		msg             string
	}{
		{"same version", "version", "20.35.1012", plan.ExitOK, ""},
		{"running is lower", "version", "20.36.1012", plan.ExitError, "mlx5_0 (0000:3b:00.0) runs firmware 20.35.1012; the spec asks for version 20.36.1012. Give firmware.image"},
		{"running is higher", "version", "20.35.1011", plan.ExitError, "runs firmware 20.35.1012; the spec asks for version 20.35.1011"},
		{"min_version met exactly", "min_version", "20.35.1012", plan.ExitOK, ""},
		{"min_version met by a prefix", "min_version", "20.35", plan.ExitOK, ""},
		{"min_version compared as numbers", "min_version", "20.4", plan.ExitOK, ""},
		{"min_version not met", "min_version", "20.35.1013", plan.ExitError, "mlx5_0 (0000:3b:00.0) runs firmware 20.35.1012, older than min_version 20.35.1013. Give firmware.image"},
		{"min_version not met, major", "min_version", "21", plan.ExitError, "runs firmware 20.35.1012, older than min_version 21."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			hostDir := filepath.Join(dir, "host")
			spec := filepath.Join(dir, "host.yaml")
			text := "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      " + c.key + ": \"" + c.want + "\"\n"
			if err := os.WriteFile(spec, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			step(t, 0, nil, "sim", "new", hostDir, "--profile", "cx6-vpi-ib")
			sd := "--sim=" + hostDir
			before, err := os.ReadFile(filepath.Join(hostDir, "sim.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if c.code == plan.ExitOK {
				step(t, plan.ExitOK, []string{"No changes."}, sd, "plan", "-f", spec)
				step(t, plan.ExitOK, nil, sd, "apply", "-f", spec, "--yes")
				step(t, plan.ExitOK, []string{"No changes."}, sd, "plan", "-f", spec)
				return
			}
			at := spec + ":5:" + strconv.Itoa(len("      "+c.key+": ")+1)
			step(t, plan.ExitError, []string{at, c.msg}, sd, "plan", "-f", spec)
			step(t, plan.ExitError, []string{at, c.msg}, sd, "apply", "-f", spec, "--yes")
			after, err := os.ReadFile(filepath.Join(hostDir, "sim.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if string(before) != string(after) {
				t.Errorf("a refused apply changed the host")
			}
		})
	}
}

// TestFirmwareVersionAudit: a firmware version drift is a failed check of
// the adapter in the audit, with both versions, and a Prometheus series.
func TestFirmwareVersionAudit(t *testing.T) {
	dir := t.TempDir()
	hostDir := filepath.Join(dir, "host")
	spec := filepath.Join(dir, "host.yaml")
	if err := os.WriteFile(spec, []byte("version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware: {min_version: \"20.36\"}\n  - pci: \"0000:3b:00.1\"\n    firmware: {version: \"20.35.1012\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	step(t, 0, nil, "sim", "new", hostDir, "--profile", "cx6-vpi-ib")
	sd := "--sim=" + hostDir
	step(t, plan.ExitChanges, []string{"firmware[0000:3b:00.0]", "runs firmware 20.35.1012, older than min_version 20.36"}, sd, "audit", "-f", spec)
	out := step(t, plan.ExitChanges, []string{
		`rdmaform_health{resource="firmware[0000:3b:00.0]",check="finding"} 0`,
		`rdmaform_drift{resource="firmware[0000:3b:00.1]"} 0`,
	}, sd, "audit", "-f", spec, "-o", "prometheus")
	if strings.Contains(out, `rdmaform_health{resource="firmware[0000:3b:00.1]"`) {
		t.Errorf("the adapter whose version matches has a failing check:\n%s", out)
	}
}

// TestFirmwareVersionOfSoftRoCE: a Soft-RoCE device has no firmware (its
// fw_ver is empty); a version asked of it is a clear finding.
func TestFirmwareVersionOfSoftRoCE(t *testing.T) {
	dir := t.TempDir()
	hostDir := filepath.Join(dir, "host")
	spec := filepath.Join(dir, "host.yaml")
	if err := os.WriteFile(spec, []byte("version: 1\nmodules: [rdma_rxe]\nrxe:\n  - {name: rxe0, netdev: enp1s0}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	step(t, 0, nil, "sim", "new", hostDir, "--profile", "vm-soft")
	sd := "--sim=" + hostDir
	step(t, plan.ExitOK, nil, sd, "apply", "-f", spec, "--yes")
	step(t, plan.ExitOK, []string{"No changes."}, sd, "plan", "-f", spec)
	withVersion := filepath.Join(dir, "version.yaml")
	if err := os.WriteFile(withVersion, []byte("version: 1\ndevices:\n  - name: rxe0\n    firmware: {min_version: \"1\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	step(t, plan.ExitError, []string{withVersion + ":4:29", "rxe0 reports no firmware version (its fw_ver is empty: a software device such as Soft-RoCE has no firmware), so min_version 1 cannot be checked"},
		sd, "plan", "-f", withVersion)
}

// TestDocsFirmwareVersion plans the spec of the firmware version
// paragraph of docs/guides/firmware.md on the simulated host it names
// and expects the error it shows.
func TestDocsFirmwareVersion(t *testing.T) {
	readme, err := os.ReadFile("../../docs/guides/firmware.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	i := strings.Index(text, "\nFirmware versions: ")
	if i < 0 {
		t.Fatal("docs/guides/firmware.md has no paragraph \"Firmware versions:\"")
	}
	text = text[i:]
	y := strings.Index(text, "```yaml\n")
	if y < 0 {
		t.Fatal("the paragraph has no yaml block")
	}
	block := text[y+len("```yaml\n"):]
	block = block[:strings.Index(block, "```")]
	rest := text[y+len("```yaml\n")+len(block)+len("```\n"):]
	e := strings.Index(rest, "```text\n")
	if e < 0 {
		t.Fatal("the paragraph shows no error")
	}
	want := strings.TrimSpace(rest[e+len("```text\n"):][:strings.Index(rest[e+len("```text\n"):], "```")])

	dir := t.TempDir()
	hostDir := filepath.Join(dir, "host")
	spec := filepath.Join(dir, "host.yaml")
	if err := os.WriteFile(spec, []byte(block), 0o644); err != nil {
		t.Fatal(err)
	}
	step(t, 0, nil, "sim", "new", hostDir, "--profile", "cx6-vpi-ib")
	step(t, plan.ExitError, []string{filepath.Join(dir, want)}, "--sim="+hostDir, "plan", "-f", spec)
}

// TestShowCapturesFirmwareVersion: show writes each adapter function's
// running firmware as firmware.version, so an audit against the capture
// is compliant on the same host and catches a firmware updated since.
func TestShowCapturesFirmwareVersion(t *testing.T) {
	dir := t.TempDir()
	hostDir := filepath.Join(dir, "host")
	golden := filepath.Join(dir, "golden.yaml")
	step(t, 0, nil, "sim", "new", hostDir, "--profile", "cx6-vpi-ib")
	sd := "--sim=" + hostDir
	captured := step(t, plan.ExitOK, nil, sd, "show")
	if n := strings.Count(captured, "\n      version: 20.35.1012\n"); n != 2 {
		t.Fatalf("show wrote firmware.version %d times, want once per function:\n%s", n, captured)
	}
	if err := os.WriteFile(golden, []byte(captured), 0o644); err != nil {
		t.Fatal(err)
	}
	step(t, plan.ExitOK, []string{"The host matches the golden spec."}, sd, "audit", "-f", golden)
	// The adapter's firmware is updated outside rdmaform and the host
	// rebooted: every function of the card reports the new fw_ver.
	state := filepath.Join(hostDir, "sim.yaml")
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	updated := strings.ReplaceAll(string(b), "fw_ver: 20.35.1012", "fw_ver: 20.39.1002")
	if updated == string(b) {
		t.Fatal("the simulated host has no fw_ver 20.35.1012")
	}
	if err := os.WriteFile(state, []byte(updated), 0o644); err != nil {
		t.Fatal(err)
	}
	step(t, 0, nil, "sim", "reboot", hostDir)
	step(t, plan.ExitChanges, []string{
		"FAIL    firmware[0000:3b:00.0] finding: mlx5_0 (0000:3b:00.0) runs firmware 20.39.1002; the spec asks for version 20.35.1012.",
		"FAIL    firmware[0000:3b:00.1] finding: mlx5_1 (0000:3b:00.1) runs firmware 20.39.1002; the spec asks for version 20.35.1012.",
	}, sd, "audit", "-f", golden)
}
