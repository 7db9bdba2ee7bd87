package ansible_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/internal/testlab/fstree"
	"github.com/rdmaform/rdmaform/internal/testlab/need"
)

// lab is a temporary Ansible installation: the module built into a
// library folder, and an environment under which ansible reads no
// configuration, inventory or collection outside the test's directory.
type lab struct {
	dir, library string
	env          []string
}

func newLab(t *testing.T) *lab {
	t.Helper()
	need.Tool(t, "ansible", "apt-get install ansible-core")
	need.Tool(t, "ansible-playbook", "apt-get install ansible-core")
	dir := t.TempDir()
	l := &lab{dir: dir, library: filepath.Join(dir, "library")}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	build := exec.Command(gobin, "build", "-o", filepath.Join(l.library, "rdmaform"), "../cmd/rdmaform-ansible")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the module: %v\n%s", err, out)
	}
	if err := os.Mkdir(filepath.Join(dir, "home"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "ansible.cfg")
	if err := os.WriteFile(cfg, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l.env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(dir, "home"),
		"LANG=C.UTF-8",
		"ANSIBLE_CONFIG=" + cfg, // an empty file: no /etc/ansible/ansible.cfg
		"ANSIBLE_LOCAL_TEMP=" + filepath.Join(dir, "tmp", "local"),
		"ANSIBLE_REMOTE_TEMP=" + filepath.Join(dir, "tmp", "remote"),
		"ANSIBLE_COLLECTIONS_PATH=" + filepath.Join(dir, "collections"),
		"ANSIBLE_NOCOLOR=1",
		"ANSIBLE_RETRY_FILES_ENABLED=0",
		"ANSIBLE_LOCALHOST_WARNING=0",
		"ANSIBLE_INVENTORY_UNPARSED_WARNING=0",
		"ANSIBLE_PYTHON_INTERPRETER=auto_silent",
		// The action plugin's module cache, on "hosts" that are this
		// machine: in the test's directory, not /var/cache.
		"RDMAFORM_MODULE_CACHE=" + filepath.Join(dir, "module-cache"),
	}
	return l
}

// adhoc runs one ad-hoc task on localhost and returns the module's
// result as Ansible recorded it (the tree callback's JSON), the status
// Ansible gave it (SUCCESS, CHANGED, FAILED!) and the command's output.
func (l *lab) adhoc(t *testing.T, args any, flags ...string) (res map[string]any, status, output string) {
	t.Helper()
	return l.start(t, nil, "rdmaform", args, append([]string{"-M", l.library}, flags...)...).wait(t)
}

// task is one ad-hoc ansible run started by start.
type task struct {
	cmd  *exec.Cmd
	argv []string
	tree string
	out  bytes.Buffer
	done chan struct{}
	err  error
}

// start starts one ad-hoc task of module on localhost (args: JSON, or a
// k=v string), wrapped by the argument vector wrap (ip netns exec NS, or
// nothing); wait gives its result.
func (l *lab) start(t *testing.T, wrap []string, module string, args any, flags ...string) *task {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := args.(string); ok {
		b = []byte(s) // k=v form
	}
	k := &task{tree: filepath.Join(t.TempDir(), "tree"), done: make(chan struct{})}
	k.argv = append([]string{"localhost", "-i", "localhost,", "-c", "local", "-m", module, "-a", string(b)}, flags...)
	argv := append(append(append([]string{}, wrap...), "ansible"), k.argv...)
	k.cmd = exec.Command(argv[0], argv[1:]...)
	k.cmd.Dir = l.dir
	k.cmd.Env = append(append([]string{}, l.env...),
		"ANSIBLE_LOAD_CALLBACK_PLUGINS=1", "ANSIBLE_CALLBACKS_ENABLED=tree", "ANSIBLE_CALLBACK_TREE_DIR="+k.tree)
	k.cmd.Stdout, k.cmd.Stderr = &k.out, &k.out
	if err := k.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { k.err = k.cmd.Wait(); close(k.done) }()
	return k
}

// running says whether the task has not finished yet.
func (k *task) running() bool {
	select {
	case <-k.done:
		return false
	default:
		return true
	}
}

// wait waits for the task and returns the module's result, the status
// and the output (see adhoc).
func (k *task) wait(t *testing.T) (res map[string]any, status, output string) {
	t.Helper()
	<-k.done
	data, rerr := os.ReadFile(filepath.Join(k.tree, "localhost"))
	if rerr != nil {
		t.Fatalf("ansible %s: no result recorded (%v):\n%s", strings.Join(k.argv, " "), rerr, k.out.String())
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("result: %v\n%s", err, data)
	}
	// "localhost | CHANGED => {", from the minimal callback.
	_, after, _ := strings.Cut(k.out.String(), "localhost | ")
	status, _, _ = strings.Cut(after, " ")
	// ansible exits 2 when a host failed, 0 when none did.
	var ee *exec.ExitError
	if (status == "FAILED!") != (errors.As(k.err, &ee) && ee.ExitCode() == 2) {
		t.Errorf("status %s but ansible exited with %v:\n%s", status, k.err, k.out.String())
	}
	return res, status, k.out.String()
}

