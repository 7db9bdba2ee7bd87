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
const (
	qemuACSOff  = 0x148
	qemuACSBits = 0x005f
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
// port above the lab's virtio NIC (no IOMMU in the guest, so the kernel
// leaves Control at 0): rdmaform walks the real config space, plans the
// change, an unconfirmed apply is rolled back to the value read, apply
// writes the word in place and the read-back is the value asked; no
// other byte of the 4096 changes; the plan after it is empty and audit
// finds a hand change. The whole capability (0x005f) converges, a bit
// the root port lacks (0x0080, DirectTrans's neighbour) is refused at the
// spec line with nothing written; 0 puts the kernel's value back.
func TestACSOnRealKernel(t *testing.T) {
	rp, pci := acsBridge(t)
	before, ctl := acsControl(t, rp)
	if ctl != 0 {
		t.Fatalf("%s: ACS Control %#04x at the start, want the kernel's 0 (no IOMMU)", rp, ctl)
	}
	spec := func(v string) string {
		return writeSpec(t, "version: 1\ndevices:\n  - pci: \""+pci+"\"\n    acs:\n      bridges:\n        - {pci: \""+rp+"\", control: "+v+"}\n")
	}
	out, _ := mustCode(t, 2, "plan", "-f", spec("0x0011"))
	if !strings.Contains(out, "acs["+rp+"]") || !strings.Contains(out, "0x0000 (none) -> 0x0011 (SrcValid UpstreamFwd)") {
		t.Errorf("plan:\n%s", out)
	}

	// Not confirmed: the old value comes back.
	code, out, errs := rdmaform(t, "apply", "--yes", "--confirm-timeout", "1s", "-f", spec("0x0011"))
	if code != 1 || !strings.Contains(out+errs, "Reverted") {
		t.Fatalf("unconfirmed apply: exit %d, want 1 and a rollback\n%s%s", code, out, errs)
	}
	if after, c := acsControl(t, rp); c != 0 {
		t.Errorf("after the rollback: ACS Control %#04x, want 0 back", c)
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

	// Back to the kernel's value.
	converge(t, spec("0"))
	end, c := acsControl(t, rp)
	if c != 0 {
		t.Errorf("at the end: %#04x", c)
	}
	sameBut(t, "at the end", before, end)
}
