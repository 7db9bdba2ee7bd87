package ansible_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/ansible"
	"github.com/rdmaform/rdmaform/cli"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/internal/testlab/fstree"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/sim"
)

// roceSpec sets the RoCE ToS of one port of the cx5-roce profile (0 there).
const roceSpec = "version: 1\ndevices: [{name: mlx5_0, ports: [{port: 1, roce: {tos: 106}}]}]\n"

// newSim creates a simulated host of a profile in a temporary directory,
// with rdma_cm loaded: rdmaform plan loads it (modprobe rdma_cm) to read
// /sys/kernel/config/rdma_cm when it is missing, as an operator would,
// and that would be the one trace of a check-mode run on a fresh host.
func newSim(t *testing.T, profile string) string {
	t.Helper()
	st, err := sim.NewState(profile, "node1", 0)
	if err != nil {
		t.Fatal(err)
	}
	st.Modules = append(st.Modules, "rdma_cm")
	dir := t.TempDir()
	if _, err := sim.Create(dir, st); err != nil {
		t.Fatal(err)
	}
	return dir
}

// module runs the module in-process as Ansible does (an arguments file)
// and decodes the JSON it prints.
func module(t *testing.T, args map[string]any) ansible.Result {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "args")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code := ansible.Main([]string{f}, cli.Env{Stdout: &out, Environ: []string{"PATH=" + os.Getenv("PATH")}})
	var res ansible.Result
	dec := json.NewDecoder(&out)
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out.String())
	}
	if dec.More() {
		t.Fatalf("more than one JSON value on stdout:\n%s", out.String())
	}
	if (code != 0) != res.Failed {
		t.Errorf("exit code %d with failed=%v", code, res.Failed)
	}
	return res
}

func addresses(r ansible.Result) []string {
	var out []string
	if r.Plan != nil {
		for _, c := range r.Plan.Changes {
			out = append(out, c.Address.String())
		}
	}
	return out
}

