package ethtool_test

import (
	"os"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// spec is a spec with one interface and its ethtool block.
func spec(t *testing.T, name, ethtool string, extra ...string) string {
	t.Helper()
	return clitest.WriteSpec(t, "version: 1\n"+strings.Join(extra, "")+"interfaces:\n  - name: "+name+"\n    ethtool: "+ethtool+"\n")
}

// queues reads a netdev's emulated rings and channels from sim.yaml.
func queues(t *testing.T, dir, name string) (rings, channels map[string]int) {
	t.Helper()
	n := simtest.State(t, dir).Netdev(name)
	if n == nil || n.Rings == nil || n.Channels == nil {
		t.Fatalf("no queues on %s", name)
	}
	return n.Rings.Cur, n.Channels.Cur
}

// TestRingsAndChannels: rings and channels change through the emulated
// ethtool (mlx5's maximums: 8192 entries, 16 combined channels), read
// back, and the next plan is empty; each at its maximum converges, one
// past it is refused at plan time naming the maximum, with nothing
// changed; a field the driver lacks (separate rx channels on mlx5) is a
// finding.
func TestRingsAndChannels(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	s := spec(t, "ens1f0np0", "{rings: {rx: 4096, tx: 2048}, channels: {combined: 8}}")
	out := clitest.Converge(t, dir, s)
	for _, want := range []string{"~ ethtool[ens1f0np0]", "rings.rx: 1024 -> 4096", "rings.tx: 1024 -> 2048", "channels.combined: 16 -> 8"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan does not say %q:\n%s", want, out)
		}
	}
	rings, channels := queues(t, dir, "ens1f0np0")
	if rings["rx"] != 4096 || rings["tx"] != 2048 || channels["combined"] != 8 {
		t.Errorf("after apply: rings %v channels %v", rings, channels)
	}
	if r, c := queues(t, dir, "ens1f1np1"); r["rx"] != 1024 || c["combined"] != 16 {
		t.Errorf("the other netdev changed: rings %v channels %v", r, c)
	}
	clitest.Converge(t, dir, spec(t, "ens1f0np0", "{rings: {rx: 8192, tx: 8192}, channels: {combined: 16}}"))
	for _, c := range []struct{ ethtool, want string }{
		{"{rings: {rx: 8193}}", "rings.rx: 8193 is above the driver's maximum 8192 for ens1f0np0 (`ethtool -g ens1f0np0`, Pre-set maximums)"},
		{"{rings: {tx: 8193}}", "rings.tx: 8193 is above the driver's maximum 8192 for ens1f0np0"},
		{"{channels: {combined: 17}}", "channels.combined: 17 is above the driver's maximum 16 for ens1f0np0 (`ethtool -l ens1f0np0`, Pre-set maximums)"},
		{"{channels: {rx: 2}}", "channels.rx: the driver of ens1f0np0 has no rx channels (`ethtool -l ens1f0np0` shows n/a)"},
		{"{channels: {combined: 0}}", "channels: ens1f0np0 would have no channel left"},
	} {
		out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "-f", spec(t, "ens1f0np0", c.ethtool))
		if !strings.Contains(out, "$.interfaces[0].ethtool: ") || !strings.Contains(out, c.want) {
			t.Errorf("%s: want the finding %q at the spec line:\n%s", c.ethtool, c.want, out)
		}
	}
	if rings, channels := queues(t, dir, "ens1f0np0"); rings["rx"] != 8192 || rings["tx"] != 8192 || channels["combined"] != 16 {
		t.Errorf("a refused spec changed the netdev: rings %v channels %v", rings, channels)
	}
	// Schema bounds: at least one ring entry, no negative channel count.
	for _, c := range []struct{ ethtool, want string }{
		{"{rings: {rx: 0}}", "rings.rx: 0 is below the minimum 1"},
		{"{channels: {combined: -1}}", "channels.combined: -1 is below the minimum 0"},
	} {
		if out := clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", spec(t, "ens1f0np0", c.ethtool)); !strings.Contains(out, c.want) {
			t.Errorf("%s: want %q:\n%s", c.ethtool, c.want, out)
		}
	}
}

// TestRingsRoundedByDriver: mlx5 rounds a ring size up to a power of two;
// the read back catches it and apply fails naming both values.
func TestRingsRoundedByDriver(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "-f", spec(t, "ens1f0np0", "{rings: {rx: 1000}}"))
	if !strings.Contains(out, "ens1f0np0 after ethtool: rings.rx is 1024, not 1000") {
		t.Errorf("apply does not name the rounded value:\n%s", out)
	}
}

// TestEthtoolFindings: a driver without the operation, a missing tool and
// a netdev that does not exist are said at the spec line; nothing runs.
func TestEthtoolFindings(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", func(st *sim.State) { st.Netdev("ens1f0np0").Channels = nil })
	out := clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", spec(t, "ens1f0np0", "{channels: {combined: 4}}"))
	if !strings.Contains(out, "the driver of ens1f0np0 has no channels to set: `ethtool -l ens1f0np0` answered \"netlink error: Operation not supported\"") {
		t.Errorf("no finding for a driver without channels:\n%s", out)
	}
	dir = simtest.Dir(t, "cx5-roce", func(st *sim.State) { st.Tools = []string{"ip", "modprobe"} })
	out = clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", spec(t, "ens1f0np0", "{rings: {rx: 512}}"))
	if !strings.Contains(out, "ethtool is not installed (Debian/Ubuntu: apt install ethtool") {
		t.Errorf("no finding naming the missing ethtool:\n%s", out)
	}
}

