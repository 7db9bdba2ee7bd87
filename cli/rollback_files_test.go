package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/internal/testlab/fstree"
	"github.com/rdmaform/rdmaform/sim"
)

// TestRollbackRemovesFilesTheApplyCreated: an apply that wrote files
// which did not exist before (ib_core's modprobe.d option, the names'
// udev rules, modules-load.d, the boot unit with its link and spec copy,
// opensm's partitions.conf and opensm.conf), killed while it waits for
// its confirmation, is rolled back: /etc is file for file what it was
// (no file left with the before-state's equivalent content, no empty
// file), and opensm runs its old priority again. Then apply, and plan
// is empty.
func TestRollbackRemovesFilesTheApplyCreated(t *testing.T) {
	l := newRBLab(t)
	st, err := sim.NewState("cx6-vpi-ib", "node1", 0)
	if err != nil {
		t.Fatal(err)
	}
	st.OpenSM = &sim.OpenSMState{Layout: "debian"}
	st.Tools = append(st.Tools, "sminfo")
	h := filepath.Join(l.dir, "h")
	if _, err := sim.Create(h, st); err != nil {
		t.Fatal(err)
	}
	s, err := sim.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := s.Host()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Systemd.Start(context.Background(), "opensm.service"); err != nil {
		t.Fatal(err)
	}
	// The names' rdma_rename and the boot unit's binary.
	for _, f := range []string{"usr/lib/udev/rdma_rename", "usr/local/sbin/rdmaform"} {
		p := filepath.Join(h, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	spec := l.spec("s.yaml", `version: 1
rdma: {netns_mode: exclusive}
modules: [rdma_ucm]
persistence: boot-unit
devices:
  - pci: 0000:3b:00.1
    names: {rdma: rail1, netdev: rail1ib}
subnet_manager:
  priority: 5
  partitions:
    - name: storage
      pkey: 0x8002
      members: [{guid: all_cas, membership: limited}, {guid: self, membership: full}]
`)
	files := func() map[string]string {
		m := map[string]string{}
		for k, v := range fstree.Snapshot(t, filepath.Join(h, "etc")) {
			if len(v) < 4 || v[:4] != "dir " {
				m[k] = v
			}
		}
		return m
	}
	priority := func() int {
		s, err := sim.Open(h)
		if err != nil {
			t.Fatal(err)
		}
		return s.State().OpenSM.Priority
	}
	before, beforePrio := files(), priority()
	cmd, done := l.waitingApply(h, "10m", spec)
	if diff := cmp.Diff(before, files()); diff == "" || priority() != 5 {
		t.Fatalf("the apply changed no file or not opensm's priority (%d)", priority())
	}
	_ = cmd.Process.Kill()
	done()
	l.must(0, "--sim", h, "rollback")
	if diff := cmp.Diff(before, files()); diff != "" {
		t.Errorf("/etc after the rollback (-before +after):\n%s", diff)
	}
	if got := priority(); got != beforePrio {
		t.Errorf("opensm's priority after the rollback: %d, want %d", got, beforePrio)
	}
	l.must(0, "--sim", h, "apply", "--yes", "-f", spec)
	l.must(0, "--sim", h, "plan", "-f", spec)
}

// TestConfirmApplyLoadsConfigfs: on a kernel whose configfs is a module
// not loaded (no /sys/kernel/config: mount(2) there fails with ENOENT),
// an apply --confirm-timeout of rdma_cm values loads configfs and mounts
// it to record the values for its rollback, applies, and its rollback
// puts the kernel's values back. Then apply, and plan is empty.
func TestConfirmApplyLoadsConfigfs(t *testing.T) {
	l := newRBLab(t)
	st, err := sim.NewState("cx5-roce", "node1", 0)
	if err != nil {
		t.Fatal(err)
	}
	st.ConfigfsModule, st.ConfigfsUnmounted = true, true
	var mods []string
	for _, m := range st.Modules {
		if m != "rdma_cm" {
			mods = append(mods, m)
		}
	}
	st.Modules, st.BootModules = mods, append([]string(nil), mods...)
	h := filepath.Join(l.dir, "h")
	if _, err := sim.Create(h, st); err != nil {
		t.Fatal(err)
	}
	spec := l.spec("s.yaml", "version: 1\ndevices:\n  - name: mlx5_0\n    ports:\n      - port: 1\n        roce: {mode: v1, tos: 106}\n")
	cmd, done := l.waitingApply(h, "10m", spec)
	if mounts, _ := os.ReadFile(filepath.Join(h, "proc/mounts")); !strings.Contains(string(mounts), "configfs /sys/kernel/config") {
		t.Errorf("configfs is not mounted while the apply waits:\n%s", mounts)
	}
	_ = cmd.Process.Kill()
	done()
	l.must(0, "--sim", h, "rollback")
	if out := l.must(2, "--sim", h, "plan", "-f", spec); !strings.Contains(out, "mode: v2 -> v1") {
		t.Errorf("plan after the rollback does not set the mode again:\n%s", out)
	}
	l.must(0, "--sim", h, "apply", "--yes", "-f", spec)
	l.must(0, "--sim", h, "plan", "-f", spec)
}