func TestCheckModeChangesNothing(t *testing.T) {
	dir := newSim(t, "cx5-roce")
	before := fstree.Snapshot(t, dir)
	res := module(t, map[string]any{"content": roceSpec, "sim": dir, "_ansible_check_mode": true})
	if res.Failed || !res.Changed || res.RC != 2 {
		t.Fatalf("check mode: failed=%v changed=%v rc=%d, want a change (rc 2): %s", res.Failed, res.Changed, res.RC, res.Msg)
	}
	if diff := cmp.Diff([]string{"rdma_cm[mlx5_0/1]"}, addresses(res)); diff != "" {
		t.Errorf("planned changes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, fstree.Snapshot(t, dir)); diff != "" {
		t.Errorf("check mode changed the host (-before +after):\n%s", diff)
	}
	// state: planned is the same, without --check.
	res = module(t, map[string]any{"content": roceSpec, "sim": dir, "state": "planned"})
	if res.Failed || !res.Changed || res.RC != 2 {
		t.Fatalf("state planned: failed=%v changed=%v rc=%d: %s", res.Failed, res.Changed, res.RC, res.Msg)
	}
	if diff := cmp.Diff(before, fstree.Snapshot(t, dir)); diff != "" {
		t.Errorf("state planned changed the host (-before +after):\n%s", diff)
	}
}

func TestApplyThenNoChange(t *testing.T) {
	dir := newSim(t, "cx5-roce")
	before := fstree.Snapshot(t, dir)
	res := module(t, map[string]any{"content": roceSpec, "sim": dir})
	if res.Failed || !res.Changed || res.RC != 0 || res.RebootRequired {
		t.Fatalf("apply: failed=%v changed=%v rc=%d reboot=%v: %s", res.Failed, res.Changed, res.RC, res.RebootRequired, res.Msg)
	}
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.State().RdmaCM["mlx5_0/1"].Tos; got != 106 {
		t.Errorf("the simulated kernel's default ToS of mlx5_0/1 is %d after apply, want 106", got)
	}
	if cmp.Equal(before, fstree.Snapshot(t, dir)) {
		t.Error("apply reported a change but no file changed")
	}
	res = module(t, map[string]any{"content": roceSpec, "sim": dir})
	if res.Failed || res.Changed || res.RC != 0 {
		t.Fatalf("second apply: failed=%v changed=%v rc=%d, want nothing to do: %s", res.Failed, res.Changed, res.RC, res.Msg)
	}
}

func TestDiffMode(t *testing.T) {
	dir := newSim(t, "cx5-roce")
	res := module(t, map[string]any{"content": roceSpec, "sim": dir, "_ansible_check_mode": true, "_ansible_diff": true})
	want := []ansible.DiffItem{{
		BeforeHeader: "rdma_cm[mlx5_0/1] (host)",
		AfterHeader:  "rdma_cm[mlx5_0/1] (spec), not persistent",
		Before:       "tos: 0\n",
		After:        "tos: 106\n",
	}}
	if diff := cmp.Diff(want, res.Diff); diff != "" {
		t.Errorf("diff (-want +got):\n%s", diff)
	}
	if res = module(t, map[string]any{"content": roceSpec, "sim": dir, "_ansible_check_mode": true}); res.Diff != nil {
		t.Errorf("diff without --diff: %v", res.Diff)
	}
}

// TestFirmware: firmware changes are refused unless allowed; allowed, they
// are staged, reported as pending with reboot_required, never staged
// again; after the reboot the rest of the spec applies.
func TestFirmware(t *testing.T) {
	dir := newSim(t, "cx6-vpi-ib")
	spec, err := filepath.Abs("../examples/ib-to-eth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	before := fstree.Snapshot(t, dir)
	for _, args := range []map[string]any{
		{"spec": spec, "sim": dir},
		{"spec": spec, "sim": dir, "allow_firmware": "no"},
		{"spec": spec, "sim": dir, "_ansible_check_mode": true}, // check mode predicts the refusal
	} {
		res := module(t, args)
		if !res.Failed || res.RC != 1 || !strings.Contains(res.Msg, "allow_firmware: true") || !strings.Contains(res.Msg, "firmware[0000:3b:00.0]: LINK_TYPE_P1") {
			t.Errorf("%v: failed=%v rc=%d msg=%q; want a refusal naming the change", args, res.Failed, res.RC, res.Msg)
		}
	}
	if diff := cmp.Diff(before, fstree.Snapshot(t, dir)); diff != "" {
		t.Fatalf("a refused run changed the host (-before +after):\n%s", diff)
	}
	// state: planned only plans: no refusal.
	if res := module(t, map[string]any{"spec": spec, "sim": dir, "state": "planned"}); res.Failed || !res.Changed || !res.RebootRequired {
		t.Errorf("planned: failed=%v changed=%v reboot=%v: %s", res.Failed, res.Changed, res.RebootRequired, res.Msg)
	}

	allow := map[string]any{"spec": spec, "sim": dir, "allow_firmware": true}
	res := module(t, allow)
	if res.Failed || !res.Changed || res.RC != 3 || !res.RebootRequired || len(res.Pending) != 1 || len(res.Deferred) != 1 {
		t.Fatalf("firmware apply: failed=%v changed=%v rc=%d reboot=%v pending=%v deferred=%v: %s", res.Failed, res.Changed, res.RC, res.RebootRequired, res.Pending, res.Deferred, res.Msg)
	}
	if got := res.Pending[0]; got.Address != plan.Addr("firmware", "0000:3b:00.0") || got.Attribute != "LINK_TYPE_P1" {
		t.Errorf("pending: %+v", got)
	}
	res = module(t, allow)
	if res.Failed || res.Changed || res.RC != 3 || !res.RebootRequired {
		t.Fatalf("again before the reboot: failed=%v changed=%v rc=%d reboot=%v, want nothing to do but a reboot: %s", res.Failed, res.Changed, res.RC, res.RebootRequired, res.Msg)
	}

	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reboot(); err != nil {
		t.Fatal(err)
	}
	res = module(t, allow)
	if res.Failed || !res.Changed || res.RC != 0 || res.RebootRequired {
		t.Fatalf("after the reboot: failed=%v changed=%v rc=%d reboot=%v: %s", res.Failed, res.Changed, res.RC, res.RebootRequired, res.Msg)
	}
	if res = module(t, allow); res.Changed || res.RC != 0 {
		t.Errorf("converged: changed=%v rc=%d: %s", res.Changed, res.RC, res.Msg)
	}
}

func TestFailures(t *testing.T) {
	dir := newSim(t, "cx5-roce")
	tests := []struct {
		name string
		args map[string]any
		msg  []string
	}{
		{
			name: "bad spec",
			args: map[string]any{"content": "version: 1\ndevices:\n  - name: mlx5_0\n    ports: [{port: 1, roce: {mode: v3}}]\n", "sim": dir},
			msg:  []string{`<stdin>:4:36: error: $.devices[0].ports[0].roce.mode: must be v1 or v2, not "v3"`},
		},
		{
			name: "host-dependent finding",
			args: map[string]any{"content": "version: 1\ndevices: [{name: mlx5_9, ports: [{port: 1, roce: {tos: 1}}]}]\n", "sim": dir},
			msg:  []string{"<stdin>:2:", "mlx5_9"},
		},
		{
			// What Ansible sends of content: {devices: [{pci: 0000:10:00.0}]}
			// with the address unquoted: PyYAML reads it as 600.0.
			name: "content mapping with an unquoted PCI address",
			args: map[string]any{"content": map[string]any{"version": 1, "devices": []any{map[string]any{"pci": json.RawMessage("600.0"), "ports": []any{map[string]any{"port": 1, "roce": map[string]any{"mode": "v2"}}}}}}, "sim": dir},
			msg:  []string{`$.devices[0].pci: "600.0" is not a PCI address`, "makes the unquoted address 0000:10:00.0 the base-60 number 600.0: quote it"},
		},
		{
			name: "spec file missing",
			args: map[string]any{"spec": filepath.Join(dir, "nope.yaml"), "sim": dir},
			msg:  []string{"nope.yaml", "no such file"},
		},
		{
			name: "not a simulated host",
			args: map[string]any{"content": roceSpec, "sim": t.TempDir()},
			msg:  []string{"not a simulated host"},
		},
		{
			name: "confirmed with nothing waiting",
			args: map[string]any{"sim": dir, "state": "confirmed"},
			msg:  []string{"nothing waits for confirmation on this host"},
		},
		{
			name: "bad arguments",
			args: map[string]any{"content": roceSpec, "spec": "/x", "sim": dir, "mode": "fast"},
			msg:  []string{"mutually exclusive", "unsupported parameters: mode"},
		},
	}
	before := fstree.Snapshot(t, dir)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := module(t, tt.args)
			if !res.Failed || res.Changed || res.RC != 1 {
				t.Fatalf("failed=%v changed=%v rc=%d, want failed, unchanged, rc 1: %s", res.Failed, res.Changed, res.RC, res.Msg)
			}
			for _, want := range tt.msg {
				if !strings.Contains(res.Msg, want) {
					t.Errorf("msg does not hold %q:\n%s", want, res.Msg)
				}
			}
		})
	}
	if diff := cmp.Diff(before, fstree.Snapshot(t, dir)); diff != "" {
		t.Errorf("a failed run changed the host (-before +after):\n%s", diff)
	}
}

