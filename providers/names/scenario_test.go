package names_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmaform/rdmaform/cli/clitest"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

func rf(t *testing.T, args ...string) (int, string) {
	t.Helper()
	code, out, errs := clitest.Run(t, args...)
	return code, out + errs
}

func want(t *testing.T, code, wantCode int, out string, contains ...string) {
	t.Helper()
	if code != wantCode {
		t.Fatalf("exit %d, want %d\n%s", code, wantCode, out)
	}
	for _, c := range contains {
		if !strings.Contains(out, c) {
			t.Fatalf("output lacks %q:\n%s", c, out)
		}
	}
}

// newHost is a ConnectX-5 RoCE host with rdma-core's udev helper, the
// first function's netdev carrying the default route (management).
func newHost(t *testing.T, mutate func(st *sim.State)) string {
	t.Helper()
	s, _ := simtest.New(t, "cx5-roce", 0, mutate)
	withRdmaRename(t, s.Dir)
	return s.Dir
}

// withRdmaRename installs rdma-core's udev helper on a simulated host
// (the names provider wants it for an RDMA device's rule).
func withRdmaRename(t *testing.T, dir string) {
	t.Helper()
	f := filepath.Join(dir, "usr/lib/udev/rdma_rename")
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, nil, 0o755); err != nil {
		t.Fatal(err)
	}
}

func state(t *testing.T, dir string) *sim.State {
	t.Helper()
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s.State()
}

const railSpec = `version: 1
devices:
  - pci: 0000:5e:00.0
    names: {rdma: rail0, netdev: rail0eth}
  - pci: 0000:5e:00.1
    names: {rdma: rail1, netdev: rail1eth}
`

const wantRules = `# Written by rdmaform (devices[].names). rdmaform apply rewrites this file.
ACTION=="add", SUBSYSTEM=="net", KERNELS=="0000:5e:00.0", ATTR{type}=="1", ATTR{dev_port}=="0", NAME="rail0eth"
ACTION=="add", SUBSYSTEM=="infiniband", KERNELS=="0000:5e:00.0", PROGRAM="rdma_rename %k NAME_FIXED rail0"
ACTION=="add", SUBSYSTEM=="net", KERNELS=="0000:5e:00.1", ATTR{type}=="1", ATTR{dev_port}=="0", NAME="rail1eth"
ACTION=="add", SUBSYSTEM=="infiniband", KERNELS=="0000:5e:00.1", PROGRAM="rdma_rename %k NAME_FIXED rail1"
`

// TestScenario: two rails renamed now and for boot. The plan says the
// netdevs go down to be renamed; the one carrying the default route is
// refused by the management guard until --allow-mgmt; apply, then plan is
// empty; a reboot gives the kernel's names back and the rules rename
// them again (the simulator's own reading of the rules), so the plan
// stays empty.
func TestScenario(t *testing.T) {
	dir := newHost(t, func(st *sim.State) { st.DefaultRoute = "ens1f0np0" })
	spec := clitest.WriteSpec(t, railSpec)
	code, out := rf(t, "--sim", dir, "plan", "-f", spec)
	want(t, code, 2, out, "~ netdev_name[0000:5e:00.0]", "name: ens1f0np0 -> rail0eth", "link: up -> down while renamed, then up",
		"~ rdma_name[0000:5e:00.1]", "name: mlx5_1 -> rail1", "+ udev_rules[59-rdmaform-names.rules]")

	code, out = rf(t, "--sim", dir, "apply", "--yes", "-f", spec)
	want(t, code, 1, out, "netdev_name[0000:5e:00.0] would take down, re-address or change the MTU of ens1f0np0, and it carries the default route")
	if st := state(t, dir); st.Netdev("ens1f0np0") == nil || st.Device("mlx5_0") == nil {
		t.Fatal("the guard's refusal changed names")
	}

	code, out = rf(t, "--sim", dir, "apply", "--yes", "--allow-mgmt", "-f", spec)
	want(t, code, 0, out)
	code, out = rf(t, "--sim", dir, "plan", "-f", spec)
	want(t, code, 0, out, "No changes")
	st := state(t, dir)
	for _, n := range []string{"rail0eth", "rail1eth"} {
		if nd := st.Netdev(n); nd == nil || !nd.Up {
			t.Fatalf("netdev %s: %+v (want it renamed and up)", n, nd)
		}
	}
	if st.Device("rail0") == nil || st.Device("rail1") == nil || st.DefaultRoute != "rail0eth" {
		t.Fatalf("devices after apply: %v %v, route %s", st.Device("rail0"), st.Device("rail1"), st.DefaultRoute)
	}
	b, err := os.ReadFile(filepath.Join(dir, "etc/udev/rules.d/59-rdmaform-names.rules"))
	if err != nil || string(b) != wantRules {
		t.Fatalf("rules:\n%s\nwant:\n%s (%v)", b, wantRules, err)
	}
	code, out = rf(t, "--sim", dir, "audit", "-f", spec)
	want(t, code, 0, out)

	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reboot(); err != nil {
		t.Fatal(err)
	}
	code, out = rf(t, "--sim", dir, "plan", "-f", spec)
	want(t, code, 0, out, "No changes")

	// Without the rules the kernel's names come back: the plan renames
	// again and writes the rules.
	if err := os.Remove(filepath.Join(dir, "etc/udev/rules.d/59-rdmaform-names.rules")); err != nil {
		t.Fatal(err)
	}
	if err := s.Reboot(); err != nil {
		t.Fatal(err)
	}
	code, out = rf(t, "--sim", dir, "plan", "-f", spec)
	want(t, code, 2, out, "name: ens1f0np0 -> rail0eth", "name: mlx5_0 -> rail0", "+ udev_rules[59-rdmaform-names.rules]")
}

