package acs_test

import (
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// On the gpu-switch profile mlx5_0 (0000:18:00.0) and GPU 0 (0000:19:00.0)
// sit below the downstream ports 0000:17:00.0 and 0000:17:01.0 of one
// switch (upstream port 0000:16:00.0, no ACS), below root port
// 0000:15:01.0; mlx5_3 (0000:40:00.0) and GPU 1 the same below
// 0000:3f:00.0 and 0000:3f:01.0. The kernel's boot value of each port
// is 0x001d (SrcValid ReqRedir CmpltRedir UpstreamFwd).
const (
	nic0 = "0000:18:00.0"
	dsp0 = "0000:17:00.0"
	gsp0 = "0000:17:01.0"
	usp0 = "0000:16:00.0"
	rp0  = "0000:15:01.0"
	nic1 = "0000:40:00.0"
	dsp1 = "0000:3f:00.0"
	gsp1 = "0000:3f:01.0"
	boot = 0x001d
)

func acsSpec(t *testing.T, extra string, devs ...string) string {
	t.Helper()
	return clitest.WriteSpec(t, "version: 1\n"+extra+"devices:\n"+strings.Join(devs, ""))
}

func p2p(pci string) string {
	return "  - pci: \"" + pci + "\"\n    acs: {peer_to_peer: true}\n"
}

// controls reads every bridge's emulated ACS Control from sim.yaml.
func controls(t *testing.T, dir string) map[string]uint16 {
	t.Helper()
	out := map[string]uint16{}
	for _, b := range simtest.State(t, dir).Bridges {
		out[b.PCI] = b.ACSControl
	}
	return out
}

// TestACSPeerToPeer is the GPU node's scenario: peer_to_peer on two
// NICs turns P2P Request Redirect, Completion Redirect and Egress
// Control off on the switch ports between each NIC and its GPU, keeping
// every other bit, and nothing else changes (the root port, the other
// pairs); the plan says the boot unit sets it again. Apply, plan empty;
// a reboot brings the kernel's ACS back (plan shows the work again);
// the boot unit's apply makes it again and the plan is empty; a reboot
// that runs the boot unit ends the same.
func TestACSPeerToPeer(t *testing.T) {
	dir := simtest.Dir(t, "gpu-switch", func(st *sim.State) {
		// Translation Blocking on at boot too, on one port: a bit
		// peer_to_peer leaves alone.
		st.Bridge(gsp0).ACSControl |= 0x0002
	})
	spec := acsSpec(t, "persistence: boot-unit\n", p2p(nic0), p2p(nic1))
	out := clitest.Converge(t, dir, spec)
	for _, want := range []string{
		"~ acs[" + dsp0 + "]", "~ acs[" + gsp0 + "]", "~ acs[" + dsp1 + "]", "~ acs[" + gsp1 + "]",
		"acs_control: 0x001d (SrcValid ReqRedir CmpltRedir UpstreamFwd) -> 0x0011 (SrcValid UpstreamFwd)",
		"acs_control: 0x001f (SrcValid TransBlk ReqRedir CmpltRedir UpstreamFwd) -> 0x0013 (SrcValid TransBlk UpstreamFwd)",
		"at_boot: kernel's ACS -> boot unit",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	for _, not := range []string{"acs[" + rp0 + "]", "acs[" + usp0 + "]"} {
		if strings.Contains(out, not) {
			t.Errorf("plan changes %s, which is not between a NIC and its GPU:\n%s", not, out)
		}
	}
	got := controls(t, dir)
	for b, want := range map[string]uint16{dsp0: 0x0011, gsp0: 0x0013, dsp1: 0x0011, gsp1: 0x0011, rp0: boot, "0000:5d:00.0": boot, "0000:5b:01.0": boot, "0000:99:00.0": boot} {
		if got[b] != want {
			t.Errorf("after apply, bridge %s: ACS Control %#04x, want %#04x", b, got[b], want)
		}
	}

	clitest.MustRun(t, 0, "sim", "reboot", dir, "--no-boot-unit")
	if got := controls(t, dir); got[dsp0] != boot || got[gsp1] != boot {
		t.Errorf("after the reboot: %#04x %#04x, want the kernel's %#04x", got[dsp0], got[gsp1], boot)
	}
	if out := clitest.MustRun(t, 2, "--sim", dir, "plan", "-f", spec); !strings.Contains(out, "Plan: 0 to add, 4 to change") {
		t.Errorf("plan after the reboot:\n%s", out)
	}
	bootUnit(t, dir)
	if got := controls(t, dir); got[dsp0] != 0x0011 || got[gsp1] != 0x0011 {
		t.Errorf("after the boot unit: %#04x %#04x", got[dsp0], got[gsp1])
	}
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", spec)
	clitest.MustRun(t, 0, "sim", "reboot", dir)
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", spec)
}

// TestACSRollback: an unconfirmed apply puts every bridge's control
// value back, the explicit one and those peer_to_peer changed.
func TestACSRollback(t *testing.T) {
	dir := simtest.Dir(t, "gpu-switch", nil)
	before := controls(t, dir)
	spec := acsSpec(t, "", p2p(nic0), "  - pci: \""+nic1+"\"\n    acs:\n      bridges:\n        - {pci: \""+gsp1+"\", control: 0x0051}\n        - {pci: \"0000:3d:01.0\", control: 0}\n")
	out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "--confirm-timeout", "1s", "-f", spec)
	if !strings.Contains(out, "acs[0000:3d:01.0]") || !strings.Contains(out, "Reverted") {
		t.Fatalf("unconfirmed apply:\n%s", out)
	}
	after := controls(t, dir)
	for b, v := range before {
		if after[b] != v {
			t.Errorf("bridge %s: %#04x after the rollback, want %#04x back", b, after[b], v)
		}
	}
	clitest.MustRun(t, 2, "--sim", dir, "plan", "-f", spec)
}

// TestACSExplicit: an explicit control value is written whole, on a
// bridge above the NIC (its root port) or between it and its GPU, and
// wins over peer_to_peer there; 0 and the bridge's whole capability
// (0x007f, the limit the hardware sets) converge.
func TestACSExplicit(t *testing.T) {
	dir := simtest.Dir(t, "gpu-switch", nil)
	explicit := func(v string) string {
		return "  - pci: \"" + nic0 + "\"\n    acs:\n      peer_to_peer: true\n      bridges:\n        - {pci: \"" + rp0 + "\", control: " + v + "}\n        - {pci: \"" + gsp0 + "\", control: 0x0015}\n"
	}
	out := clitest.Converge(t, dir, acsSpec(t, "", explicit("0")))
	if !strings.Contains(out, "~ acs["+rp0+"]") || !strings.Contains(out, "-> 0x0000 (none)") || !strings.Contains(out, "-> 0x0015 (SrcValid ReqRedir UpstreamFwd)") ||
		!strings.Contains(out, "at_boot: kernel's ACS -> kernel's ACS (persistence: none)") {
		t.Errorf("plan:\n%s", out)
	}
	if got := controls(t, dir); got[rp0] != 0 || got[gsp0] != 0x0015 || got[dsp0] != 0x0011 {
		t.Errorf("controls: root port %#04x, GPU's port %#04x, NIC's port %#04x", got[rp0], got[gsp0], got[dsp0])
	}
	clitest.Converge(t, dir, acsSpec(t, "", explicit("0x007f")))
	if got := controls(t, dir); got[rp0] != 0x007f {
		t.Errorf("root port: %#04x, want 0x007f", got[rp0])
	}
}

// TestACSFindings: what cannot be done is a finding at the spec line and
// nothing changes: a bit the bridge's ACS Capability lacks (0x0080, one
// past the capability's 0x007f), a bridge off the device's paths, a
// bridge without ACS (a switch's upstream port), and peer_to_peer on a node whose GPU is
// on another host bridge (Grace: NODE).
func TestACSFindings(t *testing.T) {
	dir := simtest.Dir(t, "gpu-switch", nil)
	before := controls(t, dir)
	explicit := func(pci, bridge, v string) string {
		return "  - pci: \"" + pci + "\"\n    acs:\n      bridges:\n        - {pci: \"" + bridge + "\", control: " + v + "}\n"
	}
	for _, c := range []struct {
		name string
		devs []string
		want string
	}{
		{"bit the bridge lacks", []string{explicit(nic0, dsp0, "0x00ff")}, "$.devices[0].acs.bridges[0].control: 0x00ff (SrcValid TransBlk ReqRedir CmpltRedir UpstreamFwd EgressCtrl DirectTrans 0x0080) sets bits bridge 0000:17:00.0 lacks: its ACS Capability is 0x007f"},
		{"off the paths", []string{explicit(nic0, dsp1, "0")}, "$.devices[0].acs.bridges[0].pci: 0000:3f:00.0 is no bridge above 0000:18:00.0 or between it and a GPU below its host bridge (those are: 0000:15:01.0 0000:16:00.0 0000:17:00.0 0000:17:01.0)"},
		{"no ACS", []string{explicit(nic0, usp0, "0")}, "$.devices[0].acs.bridges[0].pci: bridge 0000:16:00.0 has no ACS capability"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", acsSpec(t, "", c.devs...))
			if c.want != "" && !strings.Contains(out, c.want) {
				t.Errorf("want %q:\n%s", c.want, out)
			}
		})
	}
	if got := controls(t, dir); len(got) != len(before) {
		t.Fatalf("bridges changed: %v", got)
	}

	grace := simtest.Dir(t, "gpu-grace", nil)
	out := clitest.MustRun(t, 1, "--sim", grace, "plan", "-f", acsSpec(t, "", p2p("0000:01:00.0")))
	if !strings.Contains(out, "$.devices[0].acs.peer_to_peer: no GPU below the host bridge of 0000:01:00.0 (0009:01:00.0 NODE)") {
		t.Errorf("Grace:\n%s", out)
	}
}

