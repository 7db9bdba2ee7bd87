//go:build kernlab

package guest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRollbackOnRealKernel: apply --confirm-timeout on the real kernel
// changes a link's MTU and addresses, creates a Soft-RoCE link and sets
// rdma_cm values through configfs; the apply is killed while it waits
// (SIGKILL, as an OOM kill; SIGHUP, as a dropped SSH session). The
// watcher (the guest has no systemd) puts every one of them back within
// the timeout and a few seconds: the kernel's own view is checked, and the
// spec plans its changes again. (In a file of its own that sorts last: the
// scenarios before it want a guest with nothing loaded.)
func TestRollbackOnRealKernel(t *testing.T) {
	veth(t, "krb", "krbp")
	run(t, "/sbin/modprobe", "rdma_rxe")
	run(t, "/sbin/modprobe", "rdma_cm")
	// rdma_cm's values are the kernel's whether configfs is mounted or
	// not (an earlier scenario unmounts it); mounted, the test can read
	// them before the apply, which mounts it too.
	if !exists(rdmaCMDir) {
		run(t, "/bin/mount", "-t", "configfs", "none", configfs)
	}
	run(t, "/sbin/rdma", "link", "add", "rxe7", "type", "rxe", "netdev", "krbp")
	t.Cleanup(func() { _, _ = tryRun("/sbin/rdma", "link", "delete", "rxe7") })
	spec := writeSpec(t, `version: 1
interfaces:
  - name: krb
    mtu: 4000
    addresses: [192.0.2.77/24]
rxe:
  - {name: rxe8, netdev: krb}
devices:
  - name: rxe7
    ports:
      - port: 1
        roce: {tos: 106}
`)
	// The kernel's view of what the spec changes.
	state := func() string {
		mtu := strings.TrimSpace(readFile(t, "/sys/class/net/krb/mtu"))
		addrs := strings.Fields(run(t, "/sbin/ip", "-br", "-4", "addr", "show", "dev", "krb"))
		if len(addrs) > 2 {
			addrs = addrs[2:]
		} else {
			addrs = nil
		}
		g := filepath.Join(rdmaCMDir, "rxe7")
		tos := "(no rdma_cm)"
		if exists(rdmaCMDir) {
			if err := os.Mkdir(g, 0o755); err != nil {
				t.Fatal(err)
			}
			tos = strings.TrimSpace(readFile(t, g+"/ports/1/default_roce_tos"))
			if err := os.Remove(g); err != nil {
				t.Fatal(err)
			}
		}
		return "mtu " + mtu + ", addresses " + strings.Join(addrs, " ") + ", rxe " + strings.Join(rdmaLinksOn("krb"), " ") + ", tos " + tos
	}
	before := state()

	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGHUP} {
		start := time.Now()
		// The timeout leaves a loaded TCG guest time to read the kernel's
		// state while the apply waits (the deadline counts from the
		// question).
		cmd := exec.Command(rdmaformBin, "apply", "--yes", "--confirm-timeout", "10s", "-f", spec)
		cmd.Env = append(os.Environ(), "NO_COLOR=1")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var errb strings.Builder
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		waiting := false
		for sc.Scan() {
			if strings.Contains(sc.Text(), "to keep them") {
				waiting = true
				break
			}
		}
		if !waiting {
			_ = cmd.Wait()
			t.Fatalf("%v: the apply never waited for confirmation:\n%s", sig, errb.String())
		}
		applied := state()
		if applied != "mtu 4000, addresses 192.0.2.77/24, rxe rxe8, tos 106" {
			t.Errorf("%v: while the apply waits: %s", sig, applied)
		}
		_ = cmd.Process.Signal(sig)
		_ = cmd.Wait()
		for time.Since(start) < 2*time.Minute {
			if !exists("/run/rdmaform/rollback.json") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if got := state(); got != before {
			log, _ := os.ReadFile("/run/rdmaform/rollback.log")
			t.Fatalf("%v: after the rollback: %s, want %s as before\nwatcher log:\n%s", sig, got, before, log)
		}
		t.Logf("%v: rolled back %s after the apply started (timeout 10s): %s", sig, time.Since(start).Round(100*time.Millisecond), before)
		mustCode(t, 2, "plan", "-f", spec)
		if exists("/var/lib/rdmaform/unconfirmed.json") {
			t.Errorf("%v: the journal's copy outlives the rollback", sig)
		}
	}
}
