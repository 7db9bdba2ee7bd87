package irqaffinity_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// On the cx5-roce profile mlx5_0 is 0000:5e:00.0 with the vectors
// (IRQs) 40-47 and mlx5_1 0000:5e:00.1 with 48-55, both on NUMA node 0;
// the simulated machine has 16 CPUs, 0-7 on node 0 and 8-15 on node 1,
// and a vector's list is every CPU (0-15) at boot.
const (
	pf0 = "0000:5e:00.0"
	pf1 = "0000:5e:00.1"
)

func spec(t *testing.T, extra string, devs ...string) string {
	t.Helper()
	return clitest.WriteSpec(t, "version: 1\n"+extra+"devices:\n"+strings.Join(devs, ""))
}

func dev(name, block string) string {
	return "  - name: " + name + "\n    irq_affinity: " + block + "\n"
}

// lists reads the simulated host's /proc/irq/N/smp_affinity_list of IRQs
// from..to.
func lists(t *testing.T, dir string, from, to int) []string {
	t.Helper()
	var out []string
	for irq := from; irq <= to; irq++ {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("proc/irq/%d/smp_affinity_list", irq)))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.TrimSpace(string(b)))
	}
	return out
}

func want(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%s: %v, want %v", what, got, want)
	}
}

func all(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "0-15"
	}
	return out
}

// bootUnit runs what the simulated host's boot unit runs.
func bootUnit(t *testing.T, dir string) {
	t.Helper()
	help := clitest.MustRun(t, 0, "sim", "reboot", "--help")
	n := 0
	for _, l := range strings.Split(help, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "rdmaform --sim DIR ") {
			clitest.MustRun(t, 0, strings.Fields(strings.ReplaceAll(l, "DIR", dir))[1:]...)
			n++
		}
	}
	if n == 0 {
		t.Fatalf("sim reboot --help gives no boot commands:\n%s", help)
	}
}

// TestIRQAffinityLocal is the scenario: cpus: local spreads mlx5_0's 8
// vectors over node 0's CPUs 0-7, one each in IRQ order, and leaves
// mlx5_1's alone; plan empty after apply. The setting is runtime: a
// reboot gives every vector all CPUs again (plan shows the work), the
// boot unit sets it again (plan empty), and a reboot that runs the boot
// unit ends the same. The audit is clean, and reports a vector moved by
// hand (irqbalance, an operator's echo).
func TestIRQAffinityLocal(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	sp := spec(t, "persistence: boot-unit\n", dev("mlx5_0", "{cpus: local}"))
	out := clitest.MustRun(t, 2, "--sim", dir, "plan", "-f", sp)
	for _, w := range []string{"~ irq_affinity[" + pf0 + "]", "irq 40: 0-15 -> 0", "irq 47: 0-15 -> 7", "1 to change"} {
		if !strings.Contains(out, w) {
			t.Errorf("plan: want %q:\n%s", w, out)
		}
	}
	clitest.Converge(t, dir, sp)
	want(t, "mlx5_0 after apply", lists(t, dir, 40, 47), "0", "1", "2", "3", "4", "5", "6", "7")
	want(t, "mlx5_1 after apply", lists(t, dir, 48, 55), all(8)...)
	clitest.MustRun(t, 0, "--sim", dir, "audit", "-f", sp)

	// A vector moved behind rdmaform's back.
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Host()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.FS.WriteAttr("/proc/irq/41/smp_affinity_list", []byte("9-10\n")); err != nil {
		t.Fatal(err)
	}
	out = clitest.MustRun(t, 2, "--sim", dir, "audit", "-f", sp)
	if !strings.Contains(out, "irq_affinity["+pf0+"]") {
		t.Errorf("audit after a hand move does not name irq_affinity[%s]:\n%s", pf0, out)
	}
	out = clitest.MustRun(t, 2, "--sim", dir, "plan", "-f", sp)
	if !strings.Contains(out, "irq 41: 9-10 -> 1") || strings.Contains(out, "irq 40:") {
		t.Errorf("plan after the hand move changes IRQ 41 alone:\n%s", out)
	}
	clitest.Converge(t, dir, sp)

	clitest.MustRun(t, 0, "sim", "reboot", dir, "--no-boot-unit")
	want(t, "after the reboot", lists(t, dir, 40, 47), all(8)...)
	clitest.MustRun(t, 2, "--sim", dir, "plan", "-f", sp)
	bootUnit(t, dir)
	want(t, "after the boot unit", lists(t, dir, 40, 47), "0", "1", "2", "3", "4", "5", "6", "7")
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", sp)
	clitest.MustRun(t, 0, "sim", "reboot", dir)
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", sp)
}

