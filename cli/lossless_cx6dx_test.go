package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/sim"
)

// TestLosslessRoCEOnCX6Dx: the simulated host examples/hosts/cx6dx-ofed is
// a ConnectX-6 Dx (PCI id 0x101d, as its sysfs says), and the
// lossless RoCE settings of docs/guides/lossless-roce.md plan and apply
// on it: examples/lossless-roce.yaml
// with the CNP marking and the firmware's DCBX willingness under
// firmware: params (CNP_DSCP_P1, CNP_802P_PRIO_P1, DCBX_WILLING_P1), which
// the host used to refuse as unknown parameters. After the reboot the
// firmware asks for and a second apply, the plan is empty.
func TestLosslessRoCEOnCX6Dx(t *testing.T) {
	dir := copyHost(t, "examples/hosts/cx6dx-ofed", t.TempDir())
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range s.State().Firmware {
		if a.DeviceType != "ConnectX6DX" || a.PCIDeviceID != 0x101d {
			t.Errorf("%s: the firmware tool says %s (PCI id %#x), want ConnectX6DX (0x101d)", a.BDF, a.DeviceType, a.PCIDeviceID)
		}
	}
	b, err := os.ReadFile("../examples/lossless-roce.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const dev = "  - pci: \"0000:af:00.0\"\n"
	if !strings.Contains(string(b), dev) {
		t.Fatalf("examples/lossless-roce.yaml has no %q", dev)
	}
	spec := filepath.Join(t.TempDir(), "lossless.yaml")
	fw := dev + "    firmware:\n      params:\n        CNP_DSCP_P1: 48\n        CNP_802P_PRIO_P1: 6\n        DCBX_WILLING_P1: false\n"
	if err := os.WriteFile(spec, []byte(strings.Replace(string(b), dev, fw, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := rdmaform(t, "--sim", dir, "plan", "-f", spec)
	if code != 2 || !strings.Contains(out, "DCBX_WILLING_P1: true -> false") || !strings.Contains(out, "qos[mlx5_0/1]") {
		t.Fatalf("plan: exit %d, want 2 with DCBX_WILLING_P1 and the port's QoS\n%s", code, out)
	}
	if strings.Contains(out, "CNP_") {
		t.Errorf("plan changes a CNP parameter, which is at the spec's value (48, 6) from the factory:\n%s", out)
	}
	converge(t, dir, spec, nil)
}