// TestACSReadBack: a write the bridge does not keep (the simulator drops
// it) fails apply naming the value read back; the plan still shows the
// change.
func TestACSReadBack(t *testing.T) {
	dir := simtest.Dir(t, "gpu-switch", nil)
	clitest.MustRun(t, 0, "sim", "fault", dir, "--write", "/sys/bus/pci/devices/"+dsp0+"/config", "--drop")
	spec := acsSpec(t, "", p2p(nic0))
	out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "-f", spec)
	if !strings.Contains(out, "bridge 0000:17:00.0: ACS Control reads 0x001d (SrcValid ReqRedir CmpltRedir UpstreamFwd) after writing 0x0011 (SrcValid UpstreamFwd) (at 0x14e)") {
		t.Errorf("apply does not name the value kept:\n%s", out)
	}
	clitest.MustRun(t, 2, "--sim", dir, "plan", "-f", spec)
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

// TestACSAudit: after apply the audit is clean; a write behind
// rdmaform's back (setpci -s 17:00.0 ECAP_ACS+6.w=001d) is drift on that
// bridge, and apply mends it.
func TestACSAudit(t *testing.T) {
	dir := simtest.Dir(t, "gpu-switch", nil)
	spec := acsSpec(t, "", p2p(nic0))
	clitest.Converge(t, dir, spec)
	clitest.MustRun(t, 0, "--sim", dir, "audit", "-f", spec)
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Host()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.WriteAttrAt(h.FS, "/sys/bus/pci/devices/"+dsp0+"/config", []byte{0x1d, 0x00}, 0x14e); err != nil {
		t.Fatal(err)
	}
	out := clitest.MustRun(t, 2, "--sim", dir, "audit", "-f", spec)
	if !strings.Contains(out, "acs["+dsp0+"]") || strings.Contains(out, "acs["+gsp0+"]") {
		t.Errorf("audit does not report the drift on %s alone:\n%s", dsp0, out)
	}
	clitest.MustRun(t, 0, "--sim", dir, "apply", "--yes", "-f", spec)
	clitest.MustRun(t, 0, "--sim", dir, "audit", "-f", spec)
}