// TestIRQAffinityList: a CPU list is spread round-robin (8 vectors over
// 3 CPUs: 8 9 10 8 9 10 8 9); the other node's CPUs are allowed, as
// set_irq_affinity_cpulist.sh allows them. On a node-1 function local
// means 8-15, and an offline CPU of the node is left out.
func TestIRQAffinityList(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", func(st *sim.State) {
		st.Devices[1].NUMANode = 1
		st.OfflineCPUs = []int{9}
	})
	clitest.Converge(t, dir, spec(t, "", dev("mlx5_0", "{cpus: \"8,10-11\"}"), dev("mlx5_1", "{cpus: local}")))
	want(t, "mlx5_0", lists(t, dir, 40, 47), "8", "10", "11", "8", "10", "11", "8", "10")
	want(t, "mlx5_1", lists(t, dir, 48, 55), "8", "10", "11", "12", "13", "14", "15", "8")
}

// TestIRQAffinityLimits: CPU 15, the host's last, converges; 16, one
// past it, is a plan finding naming the online CPUs, as is an offline
// CPU; CPU 8191 (the last a kernel can have) passes validate and is the
// same finding, 8192 is refused by validate; malformed lists are refused
// at the spec line. Nothing changes on a refused spec.
func TestIRQAffinityLimits(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", func(st *sim.State) { st.OfflineCPUs = []int{3} })
	clitest.Converge(t, dir, spec(t, "", dev("mlx5_0", "{cpus: \"15\"}")))
	want(t, "at CPU 15", lists(t, dir, 40, 47), "15", "15", "15", "15", "15", "15", "15", "15")
	for _, c := range []struct{ cpus, want string }{
		{"16", "CPU 16 not online on this host (online: 0-2,4-15)"},
		{"2-3", "CPU 3 not online on this host (online: 0-2,4-15)"},
		{"8191", "CPU 8191 not online on this host"},
	} {
		sp := spec(t, "", dev("mlx5_0", "{cpus: \""+c.cpus+"\"}"))
		clitest.MustRun(t, 0, "validate", "-f", sp)
		out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "-f", sp)
		if !strings.Contains(out, "devices[0].irq_affinity.cpus: "+pf0+": "+c.want) {
			t.Errorf("cpus %s: want %q:\n%s", c.cpus, c.want, out)
		}
	}
	for _, c := range []struct{ cpus, want string }{
		{"8192", "CPU 8192 is past the last CPU a kernel can have (8191)"},
		{"3-1", "the range 3-1 runs backwards"},
		{"1,1", "CPU 1 is listed twice"},
		{"0-", `"" is not a CPU number`},
		{"x", `"x" is not a CPU number`},
		{"-1", `"" is not a CPU number`},
	} {
		out := clitest.MustRun(t, 1, "validate", "-f", spec(t, "", dev("mlx5_0", "{cpus: \""+c.cpus+"\"}")))
		if !strings.Contains(out, "devices[0].irq_affinity.cpus: "+c.want) {
			t.Errorf("cpus %s: want %q:\n%s", c.cpus, c.want, out)
		}
	}
	for _, c := range []struct{ block, want string }{
		{"{cpus: \"\"}", "devices[0].irq_affinity: cpus: is required"},
		{"{cpus: local, irqbalance: maybe}", "irqbalance"},
	} {
		out := clitest.MustRun(t, 1, "validate", "-f", spec(t, "", dev("mlx5_0", c.block)))
		if !strings.Contains(out, c.want) {
			t.Errorf("%s: want %q:\n%s", c.block, c.want, out)
		}
	}
	want(t, "after the refused specs", lists(t, dir, 40, 47), "15", "15", "15", "15", "15", "15", "15", "15")
}

