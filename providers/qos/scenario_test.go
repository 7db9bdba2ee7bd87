package qos_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/mlxemu"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// qosSpec is a spec with one qos block on port 1 of the PCI function.
func qosSpec(t *testing.T, pci, qos string) string {
	t.Helper()
	return clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \""+pci+"\"\n    ports:\n      - port: 1\n        qos: "+qos+"\n")
}

type jsonPlan struct {
	Changes []struct {
		Address    string      `json:"address"`
		Attributes []plan.Attr `json:"attributes"`
		Disrupts   []string    `json:"disrupts"`
	} `json:"changes"`
	Errors []struct {
		Message string `json:"message"`
	} `json:"errors"`
}

func planJSON(t *testing.T, dir, spec string, wantCode int) jsonPlan {
	t.Helper()
	code, out, errs := clitest.Run(t, "--sim", dir, "plan", "-f", spec, "-o", "json")
	if code != wantCode {
		t.Fatalf("plan: exit %d, want %d\n%s%s", code, wantCode, out, errs)
	}
	var p jsonPlan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return p
}

// applyThenEmpty applies a spec and proves the plan after it is empty.
func applyThenEmpty(t *testing.T, dir, spec string, flags ...string) {
	t.Helper()
	args := append(append([]string{"--sim", dir, "apply", "--yes"}, flags...), "-f", spec)
	if code, out, errs := clitest.Run(t, args...); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := clitest.Run(t, "--sim", dir, "plan", "-f", spec); code != 0 || !strings.Contains(out, "No changes.") {
		t.Fatalf("plan after apply: exit %d\n%s%s", code, out, errs)
	}
}

// netdevState reads a netdev's emulated QoS state from sim.yaml.
func netdevState(t *testing.T, dir, name string) *sim.Netdev {
	t.Helper()
	if n := simtest.State(t, dir).Netdev(name); n != nil {
		return n
	}
	t.Fatalf("no netdev %s", name)
	return nil
}

const cx5 = "0000:5e:00.0"

// TestTrustFollowsTheAppTable: mlx5's trust is the APP table: the first
// DSCP entry switches to DSCP trust, flushing the last returns to PCP.
// rdmaform writes the whole 64-entry map (only entries that differ), so
// the hardware map has no entry it cannot see; an override changes one
// entry alone.
func TestTrustFollowsTheAppTable(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	dscp := qosSpec(t, cx5, "{trust: dscp}")
	p := planJSON(t, dir, dscp, 2)
	want := []plan.Attr{{Name: "trust", Before: "pcp", After: "dscp"}, {Name: "dscp_map", Before: "none", After: "64 entries, dscp>>3"}}
	if d := cmp.Diff(want, p.Changes[0].Attributes); d != "" || p.Changes[0].Address != "qos[mlx5_0/1]" {
		t.Fatalf("%s (-want +got):\n%s", p.Changes[0].Address, d)
	}
	if d := cmp.Diff([]string{"ens1f0np0"}, p.Changes[0].Disrupts); d != "" {
		t.Errorf("a trust change reopens the queues: disrupts (-want +got):\n%s", d)
	}
	applyThenEmpty(t, dir, dscp)
	n := netdevState(t, dir, "ens1f0np0")
	if n.DCB.Trust != "dscp" || len(n.DCB.App) != 64 {
		t.Fatalf("trust %s with %d entries, want dscp with 64", n.DCB.Trust, len(n.DCB.App))
	}

	over := qosSpec(t, cx5, "{trust: dscp, dscp_map: {26: 5, 46: 5}}")
	p = planJSON(t, dir, over, 2)
	want = []plan.Attr{{Name: "dscp_map", Before: "26:3", After: "26:5"}}
	if d := cmp.Diff(want, p.Changes[0].Attributes); d != "" {
		t.Fatalf("override (-want +got):\n%s", d)
	}
	if len(p.Changes[0].Disrupts) != 0 {
		t.Errorf("an entry of an existing DSCP table disrupts nothing: %v", p.Changes[0].Disrupts)
	}
	applyThenEmpty(t, dir, over)
	if n := netdevState(t, dir, "ens1f0np0"); n.DCB.DSCP2Prio[26] != 5 || len(n.DCB.App) != 64 {
		t.Fatalf("dscp 26 -> %d with %d entries", n.DCB.DSCP2Prio[26], len(n.DCB.App))
	}

	pcp := qosSpec(t, cx5, "{trust: pcp}")
	applyThenEmpty(t, dir, pcp)
	if n := netdevState(t, dir, "ens1f0np0"); n.DCB.Trust != "pcp" || len(n.DCB.App) != 0 {
		t.Fatalf("trust %s with %d entries after the flush", n.DCB.Trust, len(n.DCB.App))
	}
}

