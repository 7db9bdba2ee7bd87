package memlock_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/systemdlab"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/memlock"
	"github.com/rdmaform/rdmaform/schema"
)

const labUnitName = "rdmaform-memlock-lab.service"

const labUnit = `[Unit]
Description=rdmaform memlock provider test unit

[Service]
ExecStart=/bin/sleep infinity
`

// labHost is a host with no RDMA devices whose service manager is the
// lab's. The lab is a user manager, whose units live in its UnitDir, not
// in /etc/systemd/system: the unit's drop-in directory there is a symlink
// to the one rdmaform writes in the host's tree (systemd follows a
// symlinked UNIT.d).
func labHost(t *testing.T, l *systemdlab.Lab) *host.Host { return labHostFor(t, l, labUnitName) }

func labHostFor(t *testing.T, l *systemdlab.Lab, unit string) *host.Host {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "sys/class/infiniband"), 0o755); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(root, "etc/systemd/system", unit+".d")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(d, filepath.Join(l.UnitDir, unit+".d")); err != nil {
		t.Fatal(err)
	}
	fsys, err := host.NewRootFS(root)
	if err != nil {
		t.Fatal(err)
	}
	live, err := host.NewRootFS("/")
	if err != nil {
		t.Fatal(err)
	}
	bus := &host.SystemdBus{Address: l.Address, JobTimeout: 30 * time.Second}
	t.Cleanup(bus.Close)
	return &host.Host{FS: &procFS{FS: fsys, live: live}, Systemd: bus, Name: "systemd lab"}
}

// procFS is the lab host's files: a temporary tree, except that /proc is
// the machine's, read only, where the lab's unit processes are.
type procFS struct {
	host.FS
	live host.FS
}

func (f *procFS) ReadFile(name string) ([]byte, error) {
	if strings.HasPrefix(name, "/proc/") {
		return f.live.ReadFile(name)
	}
	return f.FS.ReadFile(name)
}

func build(t *testing.T, h *host.Host, src string) *plan.Plan {
	t.Helper()
	spec, rep := schema.Parse("spec.yaml", []byte(src))
	if len(rep) > 0 {
		t.Fatalf("spec: %v", rep)
	}
	res, err := plan.Build(context.Background(), h, spec, []plan.Provider{memlock.New()})
	if err != nil {
		t.Fatal(err)
	}
	return res.Plan
}

// processMemlock is the soft and hard locked-memory limits of a process,
// as the kernel enforces them (/proc/PID/limits).
func processMemlock(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "limits"))
	if err != nil {
		t.Fatal(err)
	}
	soft, hard, ok := memlock.ProcessMemlock(b)
	if !ok {
		t.Fatalf("no Max locked memory in /proc/%d/limits:\n%s", pid, b)
	}
	return memlock.Human(soft) + " " + memlock.Human(hard)
}

