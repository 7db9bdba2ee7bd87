package cli_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/nmlab"
	"github.com/rdmaform/rdmaform/sim"
)

// TestRollbackOnRealNetworkManager: on a real NetworkManager (nmlab, its
// own namespace and D-Bus), apply --confirm-timeout changes an inactive
// profile and creates another, under a NetworkManager checkpoint; the
// apply is killed with SIGKILL while it waits; the daemon's checkpoint
// deletes the new profile and the watcher puts the inactive profile's
// settings back (a checkpoint does not cover inactive profiles). Then an
// apply confirmed in time keeps its changes and commits the checkpoint,
// and a second apply while it waits is refused at once.
func TestRollbackOnRealNetworkManager(t *testing.T) {
	lab := nmlab.Start(t)
	// rdmaform (apply, its rollback watcher, confirm) never runs nmcli.
	env := lab.GuardedEnv()
	bin := buildRdmaform(t)
	st, err := sim.NewState("cx6-vpi-ib", "node1", 0)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "root")
	if _, err := sim.Create(root, st); err != nil {
		t.Fatal(err)
	}
	if r := lab.Nmcli("connection", "add", "type", "infiniband", "con-name", "keep-me", "ifname", "ib1", "infiniband.mtu", "2044", "connection.autoconnect", "no"); r.Exit != 0 {
		t.Fatalf("nmcli add: %s", r.Stderr)
	}
	show := func(name string) string {
		r := lab.Nmcli("-t", "-f", "connection.id,infiniband.mtu,connection.autoconnect", "connection", "show", "id", name)
		if r.Exit != 0 {
			return "(none)"
		}
		return strings.TrimSpace(string(r.Stdout))
	}
	before := show("keep-me")
	spec := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(spec, []byte("version: 1\nipoib:\n  - {name: keep-me, parent: ib1, mtu: 1500, state: down}\n  - {name: new-one, parent: ib0, state: down}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The SSH session dropped (SIGHUP) or the process killed outright.
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGHUP} {
		start := time.Now()
		cmd, _, _ := startWaiting(t, bin, env, "--root", root, "apply", "--yes", "--confirm-timeout", "3s", "-f", spec)
		if got := show("keep-me"); !strings.Contains(got, "infiniband.mtu:1500") || show("new-one") == "(none)" {
			t.Fatalf("while waiting: keep-me %q, new-one %q; want the changes made", got, show("new-one"))
		}
		// NetworkManager holds a checkpoint of its own.
		if cps := checkpoints(t, lab); len(cps) != 1 {
			t.Errorf("%v: checkpoints while the apply waits: %v, want one", sig, cps)
		}
		_ = cmd.Process.Signal(sig)
		_ = cmd.Wait()
		journal := filepath.Join(root, "run/rdmaform/rollback.json")
		for time.Since(start) < 20*time.Second {
			if _, err := os.Stat(journal); os.IsNotExist(err) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if got := show("keep-me"); got != before {
			log, _ := os.ReadFile(filepath.Join(root, "run/rdmaform/rollback.log"))
			t.Errorf("%v: keep-me after the rollback: %q, want %q as before\nwatcher log:\n%s", sig, got, before, log)
		}
		if got := show("new-one"); got != "(none)" {
			t.Errorf("%v: new-one after the rollback: %q, want it deleted", sig, got)
		}
		t.Logf("%v: rolled back %s after the apply started (timeout 3s)", sig, time.Since(start).Round(100*time.Millisecond))
		if cps := checkpoints(t, lab); len(cps) != 0 {
			t.Errorf("%v: checkpoints after the rollback: %v, want none", sig, cps)
		}
	}

	// Confirmed in time: the checkpoint is committed, the changes stay.
	cmd, sc, _ := startWaiting(t, bin, env, "--root", root, "apply", "--yes", "--confirm-timeout", "20s", "-f", spec)
	// A second apply while one waits is refused.
	second := exec.Command(bin, "--root", root, "apply", "--yes", "--confirm-timeout", "30s", "-f", spec)
	second.Env = append(env, "NO_COLOR=1")
	if b, err := second.CombinedOutput(); err == nil || !strings.Contains(string(b), "an apply is waiting for confirmation") {
		t.Errorf("a second apply while one waits: %v, want it refused at once\n%s", err, b)
	}
	confirm := exec.Command(bin, "--root", root, "confirm")
	confirm.Env = env
	if b, err := confirm.CombinedOutput(); err != nil {
		t.Fatalf("confirm: %v\n%s", err, b)
	}
	go func() {
		for sc.Scan() {
		}
	}()
	_ = cmd.Wait()
	if cps := checkpoints(t, lab); len(cps) != 0 {
		t.Errorf("checkpoints after confirm: %v, want none", cps)
	}
	if got := show("keep-me"); !strings.Contains(got, "infiniband.mtu:1500") || show("new-one") == "(none)" {
		t.Errorf("after confirm: keep-me %q, new-one %q; want the changes kept", got, show("new-one"))
	}
}

// checkpoints lists NetworkManager's pending checkpoints over D-Bus.
func checkpoints(t *testing.T, lab *nmlab.Lab) []string {
	t.Helper()
	nm, err := host.DialNM(context.Background(), lab.Env())
	if err != nil {
		t.Fatal(err)
	}
	defer nm.Close()
	cps, err := nm.Checkpoints(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return cps
}

// startWaiting starts rdmaform with args (env added to the test's
// environment) and returns once it prints that it waits for confirmation;
// the scanner holds the rest of its output, the builder its stderr (read
// it only once the process has ended).
func startWaiting(t *testing.T, bin string, env []string, args ...string) (*exec.Cmd, *bufio.Scanner, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), env...), "NO_COLOR=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errb := &strings.Builder{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.Contains(sc.Text(), "to keep them") {
			return cmd, sc, errb
		}
	}
	_ = cmd.Wait()
	t.Fatalf("%v never waited for confirmation:\n%s\n%s", args, strings.Join(lines, "\n"), errb.String())
	return nil, nil, nil
}
