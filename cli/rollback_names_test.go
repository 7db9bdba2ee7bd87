package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/sim"
)

// namesHost is a ConnectX-5 RoCE host of l with rdma-core's udev helper
// (the names provider wants it).
func namesHost(t *testing.T, l *rbLab) string {
	t.Helper()
	h := l.newHost("h", "cx5-roce")
	f := filepath.Join(h, "usr/lib/udev/rdma_rename")
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestRollbackNamesAndNetns: an apply that renamed a device and its
// netdev and switched the RDMA netns mode, killed while it waits for its
// confirmation, is rolled back from its journal: the old names and the
// shared mode again (show captures neither the default mode nor names:
// the journal records them). Then apply, and plan is empty.
func TestRollbackNamesAndNetns(t *testing.T) {
	l := newRBLab(t)
	h := namesHost(t, l)
	spec := l.spec("s.yaml", "version: 1\nrdma: {netns_mode: exclusive}\ndevices:\n  - pci: 0000:5e:00.1\n    names: {rdma: rail1, netdev: rail1eth}\n")
	state := func() string {
		s, err := sim.Open(h)
		if err != nil {
			t.Fatal(err)
		}
		st := s.State()
		mode := st.RdmaNetnsMode
		if mode == "" {
			mode = "shared"
		}
		var names []string
		for _, d := range st.Devices {
			names = append(names, d.Name)
		}
		for _, n := range st.Netdevs {
			names = append(names, n.Name)
		}
		return mode + " " + strings.Join(names, ",")
	}
	rollBackKilledApply(t, l, h, spec, state, state(), func(got string) bool {
		return strings.HasPrefix(got, "exclusive ") && strings.Contains(got, ",rail1,") && strings.Contains(got, ",rail1eth")
	})
}

// rollBackKilledApply starts an apply of spec on h that waits for its
// confirmation, checks the host's state (what state returns) while it
// waits, kills it, rolls back and wants the state before again; then
// apply, and plan is empty.
func rollBackKilledApply(t *testing.T, l *rbLab, h, spec string, state func() string, before string, applied func(string) bool) {
	t.Helper()
	cmd, done := l.waitingApply(h, "10m", spec)
	if got := state(); !applied(got) {
		t.Fatalf("while the apply waits: %s", got)
	}
	_ = cmd.Process.Kill()
	done()
	l.must(0, "--sim", h, "rollback")
	if got := state(); got != before {
		t.Fatalf("after the rollback: %s, want %s", got, before)
	}
	l.must(0, "--sim", h, "apply", "--yes", "-f", spec)
	l.must(0, "--sim", h, "plan", "-f", spec)
}

// TestRollbackRenameAndSettings: one apply renamed a netdev and changed
// its MTU under the new name; killed while it waits for its confirmation,
// it is rolled back from its journal: the old name and the old MTU again
// (the journal recorded the netdev under the name it had). Then apply,
// and plan is empty.
func TestRollbackRenameAndSettings(t *testing.T) {
	l := newRBLab(t)
	h := namesHost(t, l)
	spec := l.spec("s.yaml", "version: 1\ndevices:\n  - pci: 0000:5e:00.1\n    names: {rdma: rail1, netdev: rail1eth}\ninterfaces:\n  - name: rail1eth\n    mtu: 4200\n")
	state := func() string {
		s, err := sim.Open(h)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range s.State().Devices {
			out = append(out, d.Name)
		}
		for _, n := range s.State().Netdevs {
			out = append(out, fmt.Sprintf("%s/%d", n.Name, n.MTU))
		}
		return strings.Join(out, ",")
	}
	before := state()
	if !strings.Contains(before, "ens1f1np1/1500") {
		t.Fatalf("before: %s", before)
	}
	rollBackKilledApply(t, l, h, spec, state, before, func(got string) bool {
		return strings.Contains(got, "rail1,") && strings.Contains(got, "rail1eth/4200")
	})
}