// TestLabLimitMEMLOCK drives a real systemd manager: the unit runs with
// the manager's default limit; apply writes the drop-in, reloads, reads
// LimitMEMLOCK back over D-Bus, restarts the unit and reads its new
// process's /proc/PID/limits; the next plan is empty; the change's revert
// removes the drop-in and the restarted unit has the old limit again.
//
// A manager sets a unit's limits with setrlimit_closest: a value it may
// not raise to (no CAP_SYS_RESOURCE, above its own hard limit) is clamped
// without an error, while LimitMEMLOCK reads the configured value. This
// machine's processes have an 8 MiB hard limit and no CAP_SYS_RESOURCE,
// so the lab's manager cannot give more: a limit below its hard limit
// converges, and unlimited fails apply naming what the process got (the
// D-Bus property alone read infinity: seen before the process check).
func TestLabLimitMEMLOCK(t *testing.T) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Max < 128<<10 {
		t.Skipf("this machine's hard memlock limit is %d: too small for the lab", rl.Max)
	}
	l := systemdlab.Start(t)
	l.AddUnit(t, labUnitName, labUnit)
	h := labHost(t, l)
	ctx := context.Background()
	if err := h.Systemd.Start(ctx, labUnitName); err != nil {
		t.Fatal(err)
	}
	sig := h.Systemd.(host.UnitSignaller)
	mainPID := func() int {
		t.Helper()
		pid, err := sig.MainPID(ctx, labUnitName)
		if err != nil || pid == 0 {
			t.Fatalf("main PID of %s: %d %v", labUnitName, pid, err)
		}
		return pid
	}
	pid0 := mainPID()
	before := processMemlock(t, pid0)
	spec := func(v string) string {
		return "version: 1\nservices:\n  - name: " + strings.TrimSuffix(labUnitName, ".service") + "\n    limits: {memlock: " + v + "}\n"
	}
	run := func(p *plan.Plan) error {
		return apply.Run(ctx, h, p, []plan.Provider{memlock.New()}, apply.Options{}).Err
	}

	// Half the manager's hard limit, in K: within what it may give.
	want := memlock.Human(rl.Max / 2 &^ 1023)
	p := build(t, h, spec(want))
	if len(p.Changes) != 1 || len(p.Errors) != 0 {
		t.Fatalf("plan: %+v %v", p.Changes, p.Errors)
	}
	first := p.Changes[0]
	if err := run(p); err != nil {
		t.Fatalf("apply %s: %v", want, err)
	}
	if after := build(t, h, spec(want)); len(after.Changes) != 0 || len(after.Errors) != 0 {
		t.Fatalf("plan after apply: %+v %v", after.Changes, after.Errors)
	}
	pid1 := mainPID()
	if pid1 == pid0 {
		t.Errorf("the unit was not restarted (main PID %d)", pid1)
	}
	if got := processMemlock(t, pid1); got != want+" "+want {
		t.Errorf("the restarted unit's process has %q, want %s for both", got, want)
	}
	clitestMin := "64K"
	if err := run(build(t, h, spec(clitestMin))); err != nil {
		t.Fatalf("apply %s: %v", clitestMin, err)
	}
	if got := processMemlock(t, mainPID()); got != "64K 64K" {
		t.Errorf("at 64K the process has %q", got)
	}

	// unlimited: the property reads infinity, the process is clamped.
	if rl.Max != unix.RLIM_INFINITY {
		err := run(build(t, h, spec("unlimited")))
		msg := fmt.Sprintf("its main process runs with Max locked memory %s (/proc/PID/limits), not unlimited", memlock.Human(rl.Max))
		if err == nil || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), "the service manager could not raise it") {
			t.Errorf("apply unlimited under a %d hard limit: %v, want an error with %q", rl.Max, err, msg)
		}
		soft, hard, err := h.Systemd.(host.UnitLimiter).Memlock(ctx, labUnitName)
		if err != nil || soft != ^uint64(0) || hard != ^uint64(0) {
			t.Errorf("LimitMEMLOCKSoft, LimitMEMLOCK = %d, %d (%v), want infinity as configured", soft, hard, err)
		}
		// The plan still shows it: the process is not converged.
		p := build(t, h, spec("unlimited"))
		if len(p.Changes) != 1 || !strings.Contains(fmt.Sprint(p.Changes[0].Attributes), "main_process") {
			t.Errorf("plan after the clamped apply: %+v", p.Changes)
		}
	}

	// The revert of the first change: no drop-in, the manager's default
	// back in the restarted process.
	rev, err := (&memlock.Provider{}).Revert(first)
	if err != nil || rev == nil {
		t.Fatalf("revert: %v %v", rev, err)
	}
	rev.Provider = "memlock"
	if err := run(&plan.Plan{Changes: []*plan.Change{rev}}); err != nil {
		t.Fatalf("revert: %v", err)
	}
	if _, err := os.Stat(filepath.Join(l.UnitDir, labUnitName+".d", memlock.DropIn)); !os.IsNotExist(err) {
		t.Errorf("the drop-in is still there: %v", err)
	}
	if got := processMemlock(t, mainPID()); got != before {
		t.Errorf("after the revert the process has %q, want %q as before", got, before)
	}
}