// TestBadNames: every refusal, at its line, with nothing changed.
func TestBadNames(t *testing.T) {
	dir := newHost(t, nil)
	for _, tc := range []struct{ name, spec, msg string }{{
		name: "a netdev name one past IFNAMSIZ",
		spec: "version: 1\ndevices:\n  - pci: 0000:5e:00.0\n    names: {netdev: abcdefghijklmnop}\n",
		msg:  `host.yaml:4:21: error: $.devices[0].names.netdev: "abcdefghijklmnop" is longer than the kernel's 15-byte interface name limit`,
	}, {
		name: "a netdev name that would add a key to the udev rule",
		spec: "version: 1\ndevices:\n  - pci: 0000:5e:00.0\n    names: {netdev: 'a\",RUN+=\"x'}\n",
		msg:  `host.yaml:4:21: error: $.devices[0].names.netdev: "a\",RUN+=\"x" holds "\"", which udev reads in a rule's value`,
	}, {
		name: "a netdev name udev substitutes at boot",
		spec: "version: 1\ndevices:\n  - pci: 0000:5e:00.0\n    names: {netdev: $kernel}\n",
		msg:  `host.yaml:4:21: error: $.devices[0].names.netdev: "$kernel" holds "$", which udev reads in a rule's value`,
	}, {
		name: "a netdev name with udev's other substitution",
		spec: "version: 1\ndevices:\n  - pci: 0000:5e:00.0\n    names: {netdev: eth%k}\n",
		msg:  `host.yaml:4:21: error: $.devices[0].names.netdev: "eth%k" holds "%", which udev reads in a rule's value`,
	}, {
		name: "an RDMA name one past IB_DEVICE_NAME_MAX",
		spec: "version: 1\ndevices:\n  - pci: 0000:5e:00.0\n    names: {rdma: " + strings.Repeat("r", 64) + "}\n",
		msg:  "is longer than 63 bytes",
	}, {
		name: "not an RDMA name",
		spec: "version: 1\ndevices:\n  - pci: 0000:5e:00.0\n    names: {rdma: rail%d}\n",
		msg:  `error: $.devices[0].names.rdma: "rail%d" is not a valid RDMA device name`,
	}, {
		name: "two entries ask one name",
		spec: "version: 1\ndevices:\n  - pci: 0000:5e:00.0\n    names: {rdma: rail0}\n  - pci: 0000:5e:00.1\n    names: {rdma: rail0}\n",
		msg:  "host.yaml:6:19: error: $.devices[1].names.rdma: RDMA device name rail0 is already asked for by $.devices[0].names.rdma",
	}, {
		name: "one device, two entries, different names",
		spec: "version: 1\ndevices:\n  - pci: 0000:5e:00.0\n    names: {rdma: rail0}\n  - node_guid: 0c42:a103:0065:1d2a\n    names: {rdma: rail9}\n",
		msg:  "host.yaml:6:12: error: $.devices[1].names: device mlx5_0 is also named by $.devices[0].names: give its names once",
	}, {
		name: "a name another device has",
		spec: "version: 1\ndevices:\n  - pci: 0000:5e:00.0\n    names: {rdma: mlx5_1}\n",
		msg:  "RDMA device name mlx5_1 is held by another device (at 0000:5e:00.1)",
	}, {
		name: "a netdev name another netdev has",
		spec: "version: 1\ndevices:\n  - pci: 0000:5e:00.0\n    names: {netdev: ens1f1np1}\n",
		msg:  "netdev name ens1f1np1 is held by another netdev",
	}, {
		name: "selected by what the rename changes",
		spec: "version: 1\ndevices:\n  - name: mlx5_0\n    names: {rdma: rail0}\n",
		msg:  "a device that is renamed must be selected by pci or node_guid, which a rename keeps; not by name",
	}, {
		name: "a class of functions cannot share one name",
		spec: "version: 1\ndevices:\n  - match: {psid: MT_0000000008}\n    names: {rdma: rail0}\n",
		msg:  `host.yaml:4:19: error: $.devices[0].names.rdma: "rail0" has no {rail}: every function the match selects needs a name of its own`,
	}, {
		name: "nothing asked",
		spec: "version: 1\ndevices:\n  - pci: 0000:5e:00.0\n    names: {}\n",
		msg:  "give rdma, netdev or both",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := rf(t, "--sim", dir, "apply", "--yes", "-f", clitest.WriteSpec(t, tc.spec))
			want(t, code, 1, out, tc.msg)
			st := state(t, dir)
			if st.Device("mlx5_0") == nil || st.Netdev("ens1f0np0") == nil {
				t.Fatal("a refused spec renamed something")
			}
			if _, err := os.Stat(filepath.Join(dir, "etc/udev/rules.d/59-rdmaform-names.rules")); err == nil {
				t.Fatal("a refused spec wrote the rules")
			}
		})
	}
}

