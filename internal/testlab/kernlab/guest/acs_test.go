//go:build kernlab

package guest

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The ACS extended capability of QEMU 7.2's pcie-root-port, where QEMU
// puts it (hw/pci-bridge/gen_pcie_root_port.c: GEN_PCIE_ROOT_PORT_ACS_OFFSET
// = PCI_CONFIG_SPACE_SIZE + PCI_ERR_SIZEOF = 0x148, after AER) and what
// it holds (hw/pci/pcie.c pcie_acs_init: Capability SV TB RR CR UF DT =
// 0x005f, Control writable in exactly those bits, 0 after reset). The
// test reads the raw bytes there itself, not through rdmaform's walk.
// With an IOMMU (run.sh: intel-iommu, intel_iommu=on) the kernel asks
// for ACS and enables Source Validation, P2P Request Redirect, P2P
// Completion Redirect and Upstream Forwarding on every port that has
// them (drivers/pci/pci.c pci_std_enable_acs): 0x001d.
const (
	qemuACSOff  = 0x148
	qemuACSBits = 0x005f
	kernelACS   = 0x001d
)

// acsBridge returns the PCI address of the bridge above the lab's
// virtio NIC (run.sh's root port krp1) and that function's address.
func acsBridge(t *testing.T) (bridge, pci string) {
	t.Helper()
	_, pci = virtioNetdev(t)
	dev, err := filepath.EvalSymlinks("/sys/bus/pci/devices/" + pci)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Base(filepath.Dir(dev)), pci
}

// acsControl reads the root port's whole config space (4096 bytes as
// root) and returns it and its ACS Control word.
func acsControl(t *testing.T, bridge string) ([]byte, uint16) {
	t.Helper()
	b := []byte(readFile(t, "/sys/bus/pci/devices/"+bridge+"/config"))
	if len(b) != 4096 {
		t.Fatalf("%s: config space of %d bytes, want 4096", bridge, len(b))
	}
	if id := binary.LittleEndian.Uint16(b[qemuACSOff:]); id != 0x000d {
		t.Fatalf("%s: extended capability %#04x at %#x, want ACS (0x000d) as QEMU 7.2 places it", bridge, id, qemuACSOff)
	}
	if c := binary.LittleEndian.Uint16(b[qemuACSOff+4:]); c != qemuACSBits {
		t.Fatalf("%s: ACS Capability %#04x, want %#04x", bridge, c, qemuACSBits)
	}
	return b, binary.LittleEndian.Uint16(b[qemuACSOff+6:])
}

// sameBut fails the test when two config spaces differ anywhere but in
// the ACS Control word.
func sameBut(t *testing.T, what string, a, b []byte) {
	t.Helper()
	var diff []string
	for i := range a {
		if a[i] != b[i] && i != qemuACSOff+6 && i != qemuACSOff+7 {
			diff = append(diff, fmt.Sprintf("%#x: %#02x -> %#02x", i, a[i], b[i]))
		}
	}
	if len(diff) > 0 {
		t.Errorf("%s: the config space changed outside ACS Control: %s", what, strings.Join(diff, ", "))
	}
}

// TestACSOnRealKernel: an explicit ACS Control value on the real root
// port above the lab's virtio NIC (the kernel set 0x001d at boot, as it
// does with an IOMMU): rdmaform walks the real config space, plans the
// change, an unconfirmed apply is rolled back to the value read, apply
// writes the word in place and the read-back is the value asked; no
// other byte of the 4096 changes; the plan after it is empty and audit
// finds a hand change. The whole capability (0x005f) converges, a bit
// the root port lacks (0x0080, DirectTrans's neighbour) is refused at the
// spec line with nothing written; 0 puts the kernel's value back.
func TestACSOnRealKernel(t *testing.T) {
	rp, pci := acsBridge(t)
	before, ctl := acsControl(t, rp)
	if ctl != kernelACS {
		t.Fatalf("%s: ACS Control %#04x at the start, want the kernel's %#04x (intel_iommu=on)", rp, ctl, kernelACS)
	}
	spec := func(v string) string {
		return writeSpec(t, "version: 1\ndevices:\n  - pci: \""+pci+"\"\n    acs:\n      bridges:\n        - {pci: \""+rp+"\", control: "+v+"}\n")
	}
	out, _ := mustCode(t, 2, "plan", "-f", spec("0x0011"))
	if !strings.Contains(out, "acs["+rp+"]") || !strings.Contains(out, "0x001d (SrcValid ReqRedir CmpltRedir UpstreamFwd) -> 0x0011 (SrcValid UpstreamFwd)") {
		t.Errorf("plan:\n%s", out)
	}

	// Not confirmed: the old value comes back.
	code, out, errs := rdmaform(t, "apply", "--yes", "--confirm-timeout", "1s", "-f", spec("0x0011"))
	if code != 1 || !strings.Contains(out+errs, "Reverted") {
		t.Fatalf("unconfirmed apply: exit %d, want 1 and a rollback\n%s%s", code, out, errs)
	}
	if after, c := acsControl(t, rp); c != kernelACS {
		t.Errorf("after the rollback: ACS Control %#04x, want %#04x back", c, kernelACS)
	} else {
		sameBut(t, "after the rollback", before, after)
	}

	converge(t, spec("0x0011"))
	after, c := acsControl(t, rp)
	if c != 0x0011 {
		t.Errorf("after apply: ACS Control %#04x, want 0x0011", c)
	}
	sameBut(t, "after apply", before, after)
	mustCode(t, 0, "audit", "-f", spec("0x0011"))

	// A hand change (setpci ECAP_ACS+6.w=0040) is drift.
	f, err := os.OpenFile("/sys/bus/pci/devices/"+rp+"/config", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0x40, 0}, qemuACSOff+6); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	out, _ = mustCode(t, 2, "audit", "-f", spec("0x0011"))
	if !strings.Contains(out, "acs["+rp+"]") {
		t.Errorf("audit after a hand change does not name acs[%s]:\n%s", rp, out)
	}
	out, _ = mustCode(t, 2, "plan", "-f", spec("0x0011"))
	if !strings.Contains(out, "0x0040 (DirectTrans) -> 0x0011 (SrcValid UpstreamFwd)") {
		t.Errorf("plan after the hand change:\n%s", out)
	}

	// The limit: the root port's whole capability; one past: a bit it lacks.
	converge(t, spec("0x005f"))
	if _, c := acsControl(t, rp); c != qemuACSBits {
		t.Errorf("after apply of 0x005f: %#04x", c)
	}
	out, _ = mustCode(t, 1, "apply", "--yes", "-f", spec("0x00df"))
	if !strings.Contains(out, "devices[0].acs.bridges[0].control: 0x00df") || !strings.Contains(out, "bridge "+rp+" lacks") {
		t.Errorf("apply of a bit the root port lacks:\n%s", out)
	}
	if _, c := acsControl(t, rp); c != qemuACSBits {
		t.Errorf("a refused spec changed ACS Control: %#04x", c)
	}

	// 0, then the kernel's value back.
	converge(t, spec("0"))
	if _, c := acsControl(t, rp); c != 0 {
		t.Errorf("after apply of 0: %#04x", c)
	}
	converge(t, spec("0x001d"))
	end, c := acsControl(t, rp)
	if c != kernelACS {
		t.Errorf("at the end: %#04x", c)
	}
	sameBut(t, "at the end", before, end)
}

