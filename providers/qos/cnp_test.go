package qos_test

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

const ofed = "0000:af:00.0" // cx6dx-ofed's first function, netdev ens2f0np0

// cnpOf reads the emulated CNP DSCP and priority of a netdev.
func cnpOf(t *testing.T, dir, netdev string) sim.CNPState {
	t.Helper()
	n := netdevState(t, dir, netdev)
	if n.ECN == nil || n.ECN.CNP == nil {
		t.Fatalf("%s has no CNP state", netdev)
	}
	return *n.ECN.CNP
}

// TestCNP: the CNP's DSCP and priority are written through MLNX_OFED's
// files, read back, and the next plan is empty; each value at its limit
// converges, one past it is refused at the spec line with the host
// unchanged; a spec that sets one of the two leaves the other alone.
func TestCNP(t *testing.T) {
	dir := simtest.Dir(t, "cx6dx-ofed", nil)
	if got := cnpOf(t, dir, "ens2f0np0"); got != (sim.CNPState{DSCP: 48, Prio: 6}) {
		t.Fatalf("factory CNP %+v, want 48/6", got)
	}
	spec := qosSpec(t, ofed, "{cnp: {dscp: 26, priority: 3}}")
	p := planJSON(t, dir, spec, 2)
	if len(p.Changes) != 1 || p.Changes[0].Address != "qos[mlx5_0/1]" {
		t.Fatalf("changes %+v", p.Changes)
	}
	attrs := map[string]string{}
	for _, a := range p.Changes[0].Attributes {
		attrs[a.Name] = a.Before + " -> " + a.After
	}
	if attrs["cnp_dscp"] != "48 -> 26" || attrs["cnp_priority"] != "6 -> 3" || len(attrs) != 2 {
		t.Errorf("attributes %v", attrs)
	}
	applyThenEmpty(t, dir, spec)
	if got := cnpOf(t, dir, "ens2f0np0"); got != (sim.CNPState{DSCP: 26, Prio: 3}) {
		t.Errorf("CNP after apply %+v, want 26/3", got)
	}
	if got := cnpOf(t, dir, "ens2f1np1"); got != (sim.CNPState{DSCP: 48, Prio: 6}) {
		t.Errorf("the other port's CNP changed: %+v", got)
	}
	// The limits: 63 and 7 converge; 64 and 8 are refused, nothing changes.
	applyThenEmpty(t, dir, qosSpec(t, ofed, "{cnp: {dscp: 63, priority: 7}}"))
	if got := cnpOf(t, dir, "ens2f0np0"); got != (sim.CNPState{DSCP: 63, Prio: 7}) {
		t.Errorf("CNP at the limits %+v, want 63/7", got)
	}
	applyThenEmpty(t, dir, qosSpec(t, ofed, "{cnp: {dscp: 0, priority: 0}}"))
	for _, c := range []struct{ qos, want string }{
		{"{cnp: {dscp: 64}}", "6:27: error: $.devices[0].ports[0].qos.cnp.dscp: 64 is above the maximum 63"},
		{"{cnp: {priority: 8}}", "6:31: error: $.devices[0].ports[0].qos.cnp.priority: 8 is above the maximum 7"},
		{"{cnp: {dscp: -1}}", "$.devices[0].ports[0].qos.cnp.dscp: -1 is below the minimum 0"},
		{"{cnp: {}}", "$.devices[0].ports[0].qos.cnp: give dscp, priority or both"},
	} {
		bad := qosSpec(t, ofed, c.qos)
		code, out, errs := clitest.Run(t, "--sim", dir, "apply", "--yes", "-f", bad)
		if code == 0 || !strings.Contains(out+errs, c.want) {
			t.Errorf("%s: exit %d, want the finding %q\n%s%s", c.qos, code, c.want, out, errs)
		}
	}
	if got := cnpOf(t, dir, "ens2f0np0"); got != (sim.CNPState{}) {
		t.Errorf("a refused spec changed the CNP: %+v", got)
	}
	// One of the two: the other stays.
	applyThenEmpty(t, dir, qosSpec(t, ofed, "{cnp: {priority: 5}}"))
	if got := cnpOf(t, dir, "ens2f0np0"); got != (sim.CNPState{DSCP: 0, Prio: 5}) {
		t.Errorf("CNP after setting the priority alone %+v, want 0/5", got)
	}
}