// TestLimits: names at the kernel's limits are taken: a 15-byte netdev
// name and a 63-byte RDMA name; apply, then plan is empty.
func TestLimits(t *testing.T) {
	dir := newHost(t, nil)
	rdma := strings.Repeat("r", 63)
	spec := clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: 0000:5e:00.1\n    names: {rdma: "+rdma+", netdev: abcdefghijklmno}\n")
	code, out := rf(t, "--sim", dir, "apply", "--yes", "-f", spec)
	want(t, code, 0, out)
	code, out = rf(t, "--sim", dir, "plan", "-f", spec)
	want(t, code, 0, out, "No changes")
	if st := state(t, dir); st.Device(rdma) == nil || st.Netdev("abcdefghijklmno") == nil {
		t.Fatal("names at the limits were not set")
	}
}

// TestHostValueUnsafeInRule: a value the rules take from the host (an
// rxe netdev's MAC, here a simulated host's) that would add a key to
// the rule is a finding, not a change: plan and apply exit 1, and no
// rules are written. A MAC that is not one as the kernel prints it is
// read as none, so the finding is the rule by MAC without a MAC, at the
// spec's line (checkRules, the last guard, is not reached).
func TestHostValueUnsafeInRule(t *testing.T) {
	s, _ := simtest.New(t, "vm-soft", 0, nil)
	dir := s.Dir
	withRdmaRename(t, dir)
	code, out := rf(t, "--sim", dir, "apply", "--yes", "-f", clitest.WriteSpec(t, "version: 1\nrxe:\n  - {name: rxe0, netdev: enp1s0, state: present}\n"))
	want(t, code, 0, out)
	guid := state(t, dir).Device("rxe0").NodeGUID
	spec := clitest.WriteSpec(t, "version: 1\ndevices:\n  - node_guid: "+guid+"\n    names: {netdev: rxe0eth}\n")
	// The same spec on the host as it is: a rule by MAC, written.
	code, out = rf(t, "--sim", dir, "plan", "-f", spec)
	want(t, code, 2, out, "+ udev_rules[59-rdmaform-names.rules]")
	// The simulated host's state gives the netdev's MAC to its netlink
	// and sysfs alike.
	f := filepath.Join(dir, "sim.yaml")
	b, err := os.ReadFile(f)
	mac := state(t, dir).Netdev("enp1s0").MAC
	if err != nil || strings.Count(string(b), "mac: \""+mac+"\"\n") != 1 {
		t.Fatalf("sim.yaml (%v) has not one mac: %s", err, mac)
	}
	b = []byte(strings.Replace(string(b), "mac: \""+mac+"\"\n", "mac: '02:00\", RUN+=\"/bin/x'\n", 1))
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"plan"}, {"apply", "--yes"}} {
		code, out = rf(t, append(append([]string{"--sim", dir}, cmd...), "-f", spec)...)
		want(t, code, 1, out, "$.devices[0].names.netdev: netdev enp1s0 has no MAC address rdmaform can read")
		if strings.Contains(out, "/bin/x") {
			t.Errorf("the host's hostile value reaches the output:\n%s", out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "etc/udev/rules.d/59-rdmaform-names.rules")); err == nil {
		t.Fatal("rules with the host's hostile value were written")
	}
}