// TestETSReadsBackAsMlx5Reports: mlx5 reports a strict class's bandwidth
// as 100, so a spec's strict classes (bandwidth 0) must not plan again
// after apply; ETS bandwidths must sum to 100 (the driver's EINVAL is a
// validation error first).
func TestETSReadsBackAsMlx5Reports(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	ets := qosSpec(t, cx5, "{ets: {prio_tc: [0, 1, 2, 3, 4, 5, 6, 7], tsa: [ets, ets, ets, ets, strict, strict, strict, strict], bw: [10, 20, 30, 40, 0, 0, 0, 0]}}")
	p := planJSON(t, dir, ets, 2)
	if got := p.Changes[0].Attributes[0]; got.Name != "ets" || got.After != "prio_tc 0,1,2,3,4,5,6,7; tsa ets,ets,ets,ets,strict,strict,strict,strict; bw 10,20,30,40,-,-,-,-" {
		t.Fatalf("ets attribute %+v", got)
	}
	applyThenEmpty(t, dir, ets)
	if n := netdevState(t, dir, "ens1f0np0"); n.DCB.BW[4] != 100 || n.DCB.BW[0] != 10 {
		t.Fatalf("emulated hardware bandwidths %v", n.DCB.BW)
	}
	bad := qosSpec(t, cx5, "{ets: {prio_tc: [0, 1, 2, 3, 4, 5, 6, 7], tsa: [ets, ets, ets, ets, strict, strict, strict, strict], bw: [10, 20, 30, 41, 0, 0, 0, 0]}}")
	code, out, errs := clitest.Run(t, "--sim", dir, "plan", "-f", bad)
	if code != 1 || !strings.Contains(out+errs, "$.devices[0].ports[0].qos.ets.bw: the ets traffic classes' bandwidths sum to 101, not 100") {
		t.Fatalf("bandwidths summing to 101: exit %d\n%s%s", code, out, errs)
	}
}

// TestPFCTogglesTheLinkAndIsGuarded: a PFC change toggles the port's link
// (mlx5_toggle_port_link), so it names the netdev in Disrupts, and apply
// refuses it on the interface of the default route without --allow-mgmt;
// the cable length alone disrupts nothing.
func TestPFCTogglesTheLinkAndIsGuarded(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", func(st *sim.State) { st.DefaultRoute = "ens1f0np0" })
	cable := qosSpec(t, cx5, "{cable_length: 30}")
	p := planJSON(t, dir, cable, 2)
	if d := cmp.Diff([]plan.Attr{{Name: "cable_length", Before: "7", After: "30"}}, p.Changes[0].Attributes); d != "" || len(p.Changes[0].Disrupts) != 0 {
		t.Fatalf("cable length (-want +got):\n%s disrupts %v", d, p.Changes[0].Disrupts)
	}
	applyThenEmpty(t, dir, cable)

	pfc := qosSpec(t, cx5, "{pfc: [3, 4]}")
	code, _, errs := clitest.Run(t, "--sim", dir, "apply", "--yes", "-f", pfc)
	if code != 1 || !strings.Contains(errs, "qos[mlx5_0/1] would take down") {
		t.Fatalf("PFC on the management interface: exit %d\n%s", code, errs)
	}
	if n := netdevState(t, dir, "ens1f0np0"); n.DCB.LinkToggles != 0 {
		t.Fatalf("the refused apply toggled the link")
	}
	applyThenEmpty(t, dir, pfc, "--allow-mgmt")
	if n := netdevState(t, dir, "ens1f0np0"); n.DCB.LinkToggles != 1 || !n.DCB.PFC[3] || !n.DCB.PFC[4] {
		t.Fatalf("pfc %v after %d toggles", n.DCB.PFC, n.DCB.LinkToggles)
	}
	off := qosSpec(t, cx5, "{pfc: []}")
	applyThenEmpty(t, dir, off, "--allow-mgmt")
}