// TestCNPWithoutOFED: the upstream driver has no CNP files; the plan says
// so at the spec line, names the firmware parameters of the card's port
// that hold the values instead, and changes nothing.
func TestCNPWithoutOFED(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	spec := qosSpec(t, cx5, "{cnp: {dscp: 48, priority: 6}}")
	p := planJSON(t, dir, spec, 1)
	want := "ens1f0np0 has no CNP settings (/sys/class/net/ens1f0np0/ecn/roce_np/cnp_dscp, MLNX_OFED's mlx5); with the upstream driver the CNP's DSCP and priority are firmware CNP_DSCP_P1 and CNP_802P_PRIO_P1 (next boot)"
	if len(p.Errors) != 1 || !strings.Contains(p.Errors[0].Message, want) || len(p.Changes) != 0 {
		t.Fatalf("plan: errors %+v changes %+v, want one error containing %q", p.Errors, p.Changes, want)
	}
}

// TestCNPRevertShowAuditBoot: an unconfirmed apply puts the CNP back;
// show captures it, and the capture plans empty; a change behind
// rdmaform's back is drift in the audit; after a reboot (the driver
// starts from the firmware's values) the boot unit's apply sets it again.
func TestCNPRevertShowAuditBoot(t *testing.T) {
	dir := simtest.Dir(t, "cx6dx-ofed", nil)
	spec := qosSpec(t, ofed, "{cnp: {dscp: 26, priority: 3}}")
	code, out, errs := clitest.Run(t, "--sim", dir, "apply", "--yes", "--confirm-timeout", "1s", "-f", spec)
	if code != 1 || !strings.Contains(out+errs, "Reverted 1 changes: qos[mlx5_0/1]") {
		t.Fatalf("unconfirmed apply: exit %d\n%s%s", code, out, errs)
	}
	if got := cnpOf(t, dir, "ens2f0np0"); got != (sim.CNPState{DSCP: 48, Prio: 6}) {
		t.Errorf("CNP after the rollback %+v, want 48/6 back", got)
	}
	boot := clitest.WriteSpec(t, "version: 1\npersistence: boot-unit\ndevices:\n  - pci: \""+ofed+"\"\n    ports:\n      - port: 1\n        qos: {cnp: {dscp: 26, priority: 3}}\n")
	applyThenEmpty(t, dir, boot)

	code, capture, errs := clitest.Run(t, "--sim", dir, "show")
	if code != 0 || !strings.Contains(capture, "cnp:") {
		t.Fatalf("show: exit %d\n%s%s", code, capture, errs)
	}
	shown := clitest.WriteSpec(t, capture)
	if code, out, errs := clitest.Run(t, "--sim", dir, "plan", "-f", shown); code != 0 {
		t.Fatalf("plan of the capture: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := clitest.Run(t, "--sim", dir, "audit", "-f", boot); code != 0 {
		t.Fatalf("audit: exit %d\n%s%s", code, out, errs)
	}
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Host()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.FS.WriteAttr("/sys/class/net/ens2f0np0/ecn/roce_np/cnp_802p_prio", []byte("6\n")); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := clitest.Run(t, "--sim", dir, "audit", "-f", boot); code == 0 || !strings.Contains(out+errs, "cnp_priority") {
		t.Errorf("audit after a change behind rdmaform's back: exit %d, want drift naming cnp_priority\n%s%s", code, out, errs)
	}
	applyThenEmpty(t, dir, boot)

	// Without the boot unit, to see the firmware's values; then what
	// the unit runs, by hand.
	if code, out, errs := clitest.Run(t, "sim", "reboot", dir, "--no-boot-unit"); code != 0 {
		t.Fatalf("sim reboot: %d\n%s%s", code, out, errs)
	}
	if got := cnpOf(t, dir, "ens2f0np0"); got != (sim.CNPState{DSCP: 48, Prio: 6}) {
		t.Errorf("CNP after the reboot %+v, want the firmware's 48/6", got)
	}
	bootUnit(t, dir)
	if got := cnpOf(t, dir, "ens2f0np0"); got != (sim.CNPState{DSCP: 26, Prio: 3}) {
		t.Errorf("CNP after the boot unit %+v, want 26/3", got)
	}
	if code, out, errs := clitest.Run(t, "--sim", dir, "plan", "-f", boot); code != 0 {
		t.Errorf("plan after the boot unit: exit %d\n%s%s", code, out, errs)
	}
}

// bootUnit runs what the boot unit runs at boot, as sim reboot's help
// gives it.
func bootUnit(t *testing.T, dir string) {
	t.Helper()
	_, help, _ := clitest.Run(t, "sim", "reboot", "--help")
	n := 0
	sc := bufio.NewScanner(strings.NewReader(help))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); strings.HasPrefix(l, "rdmaform --sim DIR ") {
			args := strings.Fields(strings.ReplaceAll(l, "DIR", dir))
			if code, out, errs := clitest.Run(t, args[1:]...); code != 0 {
				t.Fatalf("%s: exit %d\n%s%s", l, code, out, errs)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatalf("sim reboot --help gives no boot commands:\n%s", help)
	}
}

// TestDocsCNP: the qos.cnp line of docs/guides/lossless-roce.md plans the CNP change it says on
// the simulated cx6dx-ofed host, apply makes the next plan empty, and lint
// has nothing to say about it (priority 3 is in pfc).
func TestDocsCNP(t *testing.T) {
	b, err := os.ReadFile("../../docs/guides/lossless-roce.md")
	if err != nil {
		t.Fatal(err)
	}
	var qos string
	for _, l := range strings.Split(string(b), "\n") {
		if s := strings.TrimSpace(l); strings.HasPrefix(s, "qos: {pfc: [3], cnp:") {
			qos = strings.TrimSpace(strings.SplitN(strings.TrimPrefix(s, "qos:"), "#", 2)[0])
		}
	}
	if qos == "" {
		t.Fatal("docs/guides/lossless-roce.md has no qos.cnp example line")
	}
	dir := simtest.Dir(t, "cx6dx-ofed", nil)
	spec := qosSpec(t, ofed, qos)
	code, out, errs := clitest.Run(t, "--sim", dir, "plan", "-f", spec)
	if code != 2 || !strings.Contains(out, "cnp_dscp: 48 -> 26") || !strings.Contains(out, "cnp_priority: 6 -> 3") {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errs)
	}
	applyThenEmpty(t, dir, spec)
	if code, out, errs := clitest.Run(t, "lint", spec); code != 0 {
		t.Errorf("lint: exit %d\n%s%s", code, out, errs)
	}
}

// TestCNPReadBack: a CNP write the driver does not keep fails apply with
// what it reads back, and the plan still shows the change.
func TestCNPReadBack(t *testing.T) {
	dir := simtest.Dir(t, "cx6dx-ofed", nil)
	if code, out, errs := clitest.Run(t, "sim", "fault", dir, "--write", "roce_np/cnp_dscp", "--drop"); code != 0 {
		t.Fatalf("sim fault: %d %s%s", code, out, errs)
	}
	spec := qosSpec(t, ofed, "{cnp: {dscp: 26}}")
	code, out, errs := clitest.Run(t, "--sim", dir, "apply", "--yes", "-f", spec)
	if code != 1 || !strings.Contains(out+errs, "ens2f0np0 after the writes: cnp_dscp is 48, not 26") {
		t.Errorf("apply: exit %d, want 1 naming the value read back\n%s%s", code, out, errs)
	}
	planJSON(t, dir, spec, 2)
}