// TestMissingRdmaRename: without rdma-core's udev helper a PCI device's
// RDMA name could not survive a reboot: a finding naming it.
func TestMissingRdmaRename(t *testing.T) {
	s, _ := simtest.New(t, "cx5-roce", 0, func(st *sim.State) { st.RdmaRename = false })
	spec := clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: 0000:5e:00.1\n    names: {rdma: rail1}\n")
	code, out := rf(t, "--sim", s.Dir, "plan", "-f", spec)
	want(t, code, 1, out, "rdma-core's udev helper rdma_rename (/usr/lib/udev/rdma_rename or /lib/udev/rdma_rename) is missing")
}

// oneApply renames both functions and sets, under the new names, RoCE
// and QoS of the second port, the first netdev's MTU and the second's
// channels.
const oneApply = railSpec + `    ports:
      - port: 1
        roce: {mode: v2, tos: 106}
        qos: {trust: dscp, pfc: [3]}
interfaces:
  - name: rail0eth
    mtu: 4200
  - name: rail1eth
    ethtool: {channels: {combined: 4}}
`

// TestRenameAndSettingsInOneApply: one apply renames the devices and
// netdevs and sets the renamed ones' MTU, channels, QoS and RoCE: the plan
// lists the renames first and every later stage under the new names;
// apply, then plan is empty, and the settings are on the renamed
// netdevs and devices.
func TestRenameAndSettingsInOneApply(t *testing.T) {
	dir := newHost(t, nil)
	spec := clitest.WriteSpec(t, oneApply)
	code, out := rf(t, "--sim", dir, "plan", "-f", spec)
	want(t, code, 2, out, "~ interface[rail0eth]", "mtu: 1500 -> 4200", "~ ethtool[rail1eth]", "~ qos[rail1/1]", "~ rdma_cm[rail1/1]")
	first := strings.Index(out, "netdev_name[0000:5e:00.0]")
	for _, later := range []string{"interface[rail0eth]", "ethtool[rail1eth]", "qos[rail1/1]", "rdma_cm[rail1/1]"} {
		if i := strings.Index(out, later); i < first {
			t.Fatalf("%s is planned before the renames:\n%s", later, out)
		}
	}
	if strings.Contains(out, "ens1f0np0]") || strings.Contains(out, "mlx5_1/1]") {
		t.Fatalf("a later stage planned under an old name:\n%s", out)
	}
	code, out = rf(t, "--sim", dir, "apply", "--yes", "-f", spec)
	want(t, code, 0, out)
	code, out = rf(t, "--sim", dir, "plan", "-f", spec)
	want(t, code, 0, out, "No changes")
	st := state(t, dir)
	if nd := st.Netdev("rail0eth"); nd == nil || nd.MTU != 4200 || !nd.Up {
		t.Fatalf("rail0eth after apply: %+v", nd)
	}
	code, out = rf(t, "--sim", dir, "audit", "-f", spec)
	want(t, code, 0, out)
}

