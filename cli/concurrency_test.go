package cli_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// proc is one finished rdmaform process.
type proc struct {
	args           []string
	code           int
	stdout, stderr string
}

// rdmaformProc runs rdmaform as a process of its own (the test binary,
// which TestMain puts on PATH as rdmaform), as concurrent commands on one
// host are: each with its own open simulated host and its own locks.
func rdmaformProc(t *testing.T, args ...string) proc {
	t.Helper()
	cmd := exec.Command("rdmaform", args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	err := cmd.Run()
	p := proc{args: args, stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		p.code = ee.ExitCode()
	case err != nil:
		t.Errorf("rdmaform %s: %v", strings.Join(args, " "), err)
		p.code = -1
	}
	return p
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestParallelAppliesKeepEveryChange: five applies of five different
// changes started at once on one simulated host all succeed, one after
// the other (the host's apply lock), and every change is there after:
// each process makes its change to the state the others left.
func TestParallelAppliesKeepEveryChange(t *testing.T) {
	dir := t.TempDir()
	h := filepath.Join(dir, "host")
	if code, out := rdmaform(t, "sim", "new", h, "--profile", "cx5-roce"); code != 0 {
		t.Fatalf("sim new: exit %d\n%s", code, out)
	}
	parts := []string{
		"devices:\n  - name: mlx5_0\n    ports:\n      - port: 1\n        roce: {tos: 106}\n",
		"devices:\n  - name: mlx5_1\n    ports:\n      - port: 1\n        roce: {tos: 32}\n",
		"modules: [rdma_ucm]\n",
		"interfaces:\n  - name: ens1f0np0\n    mtu: 9000\n",
		"interfaces:\n  - name: ens1f1np1\n    mtu: 4200\n",
	}
	var specs []string
	for i, p := range parts {
		specs = append(specs, writeFile(t, filepath.Join(dir, "spec"+string(rune('a'+i))+".yaml"), "version: 1\n"+p))
		if code, out := rdmaform(t, "--sim", h, "plan", "-f", specs[i]); code != 2 {
			t.Fatalf("plan of %s before: exit %d, want 2\n%s", specs[i], code, out)
		}
	}
	res := make([]proc, len(specs))
	var wg sync.WaitGroup
	for i, spec := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = rdmaformProc(t, "--sim", h, "apply", "--yes", "-f", spec)
		}()
	}
	wg.Wait()
	for _, p := range res {
		if p.code != 0 {
			t.Errorf("rdmaform %s: exit %d, want 0\n%s%s", strings.Join(p.args, " "), p.code, p.stdout, p.stderr)
		}
	}
	// Every change is there: each spec's plan is empty.
	for _, spec := range specs {
		if code, out := rdmaform(t, "--sim", h, "plan", "-f", spec); code != 0 {
			t.Errorf("plan of %s after the parallel applies: exit %d, want 0 (its change was lost)\n%s", filepath.Base(spec), code, out)
		}
	}
}

// TestPlansBesideApply: plans, audits and shows that run again and again
// beside applies on one simulated host all give their right answer, and
// the applies succeed: the readers' configfs groups (rdma_cm) are shared
// with the apply's, never removed under it.
func TestPlansBesideApply(t *testing.T) {
	dir := t.TempDir()
	h := filepath.Join(dir, "host")
	if code, out := rdmaform(t, "sim", "new", h, "--profile", "cx5-roce"); code != 0 {
		t.Fatalf("sim new: exit %d\n%s", code, out)
	}
	// The readers ask for what the applies do not change (the RoCE
	// mode of both ports), so their answer is "no changes" throughout.
	mode := writeFile(t, filepath.Join(dir, "mode.yaml"), `version: 1
devices:
  - name: mlx5_0
    ports:
      - port: 1
        roce: {mode: v2}
  - name: mlx5_1
    ports:
      - port: 1
        roce: {mode: v2}
`)
	tos := func(n int) string {
		return writeFile(t, filepath.Join(dir, "tos"+string(rune('0'+n))+".yaml"), strings.ReplaceAll(`version: 1
devices:
  - name: mlx5_0
    ports:
      - port: 1
        roce: {tos: TOS}
  - name: mlx5_1
    ports:
      - port: 1
        roce: {tos: TOS}
`, "TOS", []string{"32", "64", "96"}[n]))
	}
	readers := [][]string{
		{"plan", "-f", mode}, {"plan", "-f", mode}, {"plan", "-f", mode}, {"plan", "-f", mode},
		{"plan", "-f", mode}, {"plan", "-f", mode}, {"audit", "-f", mode}, {"show"},
	}
	var done atomic.Bool
	var mu sync.Mutex
	runs := 0
	var wg sync.WaitGroup
	for _, args := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// At least once, and on until the applies are done.
			for first := true; first || !done.Load(); first = false {
				p := rdmaformProc(t, append([]string{"--sim", h}, args...)...)
				mu.Lock()
				runs++
				mu.Unlock()
				if p.code != 0 {
					t.Errorf("rdmaform %s beside an apply: exit %d, want 0\n%s%s", strings.Join(p.args, " "), p.code, p.stdout, p.stderr)
				}
			}
		}()
	}
	for n := 0; n < 3; n++ {
		spec := tos(n)
		if p := rdmaformProc(t, "--sim", h, "apply", "--yes", "-f", spec); p.code != 0 {
			t.Errorf("apply %d beside plans: exit %d, want 0\n%s%s", n, p.code, p.stdout, p.stderr)
		}
	}
	done.Store(true)
	wg.Wait()
	t.Logf("%d read-only runs beside 3 applies", runs)
	// apply, then plan is empty.
	if code, out := rdmaform(t, "--sim", h, "plan", "-f", tos(2)); code != 0 {
		t.Errorf("plan after the applies: exit %d, want 0\n%s", code, out)
	}
}
