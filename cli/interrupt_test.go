package cli_test

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGINTDuringApply: a real rdmaform process gets SIGINT while a
// firmware set (emulated, 2 s) is under way. The set finishes, no other
// change starts, apply says what was and was not applied and exits 130;
// the next plan shows exactly the change that is left. SIGTERM gives 143.
func TestSIGINTDuringApply(t *testing.T) {
	bin := buildRdmaform(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			h := filepath.Join(dir, "host")
			if out, err := exec.Command(bin, "sim", "new", h, "--profile", "cx6-vpi-ib", "--latency", "mlxconfig=2s").CombinedOutput(); err != nil {
				t.Fatalf("sim new: %v\n%s", err, out)
			}
			spec := filepath.Join(dir, "spec.yaml")
			if err := os.WriteFile(spec, []byte("version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params: {LINK_TYPE_P1: ETH}\nmodules: [rdma_ucm]\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "--sim", h, "apply", "--yes", "-f", spec)
			cmd.Env = append(os.Environ(), "NO_COLOR=1")
			stdout, errs, err := runSignalled(t, cmd, "firmware[0000:3b:00.0]: updating...", sig)
			var ee *exec.ExitError
			want := 128 + int(sig)
			if !errors.As(err, &ee) || ee.ExitCode() != want {
				t.Fatalf("apply: %v, want exit %d\nstdout:\n%s\nstderr:\n%s", err, want, stdout, errs)
			}
			if !strings.Contains(stdout, "Interrupted: applied firmware[0000:3b:00.0]; not applied: module[rdma_ucm].") {
				t.Errorf("apply output:\n%s", stdout)
			}
			if !strings.Contains(errs, "firmware[0000:3b:00.0]: updated") || strings.Contains(errs, "module[rdma_ucm]: creating") {
				t.Errorf("want the set finished and the module not started:\n%s", errs)
			}
			out, err := exec.Command(bin, "--sim", h, "plan", "-f", spec).CombinedOutput()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
				t.Fatalf("plan after the interrupt: %v, want exit 2\n%s", err, out)
			}
			if !strings.Contains(string(out), "+ module[rdma_ucm]") || !strings.Contains(string(out), "LINK_TYPE_P1") || strings.Contains(string(out), "~ firmware[") {
				t.Errorf("plan after the interrupt: want only the module left, firmware pending:\n%s", out)
			}
		})
	}
}

// runSignalled runs cmd and sends it sig 200 ms after it printed a line
// starting with at on stderr (the operation it names is under way); it
// returns its stdout, its stderr and how it ended.
func runSignalled(t *testing.T, cmd *exec.Cmd, at string, sig syscall.Signal) (stdout, stderr string, err error) {
	t.Helper()
	var out strings.Builder
	cmd.Stdout = &out
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.HasPrefix(sc.Text(), at) {
			time.Sleep(200 * time.Millisecond)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = cmd.Wait()
	return out.String(), strings.Join(lines, "\n"), err
}