// TestRenameGuardFollowsTheName: the netdev carrying the default route is
// renamed and its MTU changed in one plan: the guard refuses both, the
// MTU change under the new name too, and nothing changes.
func TestRenameGuardFollowsTheName(t *testing.T) {
	dir := newHost(t, func(st *sim.State) { st.DefaultRoute = "ens1f0np0" })
	spec := clitest.WriteSpec(t, oneApply)
	code, out := rf(t, "--sim", dir, "apply", "--yes", "-f", spec)
	want(t, code, 1, out, "netdev_name[0000:5e:00.0] would take down, re-address or change the MTU of ens1f0np0, and it carries the default route",
		"interface[rail0eth] would take down, re-address or change the MTU of rail0eth, and it carries the default route (as ens1f0np0, renamed by netdev_name[0000:5e:00.0])")
	if st := state(t, dir); st.Netdev("ens1f0np0") == nil || st.Netdev("ens1f0np0").MTU != 1500 {
		t.Fatal("the guard's refusal changed the host")
	}
	code, out = rf(t, "--sim", dir, "apply", "--yes", "--allow-mgmt", "-f", spec)
	want(t, code, 0, out)
	code, out = rf(t, "--sim", dir, "plan", "-f", spec)
	want(t, code, 0, out, "No changes")
	if st := state(t, dir); st.DefaultRoute != "rail0eth" {
		t.Fatalf("default route on %s", st.DefaultRoute)
	}
}

// TestRenameAndIPoIBInOneApply: one apply renames an InfiniBand function's
// RDMA device and IPoIB netdev and creates an IPoIB connection whose
// parent is the new name, with a P_Key child (its P_Key read from the
// renamed device's port): apply, then plan is empty.
func TestRenameAndIPoIBInOneApply(t *testing.T) {
	s, _ := simtest.New(t, "cx6-vpi-ib", 0, nil)
	withRdmaRename(t, s.Dir)
	spec := clitest.WriteSpec(t, `version: 1
devices:
  - pci: 0000:3b:00.0
    names: {rdma: ibrail0, netdev: ibrail0}
ipoib:
  - name: rail0-storage
    parent: ibrail0
    pkey: 0x8002
    mode: datagram
    ipv4: {addresses: [192.0.2.1/24]}
`)
	code, out := rf(t, "--sim", s.Dir, "plan", "-f", spec)
	want(t, code, 2, out, "name: ib0 -> ibrail0", "+ ipoib[rail0-storage]")
	code, out = rf(t, "--sim", s.Dir, "apply", "--yes", "-f", spec)
	want(t, code, 0, out)
	code, out = rf(t, "--sim", s.Dir, "plan", "-f", spec)
	want(t, code, 0, out, "No changes")
	if st := state(t, s.Dir); st.Netdev("ibrail0.8002") == nil {
		t.Fatal("no P_Key child on the renamed netdev")
	}
}

// TestRenameAndSubnetManagerInOneApply: one apply renames the RDMA device
// whose port opensm binds and configures the subnet manager on it under
// the new name (the fabric asked through the device's name until the
// rename): apply, then plan is empty.
func TestRenameAndSubnetManagerInOneApply(t *testing.T) {
	s, h := simtest.New(t, "cx6-vpi-ib", 0, func(st *sim.State) {
		st.OpenSM = &sim.OpenSMState{Layout: "debian"}
		st.Tools = append(st.Tools, "sminfo", "smpquery")
	})
	if err := h.Systemd.Start(context.Background(), "opensm.service"); err != nil {
		t.Fatal(err)
	}
	withRdmaRename(t, s.Dir)
	spec := clitest.WriteSpec(t, `version: 1
devices:
  - pci: 0000:3b:00.1
    names: {rdma: ibrail1}
subnet_manager:
  priority: 5
  port: {device: ibrail1, port: 1}
  partitions:
    - name: storage
      pkey: 0x8002
      members: [{guid: all_cas, membership: limited}, {guid: self, membership: full}]
`)
	code, out := rf(t, "--sim", s.Dir, "plan", "-f", spec)
	want(t, code, 2, out, "name: mlx5_1 -> ibrail1", "subnet_manager[")
	code, out = rf(t, "--sim", s.Dir, "apply", "--yes", "-f", spec)
	want(t, code, 0, out)
	code, out = rf(t, "--sim", s.Dir, "plan", "-f", spec)
	want(t, code, 0, out, "No changes")
}

