package memlock_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/slurmlab"
	"github.com/rdmaform/rdmaform/internal/testlab/systemdlab"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/memlock"
)

const slurmdUnit = "rdmaform-slurmd-n1.service"

// TestSlurmJobMemlock: the real slurmd of the Slurm lab runs as a unit of
// the real systemd lab; a batch job step's `ulimit -l` is what the unit's
// LimitMEMLOCK gives slurmd once apply has written the drop-in and
// restarted it. slurm.conf has PropagateResourceLimitsExcept=MEMLOCK,
// without which Slurm gives a job the memlock limit of the process that
// submitted it instead of slurmd's.
//
// This machine's processes have an 8 MiB hard limit and no
// CAP_SYS_RESOURCE, so no manager here can give unlimited; the test sets
// half the hard limit, below the 8 MiB default the job has before.
func TestSlurmJobMemlock(t *testing.T) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Max < 128<<10 {
		t.Skipf("this machine's hard memlock limit is %d: too small for the lab", rl.Max)
	}
	ctx := context.Background()
	var h *host.Host
	// The manager starts once the Slurm lab's network namespace exists:
	// it runs in a private mount namespace, where a namespace bound under
	// /run/netns later would not show (setns: EINVAL).
	sl := slurmlab.StartWith(t, 1, slurmlab.Options{
		Conf: []string{"PropagateResourceLimitsExcept=MEMLOCK"},
		StartNode: func(_ testing.TB, node string, argv, env []string) {
			sd := systemdlab.Start(t)
			t.Cleanup(func() {
				if t.Failed() {
					b, _ := os.ReadFile(filepath.Join(sd.Dir, "slurmd-unit.out"))
					t.Logf("the unit's output:\n%s", b)
				}
			})
			h = labHostFor(t, sd, slurmdUnit)
			unit := "[Unit]\nDescription=slurmd of the rdmaform Slurm lab, node " + node + "\n\n[Service]\n" +
				"Environment=" + strings.Join(env, " ") + "\nExecStart=" + strings.Join(argv, " ") + "\nStandardOutput=file:" + filepath.Join(sd.Dir, "slurmd-unit.out") + "\nStandardError=inherit\n"
			sd.AddUnit(t, slurmdUnit, unit)
			if err := h.Systemd.Start(ctx, slurmdUnit); err != nil {
				t.Fatalf("start %s: %v\n%s", slurmdUnit, err, sd.Log())
			}
		},
	})
	job := func(name string) string {
		t.Helper()
		out := filepath.Join(sl.Dir, name+".out")
		sl.MustRun(t, "sbatch", "--parsable", "-w", "n1", "-o", out, "--chdir", sl.Dir, "-J", name, "--wrap", "ulimit -l; ulimit -H -l")
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if b, err := os.ReadFile(out); err == nil && strings.Count(string(b), "\n") >= 2 {
				return strings.Join(strings.Fields(string(b)), " ")
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("job %s wrote nothing to %s\n%s", name, out, sl.Logs())
		return ""
	}
	kib := func(b uint64) string { return strconv.FormatUint(b>>10, 10) }
	before := job("before")
	t.Logf("before apply the job's ulimit -l, -H -l: %s", before)

	limit := rl.Max / 2 &^ 1023
	src := "version: 1\nservices:\n  - name: " + strings.TrimSuffix(slurmdUnit, ".service") + "\n    limits: {memlock: " + memlock.Human(limit) + "}\n"
	p := build(t, h, src)
	if len(p.Changes) != 1 || len(p.Errors) != 0 {
		t.Fatalf("plan: %+v %v", p.Changes, p.Errors)
	}
	if out := apply.Run(ctx, h, p, []plan.Provider{memlock.New()}, apply.Options{}); out.Err != nil {
		t.Fatalf("apply: %v", out.Err)
	}
	if after := build(t, h, src); len(after.Changes) != 0 || len(after.Errors) != 0 {
		t.Fatalf("plan after apply: %+v %v", after.Changes, after.Errors)
	}
	sl.WaitState(t, "n1", "idle", 60*time.Second)
	if got, want := job("after"), kib(limit)+" "+kib(limit); got != want {
		t.Errorf("after apply the job's ulimit -l, -H -l: %q, want %q\n%s", got, want, sl.Logs())
	}
}
