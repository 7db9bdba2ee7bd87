package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/systemdlab"
)

// TestRollbackSurvivesTheApply: apply --confirm-timeout arms a watcher
// before its first change. A real rdmaform apply is killed while it waits
// for confirmation (SIGKILL, as an OOM kill; SIGHUP, as a dropped SSH
// session): the watcher rolls the changes back within the timeout and a
// few seconds, and a confirm that comes too late exits 1 saying what was
// rolled back and when. A confirm in time keeps the changes, and the
// watcher then does nothing. 'rdmaform rollback' undoes at once.
func TestRollbackSurvivesTheApply(t *testing.T) {
	rollbackSurvives(t, nil, func(*testing.T, bool) {})
}

// TestRollbackTimerOnRealSystemd: the same, with a real systemd manager
// holding the deadline in a transient timer (rdmaform-rollback.timer)
// instead of a detached watcher: armed while the apply waits, gone once
// confirmed or rolled back.
func TestRollbackTimerOnRealSystemd(t *testing.T) {
	l := systemdlab.Start(t)
	mgr := &host.SystemdBus{Address: l.Address}
	t.Cleanup(mgr.Close)
	rollbackSurvives(t, []string{"RDMAFORM_SYSTEMD_ADDRESS=" + l.Address}, func(t *testing.T, want bool) {
		t.Helper()
		on, err := mgr.TimerActive(context.Background(), "rdmaform-rollback")
		// After a rollback by the timer's own service, the timer goes once
		// that service has ended (on a loaded host, a while after the
		// journal went).
		for start := time.Now(); !want && on && err == nil && time.Since(start) < 30*time.Second; {
			time.Sleep(100 * time.Millisecond)
			on, err = mgr.TimerActive(context.Background(), "rdmaform-rollback")
		}
		if err != nil || on != want {
			t.Errorf("rdmaform-rollback.timer active: %v (%v), want %v\n%s", on, err, want, l.Log())
		}
	})
}