// TestRxeOnVLANRuleLeavesTheParent: an rxe device on a VLAN (which has
// its parent's MAC) has its netdev renamed; the rule by MAC names the
// VLAN's DEVTYPE, so at the reboot, where udev sees the parent's add
// event first, the parent keeps its name and the VLAN gets the spec's;
// with the rxe link made again (none outlives a boot) the plan is empty. A rule by MAC alone renamed the parent, the
// first netdev with that MAC, and left the VLAN with the kernel's name.
func TestRxeOnVLANRuleLeavesTheParent(t *testing.T) {
	s, _ := simtest.New(t, "vm-soft", 0, func(st *sim.State) {
		parent := st.Netdev("enp1s0")
		st.Netdevs = append(st.Netdevs, &sim.Netdev{Name: "enp1s0.100", Kind: "vlan", MTU: parent.MTU, Up: true, MAC: parent.MAC})
	})
	dir := s.Dir
	withRdmaRename(t, dir)
	code, out := rf(t, "--sim", dir, "apply", "--yes", "-f", clitest.WriteSpec(t, "version: 1\nrxe:\n  - {name: rxe0, netdev: enp1s0.100, state: present}\n"))
	want(t, code, 0, out)
	guid := state(t, dir).Device("rxe0").NodeGUID
	spec := clitest.WriteSpec(t, "version: 1\ndevices:\n  - node_guid: "+guid+"\n    names: {netdev: vlan100rxe}\n")
	code, out = rf(t, "--sim", dir, "apply", "--yes", "-f", spec)
	want(t, code, 0, out)
	rules, err := os.ReadFile(filepath.Join(dir, "etc/udev/rules.d/59-rdmaform-names.rules"))
	if err != nil || !strings.Contains(string(rules), `ENV{DEVTYPE}=="vlan", NAME="vlan100rxe"`) {
		t.Fatalf("rules (%v):\n%s", err, rules)
	}
	code, out = rf(t, "--sim", dir, "plan", "-f", spec)
	want(t, code, 0, out, "No changes")
	if err := s.Reboot(); err != nil {
		t.Fatal(err)
	}
	st := state(t, dir)
	if st.Netdev("enp1s0") == nil || st.Netdev("vlan100rxe") == nil || st.Netdev("vlan100rxe").Kind != "vlan" {
		t.Fatalf("after the reboot: enp1s0 %+v, vlan100rxe %+v; want the parent as it was and the VLAN renamed", st.Netdev("enp1s0"), st.Netdev("vlan100rxe"))
	}
	// An rxe link does not outlive a boot: made again on the VLAN's name.
	code, out = rf(t, "--sim", dir, "apply", "--yes", "-f", clitest.WriteSpec(t, "version: 1\nrxe:\n  - {name: rxe0, netdev: vlan100rxe, state: present}\n"))
	want(t, code, 0, out)
	code, out = rf(t, "--sim", dir, "plan", "-f", spec)
	want(t, code, 0, out, "No changes")
}

// TestRenameRefusedOrNotTaken: the kernel's refusal of a netdev rename
// (a fault: EBUSY) fails the apply naming it, and the netdev, taken down
// to be renamed, is up again under its old name; an RDMA rename the
// kernel accepts without making it (a dropped call) is found by reading
// the devices back. Each time, the next apply converges and plan is
// empty.
func TestRenameRefusedOrNotTaken(t *testing.T) {
	dir := newHost(t, nil)
	s, err := sim.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if nd := state(t, dir).Netdev("ens1f1np1"); nd == nil || !nd.Up {
		t.Fatalf("ens1f1np1: %+v, want it up before the rename", nd)
	}
	if err := s.AddFault(sim.Fault{Netlink: "LinkSetName", Match: "ens1f1np1", Errno: "EBUSY", Stderr: "injected: rename refused", Times: 1}); err != nil {
		t.Fatal(err)
	}
	spec := clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: 0000:5e:00.1\n    names: {netdev: rail1eth}\n")
	code, out := rf(t, "--sim", dir, "apply", "--yes", "-f", spec)
	want(t, code, 1, out, "netdev_name[0000:5e:00.1]", "injected: rename refused")
	st := state(t, dir)
	if nd := st.Netdev("ens1f1np1"); nd == nil || !nd.Up || st.Netdev("rail1eth") != nil {
		t.Fatalf("after the refused rename: ens1f1np1 %+v, rail1eth %+v; want ens1f1np1 up, as before", nd, st.Netdev("rail1eth"))
	}
	code, out = rf(t, "--sim", dir, "apply", "--yes", "-f", spec)
	want(t, code, 0, out)
	code, out = rf(t, "--sim", dir, "plan", "-f", spec)
	want(t, code, 0, out, "No changes")
	if nd := state(t, dir).Netdev("rail1eth"); nd == nil || !nd.Up {
		t.Fatalf("rail1eth: %+v, want it renamed and up", nd)
	}

	if err := s.AddFault(sim.Fault{Netlink: "RdmaDevSetName", Match: "mlx5_1", Drop: true, Times: 1}); err != nil {
		t.Fatal(err)
	}
	spec = clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: 0000:5e:00.1\n    names: {rdma: rail1, netdev: rail1eth}\n")
	code, out = rf(t, "--sim", dir, "apply", "--yes", "-f", spec)
	want(t, code, 1, out, "rdma_name[0000:5e:00.1]", "rdma dev set mlx5_1 name rail1: no device rail1 reads back")
	if st := state(t, dir); st.Device("mlx5_1") == nil {
		t.Fatal("the dropped rename renamed mlx5_1")
	}
	code, out = rf(t, "--sim", dir, "apply", "--yes", "-f", spec)
	want(t, code, 0, out)
	code, out = rf(t, "--sim", dir, "plan", "-f", spec)
	want(t, code, 0, out, "No changes")
	if state(t, dir).Device("rail1") == nil {
		t.Fatal("mlx5_1 not renamed rail1")
	}
}

