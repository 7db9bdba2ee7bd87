package ansible_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/bench"
	"github.com/rdmaform/rdmaform/cli"
)

// installCollection lays the collection out under the lab's
// ANSIBLE_COLLECTIONS_PATH as ansible-galaxy installs it, with the
// module built for this machine: the bench's bench.InstallCollection.
func (l *lab) installCollection(t *testing.T) {
	t.Helper()
	if _, ok := map[string]bool{"amd64": true, "arm64": true}[runtime.GOARCH]; !ok {
		t.Skipf("the collection has no build for %s", runtime.GOARCH)
	}
	if err := bench.InstallCollection(".", filepath.Join(l.dir, "collections"), filepath.Join(l.library, "rdmaform")); err != nil {
		t.Fatal(err)
	}
}

func rdmaform(t *testing.T, want int, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := cli.Run(args, cli.Env{Stdout: &out, Stderr: &errb, Environ: []string{"NO_COLOR=1"}}); code != want {
		t.Fatalf("rdmaform %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out.String(), errb.String())
	}
	return out.String()
}

// TestRolloutRole runs examples/ansible/fleet-rollout.yml (the role
// rdmaform.rdma.rollout, phases 1 and 2: rdma_stage_only) under ansible-core on eight
// simulated hosts, two of which already have the spec: with --check it
// prints the fleet summary and changes no host; without, it stages the
// firmware on the six others and resets or reboots none (each host's
// boot ID stays); after a reboot and an apply (the RoCE settings the spec
// has for the port once it is Ethernet) each plans empty, and the play's
// summary has nothing left to change.
func TestRolloutRole(t *testing.T) {
	l := newLab(t)
	l.installCollection(t)
	spec, err := filepath.Abs("../examples/ib-to-eth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var inv strings.Builder
	inv.WriteString("[rdma]\n")
	hosts := map[string]string{}
	for i := 1; i <= 8; i++ {
		name := fmt.Sprintf("node%d", i)
		hosts[name] = newSim(t, "cx6-vpi-ib")
		fmt.Fprintf(&inv, "%s ansible_connection=local rdmaform_sim=%s\n", name, hosts[name])
	}
	for _, done := range []string{"node7", "node8"} {
		rdmaform(t, 3, "--sim", hosts[done], "apply", "--yes", "-f", spec)
		rdmaform(t, 0, "sim", "reboot", hosts[done])
		rdmaform(t, 0, "--sim", hosts[done], "apply", "--yes", "-f", spec) // RoCE, once the port is Ethernet
		rdmaform(t, 0, "--sim", hosts[done], "plan", "-f", spec)
	}
	invFile := filepath.Join(l.dir, "inventory.ini")
	if err := os.WriteFile(invFile, []byte(inv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	snapshot := func() map[string]string {
		m := map[string]string{}
		for n, d := range hosts {
			b, err := os.ReadFile(filepath.Join(d, "sim.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			m[n] = string(b)
		}
		return m
	}
	bootID := func(n string) string {
		b, err := os.ReadFile(filepath.Join(hosts[n], "proc/sys/kernel/random/boot_id"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	play := func(flags ...string) string {
		t.Helper()
		args := append([]string{"-i", invFile, "-f", "8", "../examples/ansible/fleet-rollout.yml", "-e", "rdma_spec_file=" + spec, "-e", "rdma_become=false", "-e", "rdma_stage_only=true"}, flags...)
		cmd := exec.Command("ansible-playbook", args...)
		cmd.Env = l.env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ansible-playbook %s: %v\n%s", strings.Join(flags, " "), err, out)
		}
		return string(out)
	}

	before, boots := snapshot(), map[string]string{}
	for n := range hosts {
		boots[n] = bootID(n)
	}
	out := play("--check")
	summary := "rdmaform rollout: 6 of 8 hosts to change (6 changes), 6 to activate by fw-reset, 2 unchanged"
	if !strings.Contains(out, summary) {
		t.Errorf("check mode: no fleet summary %q:\n%s", summary, out)
	}
	if strings.Contains(out, "Phase 2") {
		t.Errorf("check mode went past phase 1:\n%s", out)
	}
	after := snapshot()
	for n := range hosts {
		if before[n] != after[n] {
			t.Errorf("check mode changed %s", n)
		}
	}

	out = play()
	for _, want := range []string{summary, "rdmaform rollout: staged on 6 hosts, 6 waiting for fw-reset"} {
		if !strings.Contains(out, want) {
			t.Errorf("run: lacks %q:\n%s", want, out)
		}
	}
	for i := 1; i <= 6; i++ {
		n := fmt.Sprintf("node%d", i)
		if bootID(n) != boots[n] {
			t.Errorf("%s was rebooted by the stage phase", n)
		}
		rdmaform(t, 3, "--sim", hosts[n], "plan", "-f", spec) // staged, pending
		rdmaform(t, 0, "sim", "reboot", hosts[n])
		rdmaform(t, 0, "--sim", hosts[n], "apply", "--yes", "-f", spec)
	}
	for n := range hosts {
		rdmaform(t, 0, "--sim", hosts[n], "plan", "-f", spec)
	}
	out = play("--check")
	if want := "rdmaform rollout: 0 of 8 hosts to change (0 changes), 0 to activate by fw-reset, 8 unchanged"; !strings.Contains(out, want) {
		t.Errorf("after the activation: lacks %q:\n%s", want, out)
	}
}
