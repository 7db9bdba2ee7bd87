package cli_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/sim"
)

// TestSimRebootRunsTheBootUnit: on a host with the boot unit installed,
// a plain sim reboot runs it as systemd would (its rollback, then its
// apply of the spec copy), so the runtime settings are set again and the
// plan is empty; --no-boot-unit leaves them to be done, and the help's
// commands, run as written, do what the unit does.
func TestSimRebootRunsTheBootUnit(t *testing.T) {
	const spec = "../examples/lossless-roce.yaml" // persistence: boot-unit
	dir := copyHost(t, exampleHost(t, spec), t.TempDir())
	converge(t, dir, spec, exampleFlags(t, spec))
	code, out := rdmaform(t, "sim", "reboot", dir)
	if code != 0 || !strings.Contains(out, "ExecStartPre=-/usr/local/sbin/rdmaform rollback --after-boot: exit 0") ||
		!strings.Contains(out, "ExecStart=/usr/local/sbin/rdmaform apply --yes --only runtime -f /etc/rdmaform/boot.yaml: exit 0") ||
		!strings.Contains(out, "rdmaform.service: started") {
		t.Fatalf("sim reboot: exit %d, want 0 with the boot unit's two commands run\n%s", code, out)
	}
	if code, out := rdmaform(t, "--sim", dir, "plan", "-f", spec); code != 0 {
		t.Fatalf("plan after sim reboot: exit %d, want 0 (the boot unit set the runtime settings again)\n%s", code, out)
	}
	if st := unitState(t, dir); st != "active" {
		t.Errorf("rdmaform.service is %s after the boot, want active", st)
	}

	code, help, _ := clitest.Run(t, "sim", "reboot", "--help")
	if code != 0 || !strings.Contains(help, "--no-boot-unit skips the boot unit") {
		t.Fatalf("sim reboot --help: exit %d\n%s", code, help)
	}
	if code, out := rdmaform(t, "sim", "reboot", dir, "--no-boot-unit"); code != 0 || strings.Contains(out, "rdmaform.service") {
		t.Fatalf("sim reboot --no-boot-unit: exit %d, want 0 without the boot unit\n%s", code, out)
	}
	if code, out := rdmaform(t, "--sim", dir, "plan", "-f", spec); code != 2 || !strings.Contains(out, "not persistent") {
		t.Fatalf("plan after sim reboot --no-boot-unit: exit %d, want 2 with runtime changes\n%s", code, out)
	}
	var cmds [][]string
	sc := bufio.NewScanner(strings.NewReader(help))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); strings.HasPrefix(l, "rdmaform --sim DIR ") {
			args := strings.Fields(strings.ReplaceAll(l, "DIR", dir))
			cmds = append(cmds, args[1:])
		}
	}
	if len(cmds) != 2 {
		t.Fatalf("the help gives %d commands, want the rollback and the apply:\n%s", len(cmds), help)
	}
	for _, c := range cmds {
		if code, out := rdmaform(t, c...); code != 0 {
			t.Fatalf("%s: exit %d\n%s", strings.Join(c, " "), code, out)
		}
	}
	if code, out := rdmaform(t, "--sim", dir, "plan", "-f", spec); code != 0 {
		t.Errorf("plan after the help's commands: exit %d\n%s", code, out)
	}
}

// TestSimRebootBootUnitFails: a boot unit whose apply fails at boot (its
// spec copy no longer loads) is reported by sim reboot, which exits 1,
// and the unit is failed; the runtime settings are still to be done.
func TestSimRebootBootUnitFails(t *testing.T) {
	const spec = "../examples/lossless-roce.yaml"
	dir := copyHost(t, exampleHost(t, spec), t.TempDir())
	converge(t, dir, spec, exampleFlags(t, spec))
	if err := os.WriteFile(filepath.Join(dir, "etc/rdmaform/boot.yaml"), []byte("version: 9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := rdmaform(t, "sim", "reboot", dir)
	if code != 1 || !strings.Contains(out, "rdmaform.service failed at boot: ExecStart=/usr/local/sbin/rdmaform apply --yes --only runtime -f /etc/rdmaform/boot.yaml exited 1") ||
		!strings.Contains(out, "boot.yaml:1:10: error") {
		t.Fatalf("sim reboot with a broken boot spec: exit %d, want 1 naming the unit, its command and the apply's error\n%s", code, out)
	}
	if st := unitState(t, dir); st != "failed" {
		t.Errorf("rdmaform.service is %s after the failed boot, want failed", st)
	}
	if code, out := rdmaform(t, "--sim", dir, "plan", "-f", spec); code != 2 {
		t.Errorf("plan after the failed boot unit: exit %d, want 2\n%s", code, out)
	}
}

// unitState is the boot unit's ActiveState on a simulated host.
func unitState(t *testing.T, dir string) string {
	t.Helper()
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Host()
	if err != nil {
		t.Fatal(err)
	}
	u, err := h.Systemd.Unit(context.Background(), "rdmaform.service")
	if err != nil {
		t.Fatal(err)
	}
	return u.ActiveState
}