// TestIRQAffinityRollbackShow: an unconfirmed apply puts every vector's
// list back as it was; show captures cpus: local on a function spread
// over its node and on no other, and the capture plans nothing.
func TestIRQAffinityRollbackShow(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	sp := spec(t, "", dev("mlx5_0", "{cpus: local}"), dev("mlx5_1", "{cpus: \"5\"}"))
	out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "--confirm-timeout", "1s", "-f", sp)
	if !strings.Contains(out, "irq_affinity["+pf1+"]") || !strings.Contains(out, "Reverted") {
		t.Fatalf("unconfirmed apply:\n%s", out)
	}
	want(t, "after the rollback", lists(t, dir, 40, 55), all(16)...)
	clitest.Converge(t, dir, sp)
	out = clitest.MustRun(t, 0, "--sim", dir, "show")
	if strings.Count(out, "irq_affinity:") != 1 || !strings.Contains(out, "irq_affinity:\n      cpus: local") {
		t.Errorf("show does not capture cpus: local on mlx5_0 alone:\n%s", out)
	}
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", clitest.WriteSpec(t, out))
}

// TestIRQBalance: a running irqbalance that bans nothing is a finding
// naming the IRQs, the options and the file, and nothing is written;
// with every vector banned (--banirq, -i, clustered -fi) it converges;
// one vector left unbanned is named alone; with a policy script the
// finding says how to say it bans them (irqbalance: ignore), which
// converges.
func TestIRQBalance(t *testing.T) {
	args := func(a ...string) func(st *sim.State) {
		return func(st *sim.State) {
			st.Processes = append(st.Processes, sim.Process{PID: 812, Comm: "irqbalance", Args: append([]string{"/usr/sbin/irqbalance", "--foreground"}, a...)})
		}
	}
	dir := simtest.Dir(t, "cx5-roce", args())
	sp := spec(t, "", dev("mlx5_0", "{cpus: local}"))
	out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "-f", sp)
	for _, w := range []string{
		"devices[0].irq_affinity: irqbalance (pid 812) is running and does not ban IRQ 40 41 42 43 44 45 46 47 of " + pf0,
		"--banirq=40 --banirq=41", "to IRQBALANCE_ARGS in /etc/default/irqbalance and restart irqbalance, or stop and disable irqbalance",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("want %q:\n%s", w, out)
		}
	}
	want(t, "after the refused apply", lists(t, dir, 40, 47), all(8)...)

	dir = simtest.Dir(t, "cx5-roce", args("--banirq=40", "--banirq", "41", "-i", "42", "-i43", "-fi", "44", "--ban=45", "--banirq=46", "--banir=47"))
	out = clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", sp)
	if !strings.Contains(out, "does not ban IRQ 45 of "+pf0) {
		t.Errorf("--ban (ambiguous: banirq, banmod) bans nothing, the rest all:\n%s", out)
	}
	dir = simtest.Dir(t, "cx5-roce", args("--banirq=40", "--banirq", "41", "-i", "42", "-i43", "-fi", "44", "--banirq=45", "--banirq=46", "--banir=47"))
	clitest.Converge(t, dir, sp)

	dir = simtest.Dir(t, "cx5-roce", args("--policyscript=/etc/irqbalance.d"))
	out = clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", sp)
	if !strings.Contains(out, "if its policy script /etc/irqbalance.d bans them (ban=true), set irq_affinity.irqbalance: ignore") {
		t.Errorf("policy script:\n%s", out)
	}
	clitest.Converge(t, dir, spec(t, "", dev("mlx5_0", "{cpus: local, irqbalance: ignore}")))
}

// TestIRQAffinityFindings: a vector whose affinity the kernel manages
// refuses the write (EIO): apply fails naming it and why; a Soft-RoCE
// device has no vectors of its own.
func TestIRQAffinityFindings(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", func(st *sim.State) { st.Devices[0].ManagedIRQs = true })
	out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "-f", spec(t, "", dev("mlx5_0", "{cpus: local}")))
	if !strings.Contains(out, "IRQ 40 of "+pf0+": writing 0 to /proc/irq/40/smp_affinity_list") || !strings.Contains(out, "a managed IRQ") {
		t.Errorf("managed vectors:\n%s", out)
	}
	dir = simtest.Dir(t, "vm-soft", nil)
	out = clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", spec(t, "", dev("rxe0", "{cpus: local}")))
	if !strings.Contains(out, "has no PCI function (a Soft-RoCE device?): irq_affinity needs one") {
		t.Errorf("Soft-RoCE:\n%s", out)
	}
}