// gpuPort finds the lab's "GPU" (run.sh: QEMU's ati-vga, vendor 0x1002
// class 0x0300, which rdmaform's inventory counts as a GPU) and the root
// port above it (krp3).
func gpuPort(t *testing.T) (gpu, port string) {
	t.Helper()
	ents, _ := os.ReadDir("/sys/bus/pci/devices")
	for _, e := range ents {
		d := "/sys/bus/pci/devices/" + e.Name()
		if strings.TrimSpace(readFile(t, d+"/vendor")) != "0x1002" || !strings.HasPrefix(strings.TrimSpace(readFile(t, d+"/class")), "0x0300") {
			continue
		}
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			t.Fatal(err)
		}
		return e.Name(), filepath.Base(filepath.Dir(real))
	}
	t.Fatal("no AMD VGA function (is run.sh's ati-vga missing?)")
	return "", ""
}

// TestACSPeerToPeerOnRealKernel: acs.peer_to_peer on the lab's virtio
// NIC, whose "GPU" (ati-vga) sits below another root port of the same
// host bridge (PHB): on both real root ports, where the kernel set
// 0x001d, P2P Request Redirect and Completion Redirect go off and
// Source Validation and Upstream Forwarding stay (0x0011); an unconfirmed
// apply puts 0x001d back on both; apply, read-back, no other byte
// changed, plan empty, audit clean; explicit values give the kernel's
// 0x001d back.
func TestACSPeerToPeerOnRealKernel(t *testing.T) {
	rp, pci := acsBridge(t)
	gpu, gp := gpuPort(t)
	if gp == rp {
		t.Fatalf("the GPU %s and the NIC %s share root port %s", gpu, pci, rp)
	}
	beforeNIC, c1 := acsControl(t, rp)
	beforeGPU, c2 := acsControl(t, gp)
	if c1 != kernelACS || c2 != kernelACS {
		t.Fatalf("ACS Control at the start: %s %#04x, %s %#04x; want the kernel's %#04x", rp, c1, gp, c2, kernelACS)
	}
	spec := writeSpec(t, "version: 1\ndevices:\n  - pci: \""+pci+"\"\n    acs: {peer_to_peer: true}\n")
	out, _ := mustCode(t, 2, "plan", "-f", spec)
	for _, b := range []string{rp, gp} {
		if !strings.Contains(out, "~ acs["+b+"]") {
			t.Errorf("plan does not change %s:\n%s", b, out)
		}
	}
	if strings.Count(out, "acs_control: 0x001d (SrcValid ReqRedir CmpltRedir UpstreamFwd) -> 0x0011 (SrcValid UpstreamFwd)") != 2 {
		t.Errorf("plan:\n%s", out)
	}
	code, out, errs := rdmaform(t, "apply", "--yes", "--confirm-timeout", "1s", "-f", spec)
	if code != 1 || !strings.Contains(out+errs, "Reverted") {
		t.Fatalf("unconfirmed apply: exit %d, want 1 and a rollback\n%s%s", code, out, errs)
	}
	for _, b := range []string{rp, gp} {
		if _, c := acsControl(t, b); c != kernelACS {
			t.Errorf("%s after the rollback: %#04x, want %#04x", b, c, kernelACS)
		}
	}
	converge(t, spec)
	for b, before := range map[string][]byte{rp: beforeNIC, gp: beforeGPU} {
		after, c := acsControl(t, b)
		if c != 0x0011 {
			t.Errorf("%s after apply: %#04x, want 0x0011 (SrcValid UpstreamFwd kept)", b, c)
		}
		sameBut(t, b+" after apply", before, after)
	}
	mustCode(t, 0, "audit", "-f", spec)
	converge(t, writeSpec(t, "version: 1\ndevices:\n  - pci: \""+pci+"\"\n    acs:\n      bridges:\n        - {pci: \""+rp+"\", control: 0x001d}\n        - {pci: \""+gp+"\", control: 0x001d}\n"))
	for _, b := range []string{rp, gp} {
		if _, c := acsControl(t, b); c != kernelACS {
			t.Errorf("%s at the end: %#04x", b, c)
		}
	}
}