// TestFindings: what makes QoS impossible or unsafe is a finding at the
// spec line, and nothing is applied: a running lldpad, firmware DCBX
// that is willing, a port already handed to the host asked back to the
// firmware, ECN without the OFED tree, dcb not installed.
func TestFindings(t *testing.T) {
	for _, c := range []struct {
		name, profile, qos string
		mutate             func(st *sim.State)
		want               string
	}{
		{"lldpad", "cx5-roce", "{pfc: [3]}", func(st *sim.State) { st.Processes = []sim.Process{{PID: 812, Comm: "lldpad"}} },
			"lldpad (PID 812) is running and may overwrite ens1f0np0's DCB settings"},
		{"willing firmware", "cx5-roce", "{dcbx: firmware, pfc: [3]}", func(st *sim.State) { st.Netdevs[0].DCB.Host = false },
			"with dcbx: firmware and willing firmware (DCBX_WILLING_P1 is True unless the device's firmware params set it false)"},
		{"back to firmware", "cx5-roce", "{dcbx: firmware}", nil,
			"DCB on ens1f0np0 is owned by the host; iproute2's dcb cannot hand it back to the firmware"},
		{"ecn upstream", "cx5-roce", "{ecn: [3]}", nil,
			"ens1f0np0 has no per-priority ECN tree"},
		{"no dcb", "cx5-roce", "{pfc: [3]}", func(st *sim.State) { st.Tools = []string{"modprobe"} },
			"reading the QoS of ens1f0np0: dcb is not installed (Debian/Ubuntu: apt install iproute2 ethtool"},
		{"no pause ops", "cx5-roce", "{pause: false}", func(st *sim.State) { st.Netdevs[0].Pause = nil },
			"global pause of ens1f0np0 cannot be read: `ethtool -a ens1f0np0` answered \"netlink error: Operation not supported\""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := simtest.Dir(t, c.profile, c.mutate)
			spec := qosSpec(t, cx5, c.qos)
			p := planJSON(t, dir, spec, 1)
			if len(p.Errors) != 1 || !strings.Contains(p.Errors[0].Message, c.want) {
				t.Fatalf("errors %+v, want one containing %q", p.Errors, c.want)
			}
			if len(p.Changes) != 0 {
				t.Errorf("changes planned despite the finding: %+v", p.Changes)
			}
		})
	}
	// Firmware that is not willing keeps host-set values: no finding. The
	// emulated ConnectX-5 gets DCBX_WILLING_P1 at its factory default,
	// True (reference/qos-sriov.md §1.1, from public mlxconfig dumps).
	dir := simtest.Dir(t, "cx5-roce", func(st *sim.State) {
		st.Netdevs[0].DCB.Host = false
		st.DeviceByPCI(cx5).DCBXFirmware = true // and so after the reboot
		for _, a := range st.Firmware {
			a.Params = append(a.Params, mlxemu.Param{Name: "DCBX_WILLING_P1", Type: mlxemu.TypeBool, TLV: "nv_dcbx", Default: 1, Current: 1, Next: 1})
		}
	})
	spec := clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \""+cx5+"\"\n    firmware: {params: {DCBX_WILLING_P1: false}}\n    ports:\n      - port: 1\n        qos: {dcbx: firmware, pfc: [3]}\n")
	// The firmware change is staged for the next boot; until then the
	// firmware is still willing, so the port's QoS waits for the reboot.
	code, out, errs := clitest.Run(t, "--sim", dir, "plan", "-f", spec)
	if code != 2 || !strings.Contains(out, "~ firmware[0000:5e:00.0]") || strings.Contains(out, "~ qos[") ||
		!strings.Contains(out, "? qos[mlx5_0/1] waits for DCBX_WILLING_P1=false on 0000:5e:00.0 (reboot)") {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := clitest.Run(t, "--sim", dir, "apply", "--yes", "-f", spec); code != 3 {
		t.Fatalf("apply before the reboot: exit %d, want 3\n%s%s", code, out, errs)
	}
	if code, out, errs := clitest.Run(t, "sim", "reboot", dir); code != 0 {
		t.Fatalf("sim reboot: %d\n%s%s", code, out, errs)
	}
	// After it the firmware is not willing: the host's PFC is set (the
	// reboot brought mlx5's defaults back, firmware-owned DCBX kept), and
	// apply then plan is empty.
	p := planJSON(t, dir, spec, 2)
	if len(p.Errors) != 0 || len(p.Changes) != 1 || p.Changes[0].Address != "qos[mlx5_0/1]" {
		t.Fatalf("after the reboot: want the PFC change alone: %+v", p)
	}
	applyThenEmpty(t, dir, spec)
}