func (l *lab) playbook(t *testing.T, yaml string, flags ...string) (string, error) {
	t.Helper()
	pb := filepath.Join(t.TempDir(), "play.yml")
	if err := os.WriteFile(pb, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ansible-playbook", append([]string{"-i", "localhost,", "-c", "local", "-M", l.library, pb}, flags...)...)
	cmd.Dir = l.dir
	cmd.Env = l.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// want checks keys of a result.
func want(t *testing.T, what string, res map[string]any, kv map[string]any) {
	t.Helper()
	for k, v := range kv {
		if !cmp.Equal(v, res[k]) {
			t.Errorf("%s: %s = %v, want %v\nresult: %v", what, k, res[k], v, res)
		}
	}
}

// TestAnsible runs the module under Debian's ansible-core against a
// simulated host: check mode reports a change and changes nothing, a run
// applies, a second run changes nothing, --diff shows before and after, a
// bad spec fails with its positioned findings, and from a playbook typed
// arguments work and reboot_required drives a conditional task.
func TestAnsible(t *testing.T) {
	l := newLab(t)
	dir := newSim(t, "cx5-roce")
	inline := "{version: 1, devices: [{name: mlx5_0, ports: [{port: 1, roce: {tos: 106}}]}]}"
	args := "sim=" + dir + " content='" + inline + "'" // -a k=v: every value a string

	before := fstree.Snapshot(t, dir)
	res, status, out := l.adhoc(t, args, "--check", "--diff")
	want(t, "check mode", res, map[string]any{"changed": true, "rc": 2.0, "reboot_required": false})
	if status != "CHANGED" {
		t.Errorf("check mode: status %s, want CHANGED:\n%s", status, out)
	}
	for _, line := range []string{"--- before: rdma_cm[mlx5_0/1] (host)", "+++ after: rdma_cm[mlx5_0/1] (spec), not persistent", "-tos: 0", "+tos: 106"} {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("--diff output lacks %q:\n%s", line, out)
		}
	}
	if diff := cmp.Diff(before, fstree.Snapshot(t, dir)); diff != "" {
		t.Fatalf("check mode changed the host (-before +after):\n%s", diff)
	}

	res, status, out = l.adhoc(t, args)
	want(t, "apply", res, map[string]any{"changed": true, "rc": 0.0, "reboot_required": false})
	if status != "CHANGED" {
		t.Errorf("apply: status %s, want CHANGED:\n%s", status, out)
	}
	if cmp.Equal(before, fstree.Snapshot(t, dir)) {
		t.Errorf("apply changed no file of the simulated host")
	}
	res, status, out = l.adhoc(t, args)
	want(t, "second apply", res, map[string]any{"changed": false, "rc": 0.0})
	if status != "SUCCESS" {
		t.Errorf("second apply: status %s, want SUCCESS:\n%s", status, out)
	}

	res, status, out = l.adhoc(t, map[string]any{"sim": dir, "content": "version: 1\ndevices:\n  - name: mlx5_0\n    ports: [{port: 1, roce: {mode: v3}}]\n"})
	want(t, "bad spec", res, map[string]any{"changed": false, "rc": 1.0})
	if status != "FAILED!" {
		t.Errorf("bad spec: status %s, want FAILED!:\n%s", status, out)
	}
	if msg, _ := res["msg"].(string); !strings.Contains(msg, `<stdin>:4:36: error: $.devices[0].ports[0].roce.mode: must be v1 or v2, not "v3"`) {
		t.Errorf("bad spec: msg lacks the positioned finding:\n%s", msg)
	}

	// From a playbook: typed values (a boolean, an integer exit code) and
	// a task that runs only where a reboot is required.
	fw := newSim(t, "cx6-vpi-ib")
	spec, err := filepath.Abs("../examples/ib-to-eth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err = l.playbook(t, `
- hosts: localhost
  gather_facts: false
  tasks:
    - name: refused without allow_firmware
      rdmaform: {spec: "`+spec+`", sim: "`+fw+`"}
      register: refused
      ignore_errors: true
    - name: staged with allow_firmware
      rdmaform: {spec: "`+spec+`", sim: "`+fw+`", allow_firmware: true}
      register: staged
    - name: reboot marker, only where needed
      ansible.builtin.set_fact: {rebooted: true}
      when: staged.reboot_required
    - ansible.builtin.assert:
        that:
          - refused is failed
          - "'allow_firmware' in refused.msg"
          - staged is changed
          - staged.rc == 3
          - staged.pending | length == 1
          - staged.pending[0].attribute == "LINK_TYPE_P1"
          - rebooted | default(false)
`)
	if err != nil {
		t.Fatalf("playbook: %v\n%s", err, out)
	}

	// The shipped example playbook and inventory parse.
	// (ansible-playbook --syntax-check ignores -M; ANSIBLE_LIBRARY is what
	// the example's ansible.cfg sets.)
	cmd := exec.Command("ansible-playbook", "--syntax-check", "-i", "../examples/ansible/inventory.yml", "../examples/ansible/site.yml")
	cmd.Env = append(append([]string{}, l.env...), "ANSIBLE_LIBRARY="+l.library)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("examples/ansible/site.yml: %v\n%s", err, out)
	}
	cmd = exec.Command("ansible-playbook", "--syntax-check", "-i", "../examples/ansible/inventory.yml", "../examples/ansible/fabric-probes.yml")
	cmd.Env = append(append([]string{}, l.env...), "ANSIBLE_LIBRARY="+l.library)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("examples/ansible/fabric-probes.yml: %v\n%s", err, out)
	}
}
