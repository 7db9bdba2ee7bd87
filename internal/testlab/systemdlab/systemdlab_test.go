package systemdlab

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestLab starts a manager, checks it runs inside the lab's own cgroup in
// every hierarchy (never the test's), and that cleanup removes the cgroup
// and ends the manager.
func TestLab(t *testing.T) {
	var l *Lab
	t.Run("start", func(t *testing.T) {
		l = Start(t)
		b, err := os.ReadFile("/proc/" + strconv.Itoa(l.PID) + "/cgroup")
		if err != nil {
			t.Fatal(err)
		}
		for _, cg := range l.cgroups {
			name := cg[strings.LastIndex(cg, "/"):]
			if !strings.Contains(string(b), name) {
				t.Errorf("manager's /proc/PID/cgroup does not name %s:\n%s", name, b)
			}
		}
		self, err := os.ReadFile("/proc/self/cgroup")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(self), "rdmaform-systemdlab-") {
			t.Errorf("the test process itself is in a lab cgroup:\n%s", self)
		}
		state, err := l.property("SystemState")
		if err != nil || (state != "running" && state != "degraded") {
			t.Errorf("SystemState %q, %v; want running or degraded", state, err)
		}
	})
	if l == nil || l.cmd == nil {
		return // skipped
	}
	for _, cg := range l.cgroups {
		if _, err := os.Stat(cg); !os.IsNotExist(err) {
			t.Errorf("cgroup %s still exists after cleanup (%v)", cg, err)
		}
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(l.PID) + "/cgroup"); !os.IsNotExist(err) {
		t.Errorf("manager PID %d still exists after cleanup", l.PID)
	}
	if _, err := os.Stat(l.Dir); !os.IsNotExist(err) {
		t.Errorf("lab dir %s still exists after cleanup", l.Dir)
	}
}