// TestEthtoolRevertShowAuditBoot: an unconfirmed apply puts rings and
// channels back; show captures them and its capture plans empty; a
// change behind rdmaform's back is drift; after a reboot (the driver's
// defaults) the boot unit's apply sets them again.
func TestEthtoolRevertShowAuditBoot(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	s := spec(t, "ens1f0np0", "{rings: {rx: 2048}, channels: {combined: 4}}")
	out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "--confirm-timeout", "1s", "-f", s)
	if !strings.Contains(out, "ethtool[ens1f0np0]") || !strings.Contains(out, "Reverted") {
		t.Fatalf("unconfirmed apply:\n%s", out)
	}
	if rings, channels := queues(t, dir, "ens1f0np0"); rings["rx"] != 1024 || channels["combined"] != 16 {
		t.Errorf("after the rollback: rings %v channels %v, want 1024 and 16 back", rings, channels)
	}
	boot := spec(t, "ens1f0np0", "{rings: {rx: 2048}, channels: {combined: 4}}", "persistence: boot-unit\n")
	clitest.Converge(t, dir, boot)

	capture := clitest.MustRun(t, 0, "--sim", dir, "show")
	if !strings.Contains(capture, "ethtool:") {
		t.Fatalf("show captured no ethtool block:\n%s", capture)
	}
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", clitest.WriteSpec(t, capture))
	clitest.MustRun(t, 0, "--sim", dir, "audit", "-f", boot)
	clitest.MustRun(t, 0, "sim", "tool", dir, "--", "ethtool", "-L", "ens1f0np0", "combined", "2")
	if out := clitest.MustRun(t, 2, "--sim", dir, "audit", "-f", boot); !strings.Contains(out, "ethtool[ens1f0np0]") {
		t.Errorf("audit does not report the drift:\n%s", out)
	}
	clitest.MustRun(t, 0, "--sim", dir, "apply", "--yes", "-f", boot)

	clitest.MustRun(t, 0, "sim", "reboot", dir, "--no-boot-unit")
	if rings, channels := queues(t, dir, "ens1f0np0"); rings["rx"] != 1024 || channels["combined"] != 16 {
		t.Errorf("after the reboot: rings %v channels %v, want the driver's 1024 and 16", rings, channels)
	}
	bootUnit(t, dir)
	if rings, channels := queues(t, dir, "ens1f0np0"); rings["rx"] != 2048 || channels["combined"] != 4 {
		t.Errorf("after the boot unit: rings %v channels %v", rings, channels)
	}
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", boot)
	// A reboot that runs the enabled boot unit, as systemd does, ends with
	// the same empty plan.
	clitest.MustRun(t, 0, "sim", "reboot", dir)
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", boot)
}

// bootUnit runs what the boot unit runs at boot, as sim reboot's help
// gives it.
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

// TestDocsHostKnobs: the "NIC rings, channels" section of
// docs/guides/host-knobs.md holds examples/host-knobs.yaml as it is
// (TestExamples converges the file on its simulated host).
func TestDocsHostKnobs(t *testing.T) {
	readme, err := os.ReadFile("../../docs/guides/host-knobs.md")
	if err != nil {
		t.Fatal(err)
	}
	ex, err := os.ReadFile("../../examples/host-knobs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```yaml\n"+string(ex)+"```\n") {
		t.Errorf("docs/guides/host-knobs.md does not hold examples/host-knobs.yaml as it is")
	}
}

// TestChannelsSeparateRxTx: on a driver with combined, rx and tx channels
// a spec that sets only some of them is checked with the current values
// of the others: combined 0 leaves the rx and tx channels and converges;
// rx 0 (or tx 0) with combined 0 leaves nothing to receive (or send) on,
// which the kernel refuses, so the plan refuses it naming the direction,
// and nothing changes; one channel each way is the limit that converges.
func TestChannelsSeparateRxTx(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", func(st *sim.State) {
		st.Netdev("ens1f0np0").Channels = &sim.QueueState{
			Max: map[string]int{"combined": 8, "rx": 8, "tx": 8},
			Cur: map[string]int{"combined": 4, "rx": 2, "tx": 2},
		}
	})
	out := clitest.Converge(t, dir, spec(t, "ens1f0np0", "{channels: {combined: 0}}"))
	if !strings.Contains(out, "channels.combined: 4 -> 0") {
		t.Errorf("plan does not set combined alone:\n%s", out)
	}
	if _, c := queues(t, dir, "ens1f0np0"); c["combined"] != 0 || c["rx"] != 2 || c["tx"] != 2 {
		t.Fatalf("after apply: channels %v, want combined 0, rx 2, tx 2", c)
	}
	for _, c := range []struct{ ethtool, want string }{
		{"{channels: {rx: 0}}", "channels: ens1f0np0 would have no channel left for rx (combined and rx both 0"},
		{"{channels: {tx: 0}}", "channels: ens1f0np0 would have no channel left for tx (combined and tx both 0"},
		{"{channels: {rx: 0, tx: 0}}", "channels: ens1f0np0 would have no channel left for rx"},
	} {
		out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "-f", spec(t, "ens1f0np0", c.ethtool))
		if !strings.Contains(out, "$.interfaces[0].ethtool: ") || !strings.Contains(out, c.want) {
			t.Errorf("%s: want the finding %q at the spec line:\n%s", c.ethtool, c.want, out)
		}
	}
	if _, c := queues(t, dir, "ens1f0np0"); c["combined"] != 0 || c["rx"] != 2 || c["tx"] != 2 {
		t.Errorf("a refused spec changed the channels: %v", c)
	}
	clitest.Converge(t, dir, spec(t, "ens1f0np0", "{channels: {rx: 1, tx: 1}}"))
	if _, c := queues(t, dir, "ens1f0np0"); c["combined"] != 0 || c["rx"] != 1 || c["tx"] != 1 {
		t.Errorf("after apply: channels %v, want combined 0, rx 1, tx 1", c)
	}
}
