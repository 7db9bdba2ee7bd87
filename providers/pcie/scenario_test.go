package pcie_test

import (
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

const cx5 = "0000:5e:00.0"

func mrrsSpec(t *testing.T, pci, v string, extra ...string) string {
	t.Helper()
	return clitest.WriteSpec(t, "version: 1\n"+strings.Join(extra, "")+"devices:\n  - pci: \""+pci+"\"\n    pcie: {max_read_request: "+v+"}\n")
}

// mrrs reads a function's emulated Max Read Request Size from sim.yaml.
func mrrs(t *testing.T, dir, pci string) int {
	t.Helper()
	d := simtest.State(t, dir).DeviceByPCI(pci)
	if d == nil {
		t.Fatalf("no device %s", pci)
	}
	if d.MaxReadReq == 0 {
		return 512 // the firmware's value at boot
	}
	return d.MaxReadReq
}

// TestMaxReadRequest: the size changes in the function's config space
// (Device Control, written in place and read back) and the next plan is
// empty; both ends of the range converge, one past each end and a size
// that is not a power of two are refused at the spec line with nothing
// changed; the other function keeps its value.
func TestMaxReadRequest(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	out := clitest.Converge(t, dir, mrrsSpec(t, cx5, "4096"))
	if !strings.Contains(out, "~ pcie[0000:5e:00.0]") || !strings.Contains(out, "max_read_request: 512 -> 4096") {
		t.Errorf("plan:\n%s", out)
	}
	if got := mrrs(t, dir, cx5); got != 4096 {
		t.Errorf("after apply: %d", got)
	}
	if got := mrrs(t, dir, "0000:5e:00.1"); got != 512 {
		t.Errorf("the other function changed: %d", got)
	}
	clitest.Converge(t, dir, mrrsSpec(t, cx5, "128"))
	for _, c := range []struct{ v, want string }{
		{"8192", "8192 is not a Max Read Request Size: 128, 256, 512, 1024, 2048 or 4096 bytes"},
		{"64", "64 is not a Max Read Request Size"},
		{"1000", "1000 is not a Max Read Request Size"},
		{"0", "0 is not a Max Read Request Size"},
	} {
		out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "-f", mrrsSpec(t, cx5, c.v))
		if !strings.Contains(out, "$.devices[0].pcie.max_read_request: "+c.want) {
			t.Errorf("%s: want %q:\n%s", c.v, c.want, out)
		}
	}
	if got := mrrs(t, dir, cx5); got != 128 {
		t.Errorf("a refused spec changed the function: %d", got)
	}
}

// TestMaxReadRequestFindings: a PCI address with no function there, and
// a Soft-RoCE device (no PCI function), are findings at the spec line.
func TestMaxReadRequestFindings(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	out := clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", mrrsSpec(t, "0000:99:00.0", "512"))
	if !strings.Contains(out, "$.devices[0].pcie: reading the PCI Express capability of 0000:99:00.0") {
		t.Errorf("no finding for a missing function:\n%s", out)
	}
	spec := clitest.WriteSpec(t, "version: 1\nmodules: [rdma_rxe]\nrxe:\n  - {name: rxe0, netdev: ens1f0np0}\ndevices:\n  - name: rxe0\n    pcie: {max_read_request: 512}\n")
	clitest.MustRun(t, 0, "--sim", dir, "apply", "--yes", "-f", clitest.WriteSpec(t, "version: 1\nmodules: [rdma_rxe]\nrxe:\n  - {name: rxe0, netdev: ens1f0np0}\n"))
	if out := clitest.MustRun(t, 1, "--sim", dir, "plan", "-f", spec); !strings.Contains(out, "rxe0 has no PCI function (a Soft-RoCE device?): pcie needs one") {
		t.Errorf("no finding for a device without PCI:\n%s", out)
	}
}

// TestMaxReadRequestRevertShowAuditBoot: an unconfirmed apply puts the
// size back; show captures it for every function and the capture plans
// empty; a change behind rdmaform's back is drift; after a reboot (the
// firmware's 512) the boot unit sets it again.
func TestMaxReadRequestRevertShowAuditBoot(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "--confirm-timeout", "1s", "-f", mrrsSpec(t, cx5, "1024"))
	if !strings.Contains(out, "pcie[0000:5e:00.0]") || !strings.Contains(out, "Reverted") {
		t.Fatalf("unconfirmed apply:\n%s", out)
	}
	if got := mrrs(t, dir, cx5); got != 512 {
		t.Errorf("after the rollback: %d, want 512 back", got)
	}
	boot := mrrsSpec(t, cx5, "1024", "persistence: boot-unit\n")
	clitest.Converge(t, dir, boot)
	capture := clitest.MustRun(t, 0, "--sim", dir, "show")
	if strings.Count(capture, "max_read_request:") != 2 {
		t.Fatalf("show does not capture both functions' size:\n%s", capture)
	}
	clitest.MustRun(t, 0, "--sim", dir, "plan", "-f", clitest.WriteSpec(t, capture))
	clitest.MustRun(t, 0, "--sim", dir, "audit", "-f", boot)
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Host()
	if err != nil {
		t.Fatal(err)
	}
	// setpci -s 5e:00.0 CAP_EXP+8.w=2000:7000, as an operator would.
	if err := hostWrite(h, "/sys/bus/pci/devices/"+cx5+"/config", []byte{0x10, 0x28}, 0x68); err != nil {
		t.Fatal(err)
	}
	if out := clitest.MustRun(t, 2, "--sim", dir, "audit", "-f", boot); !strings.Contains(out, "pcie[0000:5e:00.0]") {
		t.Errorf("audit does not report the drift:\n%s", out)
	}
	clitest.MustRun(t, 0, "--sim", dir, "apply", "--yes", "-f", boot)
	clitest.MustRun(t, 0, "sim", "reboot", dir, "--no-boot-unit")
	if got := mrrs(t, dir, cx5); got != 512 {
		t.Errorf("after the reboot: %d, want the firmware's 512", got)
	}
	bootUnit(t, dir)
	if got := mrrs(t, dir, cx5); got != 1024 {
		t.Errorf("after the boot unit: %d", got)
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

func hostWrite(h *host.Host, name string, data []byte, off int64) error {
	return host.WriteAttrAt(h.FS, name, data, off)
}

// TestMaxReadRequestReadBack: a write the device does not keep (the
// simulator drops it, as QEMU's read-only field does on the real kernel)
// fails apply naming the value read back, and the plan still shows the
// change.
func TestMaxReadRequestReadBack(t *testing.T) {
	dir := simtest.Dir(t, "cx5-roce", nil)
	clitest.MustRun(t, 0, "sim", "fault", dir, "--write", "/sys/bus/pci/devices/"+cx5+"/config", "--drop")
	spec := mrrsSpec(t, cx5, "2048")
	out := clitest.MustRun(t, 1, "--sim", dir, "apply", "--yes", "-f", spec)
	if !strings.Contains(out, cx5+": Max Read Request Size reads 512 after writing 2048") {
		t.Errorf("apply does not name the value kept:\n%s", out)
	}
	clitest.MustRun(t, 2, "--sim", dir, "plan", "-f", spec)
}
