package netdev_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/sim"
)

func rf(t *testing.T, args ...string) (int, string) {
	t.Helper()
	code, out, errs := clitest.Run(t, args...)
	return code, out + errs
}

// TestSimScenario drives interfaces on a simulated VM through the CLI:
// MTU and addresses (the DHCP lease and the link-local address stay), then
// down with addresses: [] ; each step ends with "apply, then plan is empty".
func TestSimScenario(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "host")
	if code, out := rf(t, "sim", "new", dir, "--profile", "vm-soft"); code != 0 {
		t.Fatal(out)
	}
	steps := []struct {
		name   string
		spec   string
		plan   []string
		up     bool
		mtu    int
		static []string
	}{{
		name: "mtu and addresses",
		spec: "version: 1\ninterfaces:\n  - name: enp1s0\n    state: up\n    mtu: 9000\n    addresses: [192.168.21.1/24, \"2001:db8:21::1/64\"]\n",
		plan: []string{"~ interface[enp1s0]", "mtu: 1500 -> 9000", "addresses: 192.168.21.1/24, 2001:db8:21::1/64"},
		up:   true, mtu: 9000, static: []string{"192.168.21.1/24", "2001:db8:21::1/64"},
	}, {
		name: "replace one address",
		spec: "version: 1\ninterfaces:\n  - name: enp1s0\n    addresses: [192.168.21.2/24, \"2001:db8:21::1/64\"]\n",
		plan: []string{"~ interface[enp1s0]", "addresses: 192.168.21.1/24, 2001:db8:21::1/64 -> 192.168.21.2/24, 2001:db8:21::1/64"},
		up:   true, mtu: 9000, static: []string{"192.168.21.2/24", "2001:db8:21::1/64"},
	}, {
		name: "down, no static addresses",
		spec: "version: 1\ninterfaces:\n  - name: enp1s0\n    state: down\n    addresses: []\n",
		plan: []string{"~ interface[enp1s0]", "state: up -> down", "addresses: 192.168.21.2/24, 2001:db8:21::1/64 -> (none)"},
		up:   false, mtu: 9000,
	}}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "host.yaml")
			if err := os.WriteFile(f, []byte(st.spec), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out := rf(t, "--sim", dir, "plan", "-f", f)
			if code != 2 {
				t.Fatalf("plan: exit %d, want 2\n%s", code, out)
			}
			for _, want := range st.plan {
				if !strings.Contains(out, want) {
					t.Errorf("plan lacks %q:\n%s", want, out)
				}
			}
			// enp1s0 carries the VM's default route: replacing its address
			// or taking it down needs --allow-mgmt (cli mgmt_guard.txtar).
			if code, out := rf(t, "--sim", dir, "apply", "-f", f, "--yes", "--allow-mgmt"); code != 0 {
				t.Fatalf("apply: exit %d\n%s", code, out)
			}
			if code, out := rf(t, "--sim", dir, "plan", "-f", f); code != 0 {
				t.Fatalf("plan after apply: exit %d, want 0\n%s", code, out)
			}
			s, err := sim.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			nd := s.State().Netdev("enp1s0")
			static := append([]string(nil), nd.Addrs...)
			sort.Strings(static)
			type view struct {
				Up     bool
				MTU    int
				Static []string
				Dyn    []string
			}
			want := view{Up: st.up, MTU: st.mtu, Static: st.static, Dyn: []string{"192.168.122.50/24", "fe80::5054:ff:fe12:3456/64"}}
			if d := cmp.Diff(want, view{nd.Up, nd.MTU, static, nd.DynAddrs}); d != "" {
				t.Errorf("enp1s0 (-want +got):\n%s", d)
			}
		})
	}
}
