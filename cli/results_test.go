package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/plan"
)

// TestRunResults: plan and apply run in process hand back what they made
// as values (the Ansible module reads these, not JSON): the plan, then
// apply's report with the plan made after the changes, which is empty.
func TestRunResults(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "host")
	env := func(stdin string) Env {
		return Env{Stdin: strings.NewReader(stdin), Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, Environ: []string{}}
	}
	if code, _ := RunResults([]string{"sim", "new", dir, "--profile", "cx5-roce"}, env("")); code != 0 {
		t.Fatalf("sim new: exit %d", code)
	}
	spec := "version: 1\ndevices:\n  - name: mlx5_0\n    ports: [{port: 1, roce: {tos: 106}}]\n"
	code, res := RunResults([]string{"--sim", dir, "plan", "-f", "-"}, env(spec))
	if code != 2 || res.Plan == nil || len(res.Plan.Changes) != 1 || res.Plan.Changes[0].Address != plan.Addr("rdma_cm", "mlx5_0/1") || res.Report != nil {
		t.Fatalf("plan: exit %d, %+v; want exit 2 and the one rdma_cm change", code, res)
	}
	code, res = RunResults([]string{"--sim", dir, "apply", "--yes", "-f", "-"}, env(spec))
	if code != 0 || res.Report == nil || !res.Report.Ran || res.Report.After == nil || len(res.Report.After.Changes) != 0 || len(res.Report.Outcome.Applied) != 1 {
		t.Fatalf("apply: exit %d, %+v; want the change applied and nothing left", code, res.Report)
	}
	code, res = RunResults([]string{"--sim", dir, "plan", "-f", "-"}, env("version: 1\nbogus: 1\n"))
	if code != 1 || res.Plan != nil {
		t.Errorf("a bad spec: exit %d, plan %v; want exit 1 and no plan", code, res.Plan)
	}
}
