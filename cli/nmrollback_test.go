package cli_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/internal/testlab/nmlab"
	"github.com/rdmaform/rdmaform/sim"
)

// TestRollbackOnRealNetworkManager: on a real NetworkManager (nmlab, its
// own namespace and D-Bus), apply --confirm-timeout changes an inactive
// profile and creates another; the apply is killed with SIGKILL while it
// waits; the watcher puts the inactive profile's settings back and
// deletes the new one.
func TestRollbackOnRealNetworkManager(t *testing.T) {
	lab := nmlab.Start(t)
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
	cmd := exec.Command(bin, "--root", root, "apply", "--yes", "--confirm-timeout", "3s", "-f", spec)
	cmd.Env = append(lab.Env(), "NO_COLOR=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var lines []string
	waiting := false
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.Contains(sc.Text(), "to keep them") {
			waiting = true
			break
		}
	}
	if !waiting {
		_ = cmd.Wait()
		t.Fatalf("the apply never waited:\n%s\n%s", strings.Join(lines, "\n"), errb.String())
	}
	if got := show("keep-me"); !strings.Contains(got, "infiniband.mtu:1500") || show("new-one") == "(none)" {
		t.Fatalf("while waiting: keep-me %q, new-one %q; want the changes made", got, show("new-one"))
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
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
		t.Errorf("keep-me after the rollback: %q, want %q as before\nwatcher log:\n%s", got, before, log)
	}
	if got := show("new-one"); got != "(none)" {
		t.Errorf("new-one after the rollback: %q, want it deleted", got)
	}
	t.Logf("rolled back %s after the apply started (timeout 3s)", time.Since(start).Round(100*time.Millisecond))
}
