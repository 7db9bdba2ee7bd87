package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMlx4PortSwitchResetsTheCard: on a ConnectX-3, a port type that
// changes re-registers the whole card (mlx4_change_port_types unregisters
// and registers every mlx4 interface), so the other port's netdev comes
// back with the driver's MTU and no addresses, and its rdma_cm defaults
// are the kernel's again. One apply that switches port 1 sets port 2's
// interface and RoCE settings again after the switch, and the plan after
// it is empty.
func TestMlx4PortSwitchResetsTheCard(t *testing.T) {
	dir, _, spec := bothEthHost(t)
	code, out := rdmaform(t, "--sim", dir, "plan", "-f", spec)
	if code != 2 {
		t.Fatalf("plan: exit %d\n%s", code, out)
	}
	for _, want := range []string{
		"~ mlx4_port[0000:81:00.0/1]",
		"~ interface[ens2d1]", "(after mlx4_port[0000:81:00.0/1])",
		"+ rdma_cm[mlx4_0/2]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	converge(t, dir, spec, nil)
}

// TestMlx4PortSwitchReverts: an unconfirmed apply of such a switch puts
// the card back as it was: the port type, and then (the revert registers
// the card anew once more) port 2's interface and RoCE values.
func TestMlx4PortSwitchReverts(t *testing.T) {
	dir, before, spec := bothEthHost(t)
	code, out := rdmaform(t, "--sim", dir, "apply", "--yes", "--confirm-timeout", "1s", "-f", spec)
	if code != 1 || !strings.Contains(out, "Reverted 3 changes") {
		t.Fatalf("unconfirmed apply: exit %d, want 1 and three changes reverted\n%s", code, out)
	}
	if code, out := rdmaform(t, "--sim", dir, "plan", "-f", before); code != 0 {
		t.Errorf("the card after the revert differs from before the apply: exit %d\n%s", code, out)
	}
}

// bothEthHost is a simulated ConnectX-3 host with bothEth applied, and the
// files of bothEth and of port1IB (port 1 back to InfiniBand, port 2
// keeping its settings).
func bothEthHost(t *testing.T) (dir, before, switched string) {
	t.Helper()
	dir = copyHost(t, "examples/hosts/cx3-mlx4", t.TempDir())
	before, switched = filepath.Join(t.TempDir(), "before.yaml"), filepath.Join(t.TempDir(), "switched.yaml")
	for f, text := range map[string]string{before: bothEth, switched: port1IB} {
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	converge(t, dir, before, nil)
	return dir, before, switched
}

// bothEth puts both ports of the ConnectX-3 on Ethernet, with port 2's
// interface and RoCE values; port1IB is the same with port 1 back on
// InfiniBand.
const bothEth = `version: 1
devices:
  - pci: "0000:81:00.0"
    ports:
      - {port: 1, type: eth}
      - {port: 2, type: eth, roce: {mode: v1, tos: 106}}
interfaces:
  - {name: ens2d1, mtu: 9000, addresses: [192.0.2.12/24]}
modules: [rdma_cm]
`

var port1IB = strings.Replace(bothEth, "{port: 1, type: eth}", "{port: 1, type: ib}", 1)