// TestACSShow: show captures peer_to_peer on the devices whose paths are
// open and on no other (a fresh host has ACS on everywhere), and the
// capture plans nothing.
func TestACSShow(t *testing.T) {
	dir := simtest.Dir(t, "gpu-switch", nil)
	if out := clitest.MustRun(t, 0, "--sim", dir, "show"); strings.Contains(out, "acs:") {
		t.Errorf("show on a fresh host captures acs:\n%s", out)
	}
	clitest.Converge(t, dir, acsSpec(t, "", p2p(nic1)))
	out := clitest.MustRun(t, 0, "--sim", dir, "show")
	if strings.Count(out, "peer_to_peer: true") != 1 || !strings.Contains(out, "- pci: \""+nic1+"\" # mlx5_3") {
		t.Fatalf("show does not capture peer_to_peer on %s alone:\n%s", nic1, out)
	}
	if i, j := strings.Index(out, nic1), strings.Index(out, "peer_to_peer"); j < i || strings.Contains(out[i:j], "- pci:") {
		t.Errorf("peer_to_peer is not %s's:\n%s", nic1, out)
	}
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", clitest.WriteSpec(t, out))
}

// TestACSOnAnyFunction: acs may name a PCI function that is no RDMA
// device (a GPU here; the virtio NIC under Soft-RoCE in the kernel lab):
// its bridges come from its sysfs link, an explicit value on one
// converges and rolls back; peer_to_peer on GPU 0 finds no other GPU
// below its host bridge (itself is not one); a function that is not
// there is a finding, not a write.
func TestACSOnAnyFunction(t *testing.T) {
	dir := simtest.Dir(t, "gpu-switch", nil)
	gpu0 := "0000:19:00.0"
	spec := acsSpec(t, "", "  - pci: \""+gpu0+"\"\n    acs:\n      bridges:\n        - {pci: \""+gsp0+"\", control: 0x0011}\n")
	out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "--confirm-timeout", "1s", "-f", spec)
	if !strings.Contains(out, "acs["+gsp0+"]") || !strings.Contains(out, "Reverted") {
		t.Fatalf("unconfirmed apply:\n%s", out)
	}
	if got := controls(t, dir)[gsp0]; got != boot {
		t.Errorf("after the rollback: %#04x", got)
	}
	clitest.Converge(t, dir, spec)
	if got := controls(t, dir)[gsp0]; got != 0x0011 {
		t.Errorf("after apply: %#04x", got)
	}
	out = clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", acsSpec(t, "", p2p(gpu0), p2p("0000:99:09.0")))
	for _, want := range []string{
		"$.devices[0].acs.peer_to_peer: no GPU below the host bridge of 0000:19:00.0 (0000:41:00.0 NODE, ",
		"$.devices[1].acs: no PCI function 0000:99:09.0 in /sys/bus/pci/devices",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q:\n%s", want, out)
		}
	}
}
