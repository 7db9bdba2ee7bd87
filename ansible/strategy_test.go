package ansible_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// gcProbe is an action plugin for the test alone: it reports, from the
// worker process that runs the task, how many objects Python's garbage
// collector has frozen (inherited from the controller by fork).
const gcProbe = `from __future__ import (absolute_import, division, print_function)
__metaclass__ = type
import gc
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        result["msg"] = "frozen=%d" % gc.get_freeze_count()
        return result
`

// TestFleetStrategy: the strategy rdmaform.rdma.fleet runs a play as
// linear does, and the worker of each task starts with the controller's
// objects frozen (gc.freeze), so that its garbage collection skips them;
// under linear none are.
func TestFleetStrategy(t *testing.T) {
	l := newLab(t)
	l.installCollection(t)
	plugins := filepath.Join(l.dir, "action_plugins")
	if err := os.MkdirAll(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plugins, "gc_probe.py"), []byte(gcProbe), 0o644); err != nil {
		t.Fatal(err)
	}
	l.env = append(l.env, "ANSIBLE_ACTION_PLUGINS="+plugins)
	frozen := regexp.MustCompile(`"msg": "frozen=(\d+)"`)
	for _, c := range []struct {
		strategy string
		frozen   bool
	}{{"rdmaform.rdma.fleet", true}, {"linear", false}} {
		play := "- hosts: localhost\n  gather_facts: false\n  strategy: " + c.strategy + `
  tasks:
    - name: First
      gc_probe:
    - name: Second
      gc_probe:
`
		out, err := l.playbook(t, play, "-v")
		if err != nil {
			t.Fatalf("strategy %s: %v\n%s", c.strategy, err, out)
		}
		m := frozen.FindAllStringSubmatch(out, -1)
		if len(m) != 2 {
			t.Fatalf("strategy %s: want both tasks' reports:\n%s", c.strategy, out)
		}
		for _, s := range m {
			n, _ := strconv.Atoi(s[1])
			if (n > 1000) != c.frozen {
				t.Errorf("strategy %s: the worker started with %d frozen objects; want them frozen: %v\n%s", c.strategy, n, c.frozen, out)
			}
		}
	}
}