// TestCardRegisteredAnew: QoS on a ConnectX-3 port that stays Ethernet
// while the other port switches type in the same plan is a finding:
// mlx4_core registers the card anew and its netdevs come back with the
// driver's DCB, which cannot be read before they exist.
func TestCardRegisteredAnew(t *testing.T) {
	dir := simtest.Dir(t, "cx3-mlx4", nil)
	bothEth := clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \"0000:81:00.0\"\n    ports: [{port: 1, type: eth}, {port: 2, type: eth}]\n")
	applyThenEmpty(t, dir, bothEth)
	spec := clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: \"0000:81:00.0\"\n    ports:\n      - {port: 1, type: ib}\n      - {port: 2, type: eth, qos: {pause: false}}\n")
	p := planJSON(t, dir, spec, 1)
	want := "mlx4_0 is registered anew in this plan (mlx4_port[0000:81:00.0/1]), and ens2d1's QoS returns to the driver's defaults"
	if len(p.Errors) != 1 || !strings.Contains(p.Errors[0].Message, want) {
		t.Fatalf("errors %+v, want one containing %q", p.Errors, want)
	}
}

// TestConfirmTimeoutRevertsQoS: under --confirm-timeout an unconfirmed
// apply puts the port's QoS back as it was (the APP table exactly).
func TestConfirmTimeoutRevertsQoS(t *testing.T) {
	dir := simtest.Dir(t, "cx6dx-ofed", nil)
	spec := qosSpec(t, "0000:af:00.0", "{trust: dscp, pfc: [3], pause: false, ecn: [3]}")
	before := netdevState(t, dir, "ens2f0np0")
	code, out, errs := clitest.Run(t, "--sim", dir, "apply", "--yes", "--confirm-timeout", "1s", "-f", spec)
	if code != 1 || !strings.Contains(out+errs, "Reverted 1 changes: qos[mlx5_0/1]") {
		t.Fatalf("unconfirmed apply: exit %d\n%s%s", code, out, errs)
	}
	after := netdevState(t, dir, "ens2f0np0")
	after.DCB.LinkToggles = before.DCB.LinkToggles
	// mlx5 zeroes a DSCP's hardware priority when its APP entry goes
	// (mlx5e_dcbnl_ieee_delapp), so after the flush back to PCP trust the
	// hidden map is all 0: unused with PCP trust, and rewritten whole by
	// the next trust: dscp.
	for _, p := range after.DCB.DSCP2Prio {
		if p != 0 {
			t.Errorf("hardware DSCP map after the flush: %v", after.DCB.DSCP2Prio)
			break
		}
	}
	after.DCB.DSCP2Prio = before.DCB.DSCP2Prio
	if d := cmp.Diff(before, after); d != "" {
		t.Fatalf("QoS after the rollback (-before +after):\n%s", d)
	}
}
