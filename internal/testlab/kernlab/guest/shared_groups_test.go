//go:build kernlab

package guest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rdmaform/rdmaform/host"
)

// (This file sorts after scenario_test.go on purpose: TestModules needs a
// guest where no RDMA module is loaded yet.)
//
// TestConfigfsGroupsShared: rdma_cm's values are read and written through
// configfs groups, one directory per device for the whole host. Plans,
// audits and shows run again and again as separate processes beside
// applies on the real kernel's configfs, and every one of them gives its
// right answer: no reader removes a group under the apply or under
// another reader, a group another process made meanwhile (EEXIST) is
// used, and a group the operator made is never removed. The lock they
// share is an flock on rdma_cm's configfs directory: while someone else
// holds it, a plan leaves the group it made (it may not remove it); alone
// it leaves nothing.
func TestConfigfsGroupsShared(t *testing.T) {
	veth(t, "kga", "kgb")
	// configfs as a host has it loaded (systemd mounts it at boot), also
	// when this test runs alone (KERNLAB_RUN).
	run(t, "/sbin/modprobe", "configfs")
	run(t, "/sbin/modprobe", "rdma_rxe")
	run(t, "/sbin/rdma", "link", "add", "rxe5", "type", "rxe", "netdev", "kga")
	run(t, "/sbin/rdma", "link", "add", "rxe6", "type", "rxe", "netdev", "kgb")
	t.Cleanup(func() {
		_, _ = tryRun("/sbin/rdma", "link", "delete", "rxe5")
		_, _ = tryRun("/sbin/rdma", "link", "delete", "rxe6")
	})
	tos := func(v string) string {
		return writeSpec(t, strings.ReplaceAll(`version: 1
devices:
  - name: rxe5
    ports:
      - port: 1
        roce: {tos: TOS}
  - name: rxe6
    ports:
      - port: 1
        roce: {tos: TOS}
`, "TOS", v))
	}
	// The readers ask for what the applies leave alone: their answer is
	// "no changes" throughout.
	mode := writeSpec(t, `version: 1
devices:
  - name: rxe5
    ports:
      - port: 1
        roce: {mode: v2}
  - name: rxe6
    ports:
      - port: 1
        roce: {mode: v2}
`)
	converge(t, tos("32")) // mounts configfs, loads rdma_cm

	// The operator's own group for rxe5: used, never removed.
	mine := filepath.Join(rdmaCMDir, "rxe5")
	if err := os.Mkdir(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(mine) })

	readers := [][]string{
		{"plan", "-f", mode}, {"plan", "-f", mode}, {"plan", "-f", mode}, {"plan", "-f", mode},
		{"audit", "-f", mode}, {"show"},
	}
	var done atomic.Bool
	var runs atomic.Int32
	var wg sync.WaitGroup
	for _, args := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for first := true; first || !done.Load(); first = false {
				code, out, errs := rdmaformQuiet(args...)
				runs.Add(1)
				if code != 0 {
					t.Errorf("rdmaform %s beside an apply: exit %d, want 0\n%s%s", strings.Join(args, " "), code, out, errs)
				}
			}
		}()
	}
	for _, v := range []string{"64", "96", "106"} {
		code, out, errs := rdmaformQuiet("apply", "--yes", "-f", tos(v))
		if code != 0 {
			t.Errorf("apply of tos %s beside plans: exit %d, want 0\n%s%s", v, code, out, errs)
		}
	}
	done.Store(true)
	wg.Wait()
	t.Logf("%d read-only runs beside 3 applies", runs.Load())
	mustCode(t, 0, "plan", "-f", tos("106"))
	if !exists(mine) {
		t.Errorf("the operator's group %s was removed", mine)
	}
	if g, _ := os.ReadDir(rdmaCMDir); len(g) != 1 {
		t.Logf("groups after the run: %v (a process that could not remove its own within its wait leaves it)", g)
	}

	// The lock is the kernel's: while this test holds it shared, a
	// plan makes rxe6's group and may not remove it.
	theirs := filepath.Join(rdmaCMDir, "rxe6")
	_ = os.Remove(theirs)
	h, err := host.NewLive(os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	lk, err := host.OpenFlock(h.FS, rdmaCMDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := lk.Shared(context.Background()); err != nil {
		t.Fatal(err)
	}
	mustCode(t, 0, "plan", "-f", mode)
	lk.Close()
	if !exists(theirs) {
		t.Errorf("a plan removed %s while another process held the groups' lock shared: flock on configfs did not hold", theirs)
	}
	if err := os.Remove(theirs); err != nil {
		t.Fatal(err)
	}
	// Alone, a plan leaves the groups as it found them.
	mustCode(t, 0, "plan", "-f", mode)
	if exists(theirs) {
		t.Errorf("a plan alone left %s behind", theirs)
	}
	if !exists(mine) {
		t.Errorf("the operator's group %s was removed", mine)
	}
}

// rdmaformQuiet runs rdmaform like rdmaform, without logging (from
// several goroutines at once) and without failing the test on its own.
func rdmaformQuiet(args ...string) (code int, stdout, stderr string) {
	var out, errb strings.Builder
	cmd := exec.Command(rdmaformBin, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		code = -1
		if cmd.ProcessState != nil {
			code = cmd.ProcessState.ExitCode()
		}
		if code == -1 {
			errb.WriteString(err.Error())
		}
	}
	return code, out.String(), errb.String()
}
