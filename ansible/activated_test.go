package ansible_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/ansible"
	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/internal/testlab/fstree"
)

// TestActivated: state activated makes what the spec staged current by a
// firmware reset, one task: in check mode it reports what is staged and
// changes nothing; then it resets the card, and the host plans empty; a
// host with nothing staged is not touched; a card only a power cycle
// activates fails with activate's reason, staged values left as they
// were; a wait activate refuses fails naming it.
func TestActivated(t *testing.T) {
	spec, err := filepath.Abs("../examples/ib-to-eth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	staged := func(t *testing.T) string {
		t.Helper()
		dir := newSim(t, "cx6-vpi-ib")
		if res := module(t, map[string]any{"spec": spec, "sim": dir, "allow_firmware": true}); res.Failed || !res.RebootRequired {
			t.Fatalf("staging: failed=%v reboot=%v: %s", res.Failed, res.RebootRequired, res.Msg)
		}
		return dir
	}
	activated := func(dir string, more map[string]any) map[string]any {
		args := map[string]any{"spec": spec, "sim": dir, "state": "activated", "activate_wait": 30}
		for k, v := range more {
			args[k] = v
		}
		return args
	}

	dir := staged(t)
	before := fstree.Snapshot(t, dir)
	if res := module(t, activated(dir, map[string]any{"_ansible_check_mode": true})); res.Failed || !res.Changed || len(res.Pending) != 1 || !strings.Contains(res.Msg, "would activate 1 staged value") {
		t.Errorf("check mode: failed=%v changed=%v pending=%v: %s", res.Failed, res.Changed, res.Pending, res.Msg)
	}
	if diff := cmp.Diff(before, fstree.Snapshot(t, dir)); diff != "" {
		t.Fatalf("check mode changed the host (-before +after):\n%s", diff)
	}
	if res := module(t, activated(dir, nil)); res.Failed || !res.Changed || res.RC != 0 || len(res.Pending) != 0 || res.RebootRequired {
		t.Fatalf("activated: failed=%v changed=%v rc=%d pending=%v reboot=%v: %s", res.Failed, res.Changed, res.RC, res.Pending, res.RebootRequired, res.Msg)
	}
	if res := module(t, map[string]any{"spec": spec, "sim": dir, "state": "planned"}); res.Changed || res.RC != 0 {
		t.Errorf("plan after activating: changed=%v rc=%d: %s", res.Changed, res.RC, res.Msg)
	}
	after := fstree.Snapshot(t, dir)
	if res := module(t, activated(dir, nil)); res.Failed || res.Changed || res.Msg != "nothing staged: nothing to activate" {
		t.Errorf("again: failed=%v changed=%v: %s", res.Failed, res.Changed, res.Msg)
	}
	if diff := cmp.Diff(after, fstree.Snapshot(t, dir)); diff != "" {
		t.Errorf("activating with nothing staged changed the host (-before +after):\n%s", diff)
	}

	dir = staged(t)
	if code := cli.Run([]string{"sim", "fault", dir, "--reset", "power-cycle", "--match", "0000:3b:00.0"}, cli.Env{Stdout: io.Discard, Stderr: io.Discard}); code != 0 {
		t.Fatalf("sim fault: exit %d", code)
	}
	if res := module(t, activated(dir, nil)); !res.Failed || res.RC != 1 || !strings.Contains(res.Msg, "only a power cycle activates") {
		t.Errorf("power cycle only: failed=%v rc=%d: %s", res.Failed, res.RC, res.Msg)
	}
	if res := module(t, map[string]any{"spec": spec, "sim": dir, "state": "planned"}); !res.RebootRequired || len(res.Pending) != 1 {
		t.Errorf("after the refusal: pending %v, want the staged value still pending", res.Pending)
	}
	if res := module(t, activated(dir, map[string]any{"activate_wait": "2h"})); !res.Failed || !strings.Contains(res.Msg, "--wait 2h0m0s: between") {
		t.Errorf("activate_wait 2h: failed=%v: %s", res.Failed, res.Msg)
	}
}

// TestActivatedLostConnection: the module's process is killed (as a lost
// SSH session ends it) while the card is being reset: the detached
// activation goes on, waits for the card and records its outcome; the
// next run with state activated (after the reconnect) returns that
// outcome, once; the host plans empty, and a run after it has nothing to
// activate. Without the detach, the kill ends the activation with the
// module and the staged value stays pending.
func TestActivatedLostConnection(t *testing.T) {
	spec, err := filepath.Abs("../examples/ib-to-eth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := newSim(t, "cx6-vpi-ib")
	if res := module(t, map[string]any{"spec": spec, "sim": dir, "allow_firmware": true}); res.Failed || !res.RebootRequired {
		t.Fatalf("staging: failed=%v reboot=%v: %s", res.Failed, res.RebootRequired, res.Msg)
	}
	// The card registers again 3s after its reset: the window in which
	// the connection is lost.
	if code := cli.Run([]string{"sim", "fault", dir, "--reset", "late", "--delay", "3s", "--match", "0000:3b:00.0"}, cli.Env{Stdout: io.Discard, Stderr: io.Discard}); code != 0 {
		t.Fatalf("sim fault: exit %d", code)
	}
	args, err := json.Marshal(map[string]any{"spec": spec, "sim": dir, "state": "activated", "activate_wait": 30})
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	task := exec.Command(self, ansible.StdinArg)
	task.Stdin = bytes.NewReader(args)
	var out bytes.Buffer
	task.Stdout, task.Stderr = &out, &out
	if err := task.Start(); err != nil {
		t.Fatal(err)
	}
	// Killed once the reset has happened: the card is away.
	resetSeen := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(dir, "sim.yaml"))
		if strings.Contains(string(b), "\nunprobed:") {
			resetSeen = true
			break
		}
	}
	if !resetSeen {
		t.Fatalf("the card was not reset within 30s; the module said:\n%s", out.String())
	}
	if err := task.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = task.Wait()
	if strings.Contains(out.String(), `"changed"`) {
		t.Fatalf("the module answered before it was killed: the test did not cut the connection during the reset:\n%s", out.String())
	}
	res := module(t, map[string]any{"spec": spec, "sim": dir, "state": "activated", "activate_wait": 30})
	if res.Failed || !res.Changed || res.RC != 0 || !strings.Contains(res.Msg, "activated 1 staged value (detached, pid") {
		t.Fatalf("after the reconnect: failed=%v changed=%v rc=%d: %s", res.Failed, res.Changed, res.RC, res.Msg)
	}
	if res := module(t, map[string]any{"spec": spec, "sim": dir, "state": "planned"}); res.Changed || res.RC != 0 || len(res.Pending) != 0 {
		t.Errorf("plan after the activation: changed=%v rc=%d pending=%v: %s", res.Changed, res.RC, res.Pending, res.Msg)
	}
	if res := module(t, map[string]any{"spec": spec, "sim": dir, "state": "activated", "activate_wait": 30}); res.Failed || res.Changed || res.Msg != "nothing staged: nothing to activate" {
		t.Errorf("again: failed=%v changed=%v: %s (the outcome is returned once)", res.Failed, res.Changed, res.Msg)
	}
}
