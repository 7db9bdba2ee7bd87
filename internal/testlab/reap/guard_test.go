package reap_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmaform/rdmaform/internal/testlab/reap"
)

// TestGuardTakesOnlyWhatALabMakes: the guardian removes only cgroups
// under /sys/fs/cgroup, namespaces and directories named rdmaform-*,
// given as clean absolute paths (directories in $TMPDIR), without a
// control character (the guardian reads a line per name); anything else
// is refused before it is handed over.
func TestGuardTakesOnlyWhatALabMakes(t *testing.T) {
	for _, c := range []struct {
		kind reap.Kind
		name string
	}{
		{reap.Cgroup, "/sys/fs/cgroup/systemd"},
		{reap.Cgroup, "/sys/fs/cgroup/systemd/user.slice"},
		{reap.Cgroup, "/tmp/rdmaform-x"},
		{reap.Cgroup, "/sys/fs/cgroup/systemd/rdmaform-x/../user.slice"},
		{reap.Cgroup, "sys/fs/cgroup/systemd/rdmaform-x"},
		{reap.Netns, "rdmaform-"},
		{reap.Netns, "other-ns"},
		{reap.Netns, "rdmaform-a/../b"},
		{reap.Netns, "rdmaform-a b"},
		{reap.Netns, "rdmaform-a\nb"},
		{reap.Dir, "/tmp"},
		{reap.Dir, "/tmp/other"},
		{reap.Dir, "rdmaform-x"},
		{reap.Dir, "/tmp/rdmaform-x/"},
		{reap.Dir, "/tmp/rdmaform-x\n+ dir /etc"},
		{reap.Dir, filepath.Join(os.TempDir(), "a\n+ dir "+os.TempDir()+"/rdmaform-y")},
		{reap.Dir, "/etc/rdmaform-x"},
		{reap.Dir, filepath.Join(os.TempDir(), "a", "rdmaform-x")},
		{reap.Cgroup, "/sys/fs/cgroup/systemd/rdmaform-x\x7f"},
		{"file", "/tmp/rdmaform-x"},
	} {
		if _, err := reap.Guard(c.kind, c.name); err == nil {
			t.Errorf("Guard(%s, %q) was taken", c.kind, c.name)
		}
	}
	dir, err := os.MkdirTemp("", "rdmaform-reap-guard-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	for _, c := range []struct {
		kind reap.Kind
		name string
	}{
		{reap.Cgroup, "/sys/fs/cgroup/systemd/rdmaform-x"},
		{reap.Cgroup, "/sys/fs/cgroup/unified/a/rdmaform-x"},
		{reap.Netns, "rdmaform-nm-1-0"},
		{reap.Dir, dir},
	} {
		release, err := reap.Guard(c.kind, c.name)
		if err != nil {
			t.Errorf("Guard(%s, %q): %v", c.kind, c.name, err)
			continue
		}
		release()
	}
}
