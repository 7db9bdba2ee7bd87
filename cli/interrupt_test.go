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
			var stdout strings.Builder
			cmd.Stdout = &stdout
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var errLines []string
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				errLines = append(errLines, sc.Text())
				if strings.HasPrefix(sc.Text(), "firmware[0000:3b:00.0]: updating...") {
					time.Sleep(200 * time.Millisecond) // the set is under way
					if err := cmd.Process.Signal(sig); err != nil {
						t.Fatal(err)
					}
				}
			}
			err = cmd.Wait()
			var ee *exec.ExitError
			want := 128 + int(sig)
			if !errors.As(err, &ee) || ee.ExitCode() != want {
				t.Fatalf("apply: %v, want exit %d\nstdout:\n%s\nstderr:\n%s", err, want, stdout.String(), strings.Join(errLines, "\n"))
			}
			if !strings.Contains(stdout.String(), "Interrupted: applied firmware[0000:3b:00.0]; not applied: module[rdma_ucm].") {
				t.Errorf("apply output:\n%s", stdout.String())
			}
			errs := strings.Join(errLines, "\n")
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