// TestRuleByMACNeedsAMAC: the netdev of a device without a PCI function
// (an rxe device's) is matched by its MAC in the rule; a netdev whose MAC
// rdmaform cannot read is a finding at the spec line, and no rules are
// written.
func TestRuleByMACNeedsAMAC(t *testing.T) {
	s, _ := simtest.New(t, "vm-soft", 0, func(st *sim.State) {
		st.Netdevs = append(st.Netdevs, &sim.Netdev{Name: "nomac0", Kind: "veth", MTU: 1500, Up: true})
	})
	dir := s.Dir
	withRdmaRename(t, dir)
	code, out := rf(t, "--sim", dir, "apply", "--yes", "-f", clitest.WriteSpec(t, "version: 1\nrxe:\n  - {name: rxe0, netdev: nomac0, state: present}\n"))
	want(t, code, 0, out)
	guid := state(t, dir).Device("rxe0").NodeGUID
	spec := clitest.WriteSpec(t, "version: 1\ndevices:\n  - node_guid: "+guid+"\n    names: {netdev: rxenet0}\n")
	code, out = rf(t, "--sim", dir, "apply", "--yes", "-f", spec)
	want(t, code, 1, out, "host.yaml:4:21: error: $.devices[0].names.netdev: netdev nomac0 has no MAC address rdmaform can read (/sys/class/net/nomac0/address)")
	if _, err := os.Stat(filepath.Join(dir, "etc/udev/rules.d/59-rdmaform-names.rules")); err == nil {
		t.Error("rules written without the netdev's MAC")
	}
	if state(t, dir).Netdev("nomac0") == nil {
		t.Error("nomac0 renamed")
	}
}

// TestMissingDeviceLeavesTheRules: a spec that names two adapters, one
// of them not on this host, is a plan error; the plan proposes no rules
// file, which would hold the present adapter's rule alone and drop the
// other's, and apply writes none.
func TestMissingDeviceLeavesTheRules(t *testing.T) {
	s, _ := simtest.New(t, "cx5-roce", 0, nil)
	withRdmaRename(t, s.Dir)
	spec := clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: 0000:5e:00.1\n    names: {rdma: rail1}\n  - pci: 0000:99:00.0\n    names: {rdma: rail9}\n")
	one := clitest.WriteSpec(t, "version: 1\ndevices:\n  - pci: 0000:5e:00.1\n    names: {rdma: rail1}\n")
	code, out := rf(t, "--sim", s.Dir, "plan", "-f", one)
	want(t, code, 2, out, "+ udev_rules[59-rdmaform-names.rules]")
	for _, cmd := range [][]string{{"plan"}, {"apply", "--yes"}} {
		code, out = rf(t, append(append([]string{"--sim", s.Dir}, cmd...), "-f", spec)...)
		want(t, code, 1, out, "0000:99:00.0")
		if strings.Contains(out, "udev_rules[") {
			t.Errorf("%s with a device the host lacks proposes partial rules:\n%s", cmd[0], out)
		}
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "etc/udev/rules.d/59-rdmaform-names.rules")); err == nil {
		t.Error("rules were written for a spec the host cannot resolve")
	}
}
