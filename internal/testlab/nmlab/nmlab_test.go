package nmlab_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/internal/testlab/nmlab"
)

func TestLabRunsPrivateNetworkManager(t *testing.T) {
	lab := nmlab.Start(t, nmlab.WithVeth())

	r := lab.Nmcli("-t", "-f", "RUNNING", "general")
	if r.Exit != 0 || strings.TrimSpace(string(r.Stdout)) != "running" {
		t.Fatalf("nmcli general: exit %d stdout %q stderr %q", r.Exit, r.Stdout, r.Stderr)
	}
	if !strings.HasPrefix(lab.Netns(), "rdmaform-nm-") {
		t.Errorf("Netns() = %q, want rdmaform-nm-*", lab.Netns())
	}
	if _, err := os.Stat(filepath.Join("/run/netns", lab.Netns())); err != nil {
		t.Errorf("namespace missing: %v", err)
	}

	// The veth pair exists only inside the lab's namespace and is managed.
	a, b := lab.Veth()
	r = lab.Nmcli("-t", "-f", "DEVICE,STATE", "device")
	out := string(r.Stdout)
	for _, want := range []string{a + ":disconnected", b + ":disconnected", "lo:unmanaged"} {
		if !strings.Contains(out, want) {
			t.Errorf("nmcli device: missing %q in\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join("/sys/class/net", a)); err == nil {
		t.Errorf("%s visible in the root namespace", a)
	}

	// An ethernet profile on the veth activates for real and its keyfile
	// lands in the lab's directory, not /etc.
	r = lab.Nmcli("connection", "add", "type", "ethernet", "con-name", "lab-eth", "ifname", a,
		"ipv4.method", "manual", "ipv4.addresses", "198.51.100.1/24", "ipv6.method", "disabled")
	if r.Exit != 0 {
		t.Fatalf("add: exit %d: %s", r.Exit, r.Stderr)
	}
	if _, err := os.Stat(filepath.Join(lab.KeyfileDir(), "lab-eth.nmconnection")); err != nil {
		t.Errorf("keyfile: %v", err)
	}
	r = lab.Nmcli("connection", "up", "id", "lab-eth")
	if r.Exit != 0 {
		t.Fatalf("up: exit %d: %s", r.Exit, r.Stderr)
	}
	ip, err := lab.Run(t.Context(), []string{"ip", "-o", "-4", "addr", "show", "dev", a})
	if err != nil || !strings.Contains(string(ip.Stdout), "198.51.100.1/24") {
		t.Errorf("address not applied in the lab namespace: %v %s %s", err, ip.Stdout, ip.Stderr)
	}
}

func TestLabEnvPointsAtPrivateBus(t *testing.T) {
	lab := nmlab.Start(t)
	var bus string
	for _, kv := range lab.Env() {
		if v, ok := strings.CutPrefix(kv, "DBUS_SYSTEM_BUS_ADDRESS="); ok {
			if bus != "" {
				t.Errorf("DBUS_SYSTEM_BUS_ADDRESS twice")
			}
			bus = v
		}
	}
	if !strings.HasPrefix(bus, "unix:path="+lab.Dir()) {
		t.Errorf("bus address %q not in lab dir %q", bus, lab.Dir())
	}
}