// rollbackSurvives runs the scenarios with env added to rdmaform's;
// armed checks whether the systemd timer is armed.
func rollbackSurvives(t *testing.T, env []string, armed func(t *testing.T, want bool)) {
	bin := buildRdmaform(t)
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.yaml")
	// A new rxe link and rdma_cm values: a create (undone by deleting) and
	// an update (undone by the old values).
	if err := os.WriteFile(spec, []byte("version: 1\nmodules: [rdma_rxe]\nrxe:\n  - {name: rxe0, netdev: enp1s0}\ndevices:\n  - name: rxe0\n    ports:\n      - port: 1\n        roce: {tos: 106}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rf := func(args ...string) (int, string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	newHost := func(name string) string {
		h := filepath.Join(dir, name)
		if code, out := rf("sim", "new", h, "--profile", "vm-soft"); code != 0 {
			t.Fatalf("sim new: %s", out)
		}
		return h
	}
	// startApply runs apply --confirm-timeout and returns once it waits,
	// with its stderr so far.
	startApply := func(t *testing.T, h, timeout string) (*exec.Cmd, string) {
		cmd, sc, errb := startWaiting(t, bin, env, "--sim", h, "apply", "--yes", "--confirm-timeout", timeout, "-f", spec)
		stderr := errb.String()
		go func() {
			for sc.Scan() {
			}
		}()
		return cmd, stderr
	}
	planCode := func(h string) int { c, _ := rf("--sim", h, "plan", "-f", spec); return c }

	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGHUP} {
		t.Run("killed by "+sig.String(), func(t *testing.T) {
			h := newHost("h-" + strings.ReplaceAll(sig.String(), " ", "-"))
			// The timeout leaves a loaded host time to check the changes
			// while the apply waits.
			start := time.Now()
			cmd, _ := startApply(t, h, "8s")
			if planCode(h) != 0 {
				t.Fatal("the changes are not applied while the apply waits")
			}
			armed(t, true)
			_ = cmd.Process.Signal(sig)
			_ = cmd.Wait()
			// The watcher drops the journal once it has rolled back (the
			// simulated host is not read meanwhile: two processes must not
			// render it at once).
			journal := filepath.Join(h, "run/rdmaform/rollback.json")
			for time.Since(start) < time.Minute {
				if _, err := os.Stat(journal); os.IsNotExist(err) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if planCode(h) != 2 {
				log, _ := os.ReadFile(filepath.Join(h, "run/rdmaform/rollback.log"))
				t.Fatalf("not rolled back %s after the apply started (timeout 8s); watcher log:\n%s", time.Since(start).Round(time.Second), log)
			}
			t.Logf("rolled back %s after the apply started (timeout 8s)", time.Since(start).Round(100*time.Millisecond))
			armed(t, false)
			code, out := rf("--sim", h, "plan", "-f", spec)
			for _, want := range []string{"+ rxe[rxe0]", "rdma_cm[rxe0/1]"} {
				if code != 2 || !strings.Contains(out, want) {
					t.Errorf("plan after the rollback lacks %q:\n%s", want, out)
				}
			}
			code, out = rf("--sim", h, "confirm")
			if code != 1 || !strings.Contains(out, "too late: the changes were rolled back at ") || !strings.Contains(out, "rxe[rxe0]") {
				t.Errorf("late confirm: exit %d\n%s", code, out)
			}
		})
	}

	t.Run("confirmed in time", func(t *testing.T) {
		h := newHost("h-confirmed")
		cmd, stderr := startApply(t, h, "20s")
		armed(t, true)
		if code, out := rf("--sim", h, "confirm"); code != 0 {
			t.Fatalf("confirm: %d %s", code, out)
		}
		armed(t, false)
		_ = cmd.Wait()
		// The watcher (where one holds the deadline) ends without acting.
		if _, rest, ok := strings.Cut(stderr, "(watcher pid "); ok {
			pid, _ := strconv.Atoi(strings.Fields(rest)[0][:len(strings.Fields(rest)[0])-2])
			for start := time.Now(); running(pid) && time.Since(start) < time.Minute; {
				time.Sleep(100 * time.Millisecond)
			}
			if running(pid) {
				t.Errorf("the watcher (pid %d) goes on after the confirm", pid)
			}
		}
		if planCode(h) != 0 {
			t.Errorf("confirmed changes were rolled back")
		}
	})

	// 'rdmaform rollback' while the apply waits: the apply sees its
	// confirm file go, as for a confirm, and must tell the two apart: it
	// says the changes were rolled back and exits 1, never "Confirmed".
	t.Run("rollback now", func(t *testing.T) {
		h := newHost("h-now")
		cmd, sc, _ := startWaiting(t, bin, env, "--sim", h, "apply", "--yes", "--confirm-timeout", "30s", "-f", spec)
		rest := make(chan string)
		go func() {
			var b strings.Builder
			for sc.Scan() {
				b.WriteString(sc.Text() + "\n")
			}
			rest <- b.String()
		}()
		code, out := rf("--sim", h, "rollback")
		if code != 0 || !strings.Contains(out, "Rolled back at ") {
			t.Errorf("rollback: exit %d\n%s", code, out)
		}
		armed(t, false)
		applyOut := <-rest
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || strings.Contains(applyOut, "Confirmed") || !strings.Contains(applyOut, "Not kept: the changes were rolled back") {
			t.Errorf("the waiting apply after 'rdmaform rollback': %v, want exit 1 saying the changes were rolled back\n%s", err, applyOut)
		}
		if planCode(h) != 2 {
			t.Errorf("after rollback the changes are still there")
		}
		if code, _ := rf("--sim", h, "rollback"); code != 1 {
			t.Errorf("a second rollback: exit %d, want 1 (nothing to roll back)", code)
		}
	})
}

// TestApplyRefusedWhileOneWaits: while an apply waits for confirmation,
// another apply is refused with what to do, and changes nothing.
func TestApplyRefusedWhileOneWaits(t *testing.T) {
	dir := t.TempDir()
	h := filepath.Join(dir, "host")
	if code, _, errs := runCLI(t, "sim", "new", h, "--profile", "vm-soft"); code != 0 {
		t.Fatalf("sim new: %s", errs)
	}
	if err := os.MkdirAll(filepath.Join(h, "run/rdmaform"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h, "run/rdmaform/confirm-pending"), []byte("pid 4242, revert at 2030-01-01T00:00:00Z\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "m.yaml")
	if err := os.WriteFile(spec, []byte("version: 1\nmodules: [rdma_ucm]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(t, "--sim", h, "apply", "--yes", "-f", spec)
	if code != 1 || !strings.Contains(errs, "an apply is waiting for confirmation on this host (pid 4242, revert at 2030-01-01T00:00:00Z): run 'rdmaform --sim "+h+" confirm' or 'rdmaform --sim "+h+" rollback' first; nothing was changed") {
		t.Errorf("exit %d\n%s", code, errs)
	}
	if code, _, _ := runCLI(t, "--sim", h, "plan", "-f", spec); code != 2 {
		t.Errorf("the host changed: plan exit %d", code)
	}
}

// TestRollbackAfterReboot: an apply --confirm-timeout waits, and the host
// goes down before anyone confirms (the apply and its watcher die with
// it, /run is lost). At boot, the boot unit's first step (rollback
// --after-boot) puts back what the apply changed, its spec copy included,
// so the boot unit's apply brings the old runtime state; a confirm after
// that exits 1 saying the boot unit rolled back.
func TestRollbackAfterReboot(t *testing.T) {
	bin := buildRdmaform(t)
	dir := t.TempDir()
	h := filepath.Join(dir, "host")
	rf := func(args ...string) (int, string) {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	if code, out := rf("sim", "new", h, "--profile", "vm-soft"); code != 0 {
		t.Fatalf("sim new: %s", out)
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := write("old.yaml", "version: 1\npersistence: boot-unit\nmodules: [rdma_rxe]\nrxe:\n  - {name: rxe0, netdev: enp1s0}\ndevices:\n  - name: rxe0\n    ports:\n      - port: 1\n        roce: {tos: 32}\n")
	next := write("new.yaml", "version: 1\npersistence: boot-unit\nmodules: [rdma_rxe, rdma_ucm]\nrxe:\n  - {name: rxe0, netdev: enp1s0}\ndevices:\n  - name: rxe0\n    ports:\n      - port: 1\n        roce: {tos: 106}\n")
	if code, out := rf("--sim", h, "apply", "--yes", "-f", old); code != 0 {
		t.Fatalf("first apply: exit %d\n%s", code, out)
	}
	oldBoot, err := os.ReadFile(filepath.Join(h, "etc/rdmaform/boot.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// Nothing to roll back: success, nothing said.
	if code, out := rf("--sim", h, "rollback", "--after-boot"); code != 0 || out != "" {
		t.Fatalf("rollback --after-boot with nothing pending: exit %d %q", code, out)
	}

	cmd, _, stderr := startWaiting(t, bin, nil, "--sim", h, "apply", "--yes", "--confirm-timeout", "10m", "-f", next)
	// The host goes down: the apply and its watcher (started by this
	// test's rdmaform, ended here by PID) die, then the reboot.
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	var watcher int
	for _, line := range strings.Split(stderr.String(), "\n") {
		if _, rest, ok := strings.Cut(line, "(watcher pid "); ok {
			watcher, _ = strconv.Atoi(strings.TrimSuffix(strings.Fields(rest)[0], "):"))
		}
	}
	if watcher <= 0 {
		t.Fatalf("no watcher pid in:\n%s", stderr.String())
	}
	if p, err := os.FindProcess(watcher); err == nil {
		_ = p.Kill()
	}
	// Before the reboot, the killed apply's journal waits for its
	// rollback: another apply is refused (that rollback would undo it).
	if code, out := rf("--sim", h, "apply", "--yes", "-f", old); code != 1 || !strings.Contains(out, "nothing was changed") {
		t.Errorf("an apply beside a killed apply's journal: exit %d, want 1 and refused\n%s", code, out)
	}
	// The reboot runs the boot unit: ExecStartPre (the rollback), then
	// ExecStart (the apply of the spec copy the rollback put back).
	code, out := rf("sim", "reboot", h)
	if code != 0 || !strings.Contains(out, "Rolled back at ") || !strings.Contains(out, "by the boot unit") || !strings.Contains(out, "rdmaform.service: started") {
		t.Fatalf("sim reboot (the boot unit's rollback --after-boot and apply): exit %d\n%s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(h, "etc/rdmaform/boot.yaml")); string(b) != string(oldBoot) {
		t.Errorf("boot.yaml after the rollback:\n%s\nwant the old one:\n%s", b, oldBoot)
	}
	if code, out := rf("--sim", h, "plan", "-f", old); code != 0 {
		t.Errorf("the host is not as before the unconfirmed apply: plan exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(h, "var/lib/rdmaform/unconfirmed.json")); !os.IsNotExist(err) {
		t.Errorf("the journal's copy outlives its rollback: %v", err)
	}
	if code, out := rf("--sim", h, "confirm"); code != 1 || !strings.Contains(out, "too late") || !strings.Contains(out, "by the boot unit") {
		t.Errorf("confirm after the reboot: exit %d\n%s", code, out)
	}
	// A second boot: nothing left to do.
	if code, out := rf("--sim", h, "rollback", "--after-boot"); code != 0 || out != "" {
		t.Errorf("rollback --after-boot again: exit %d %q", code, out)
	}
}

// running tells whether a process runs (a zombie no longer does).
func running(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}