func TestArgsFile(t *testing.T) {
	var out bytes.Buffer
	for _, args := range [][]string{nil, {"/nonexistent/args"}} {
		out.Reset()
		if code := ansible.Main(args, cli.Env{Stdout: &out}); code != 1 {
			t.Errorf("%v: exit %d, want 1", args, code)
		}
		var res ansible.Result
		if err := json.Unmarshal(out.Bytes(), &res); err != nil || !res.Failed || res.Msg == "" {
			t.Errorf("%v: %v, %+v; want a failed result with a message", args, err, res)
		}
	}
}

// TestArgsStdin: with StdinArg the module reads its arguments on standard
// input (the action plugin's module cache runs it so) and does what it
// does with the same arguments in a file; at most host.MaxLocalFile
// bytes, in a file as on standard input.
func TestArgsStdin(t *testing.T) {
	dir := newSim(t, "cx5-roce")
	args, err := json.Marshal(map[string]any{"content": roceSpec, "sim": dir, "state": "planned"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(argv []string, stdin []byte) (ansible.Result, int) {
		var out bytes.Buffer
		code := ansible.Main(argv, cli.Env{Stdin: bytes.NewReader(stdin), Stdout: &out, Environ: []string{"PATH=" + os.Getenv("PATH")}})
		var res ansible.Result
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("%v: stdout is not one JSON object: %v\n%s", argv, err, out.String())
		}
		return res, code
	}
	fromFile := module(t, map[string]any{"content": roceSpec, "sim": dir, "state": "planned"})
	fromStdin, code := run([]string{ansible.StdinArg}, args)
	if code != 0 || fromStdin.Failed || fromStdin.RC != 2 {
		t.Fatalf("arguments on stdin: exit %d, failed=%v rc=%d: %s", code, fromStdin.Failed, fromStdin.RC, fromStdin.Msg)
	}
	if diff := cmp.Diff(addresses(fromFile), addresses(fromStdin)); diff != "" {
		t.Errorf("the plan from stdin's arguments differs from the file's (-file +stdin):\n%s", diff)
	}

	// The same arguments padded with spaces (still one JSON object) to
	// the limit, and one byte past it.
	pad := func(n int) []byte {
		return append(append([]byte{}, args...), bytes.Repeat([]byte(" "), n-len(args))...)
	}
	for _, c := range []struct {
		size int
		ok   bool
	}{{host.MaxLocalFile, true}, {host.MaxLocalFile + 1, false}} {
		data := pad(c.size)
		f := filepath.Join(t.TempDir(), "args")
		if err := os.WriteFile(f, data, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, argv := range [][]string{{ansible.StdinArg}, {f}} {
			res, code := run(argv, data)
			tooBig := strings.Contains(res.Msg, "module arguments: more than 16777216 bytes")
			if c.ok && (code != 0 || res.Failed || res.RC != 2) {
				t.Errorf("%d bytes, %v: exit %d, failed=%v rc=%d (%s); want the plan", c.size, argv[0], code, res.Failed, res.RC, res.Msg)
			}
			if !c.ok && (code != 1 || !res.Failed || !tooBig) {
				t.Errorf("%d bytes, %v: exit %d, failed=%v, msg %q; want failed: more than 16777216 bytes", c.size, argv[0], code, res.Failed, res.Msg)
			}
		}
	}
}
