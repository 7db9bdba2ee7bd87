package sim

import (
	"os"
	"path/filepath"
	"testing"
)

// TestUdevNamesRuleLeavesIPoIBChildren: the rule rdmaform's names file
// holds for an IPoIB parent (the PCI function, type 32, dev_port) never
// matches a P_Key child of that parent, whatever the order udev sees them
// in: the kernel registers a child with no parent device (ipoib calls
// SET_NETDEV_DEV only in ipoib_parent_init, so the child is
// /sys/devices/virtual/net/ib1.8002, and KERNELS finds no PCI function
// above it) and leaves its dev_port and dev_id 0. The simulator renders
// the child so, and its udev matcher renames the parent, not the child.
func TestUdevNamesRuleLeavesIPoIBChildren(t *testing.T) {
	st, err := NewState("cx6-vpi-ib", "node1", 0)
	if err != nil {
		t.Fatal(err)
	}
	parent := st.Netdev("ib1")
	if parent == nil {
		t.Fatal("no ib1")
	}
	// The child first: udev sees it before the parent is renamed when
	// NetworkManager creates it early, and the matcher takes the first.
	child := &Netdev{Name: "ib1.8002", Kind: "ipoib", MTU: parent.MTU, MAC: parent.MAC, Device: parent.Device, Port: parent.Port, PKey: 0x8002, Mode: "datagram"}
	st.Netdevs = append([]*Netdev{child}, st.Netdevs...)
	dir := t.TempDir()
	s, err := Create(dir, st)
	if err != nil {
		t.Fatal(err)
	}
	link, err := os.Readlink(filepath.Join(dir, "sys/class/net/ib1.8002"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "../../devices/virtual/net/ib1.8002"; link != want {
		t.Errorf("/sys/class/net/ib1.8002 -> %s, want %s", link, want)
	}
	if _, err := os.Lstat(filepath.Join(dir, "sys/class/net/ib1.8002/device")); err == nil {
		t.Error("the child has a device link")
	}
	// The rule as providers/names renders it for ib1 (port 1 of 0000:3b:00.1).
	rules := `ACTION=="add", SUBSYSTEM=="net", KERNELS=="0000:3b:00.1", ATTR{type}=="32", ATTR{dev_port}=="0", NAME="rail1ib"` + "\n"
	if err := os.MkdirAll(filepath.Join(dir, "etc/udev/rules.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "etc/udev/rules.d/59-rdmaform-names.rules"), []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	rs := s.udevRules()
	if len(rs) != 1 {
		t.Fatalf("rules read: %d, want 1", len(rs))
	}
	if rs[0].matchNetdev(st, child) {
		t.Error("the parent's rule matches the P_Key child ib1.8002")
	}
	if !rs[0].matchNetdev(st, parent) {
		t.Error("the parent's rule does not match ib1")
	}
	// Create keeps the netdevs in its own order: the child first again.
	st.Netdevs = append([]*Netdev{child}, slicesWithout(st.Netdevs, child)...)
	rs[0].apply(st)
	if child.Name != "ib1.8002" || parent.Name != "rail1ib" {
		t.Errorf("after the rule: child %s, parent %s; want ib1.8002, rail1ib", child.Name, parent.Name)
	}
}

func slicesWithout(l []*Netdev, x *Netdev) []*Netdev {
	var out []*Netdev
	for _, n := range l {
		if n != x {
			out = append(out, n)
		}
	}
	return out
}

// TestUdevNamesRuleByMACLeavesVLANs: a VLAN has its parent's MAC, so a
// rule by MAC alone (rdmaform's for an rxe device's netdev, before it
// named the DEVTYPE) matches whichever of the two udev sees first. The
// simulator renders the VLAN's uevent with DEVTYPE=vlan, as 8021q sets
// it (a bridge's reads DEVTYPE=bridge, then INTERFACE, on the real
// kernel), and its matcher reads ENV{DEVTYPE} and DRIVERS: the rule with
// the parent's DEVTYPE renames the parent, not the VLAN seen first; the
// rule of a netdev with a driver (DRIVERS=="?*") renames no virtual one.
func TestUdevNamesRuleByMACLeavesVLANs(t *testing.T) {
	st, err := NewState("vm-soft", "node1", 0)
	if err != nil {
		t.Fatal(err)
	}
	parent := st.Netdev("enp1s0")
	vlan := &Netdev{Name: "enp1s0.100", Kind: "vlan", MTU: parent.MTU, Up: true, MAC: parent.MAC}
	st.Netdevs = append([]*Netdev{vlan}, st.Netdevs...)
	dir := t.TempDir()
	s, err := Create(dir, st)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"enp1s0.100": "DEVTYPE=vlan\nINTERFACE=enp1s0.100\n", "enp1s0": "INTERFACE=enp1s0\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, "sys/class/net", name, "uevent")); err != nil || string(b) != want {
			t.Errorf("%s's uevent: %q, %v; want %q", name, b, err, want)
		}
	}
	read := func(rule string) udevRule {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, "etc/udev/rules.d"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "etc/udev/rules.d/59-rdmaform-names.rules"), []byte(rule+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		rs := s.udevRules()
		if len(rs) != 1 {
			t.Fatalf("rules read: %d, want 1", len(rs))
		}
		return rs[0]
	}
	macOnly := read(`ACTION=="add", SUBSYSTEM=="net", ATTR{address}=="52:54:00:12:34:56", ATTR{type}=="1", NAME="soft0"`)
	if !macOnly.matchNetdev(st, vlan) {
		t.Error("a rule by MAC alone does not match the VLAN (the simulator would hide what it did)")
	}
	r := read(`ACTION=="add", SUBSYSTEM=="net", ATTR{address}=="52:54:00:12:34:56", ATTR{type}=="1", ENV{DEVTYPE}=="", NAME="soft0"`)
	if r.matchNetdev(st, vlan) || !r.matchNetdev(st, parent) {
		t.Errorf("the rule with the parent's DEVTYPE: VLAN %v, parent %v; want false, true", r.matchNetdev(st, vlan), r.matchNetdev(st, parent))
	}
	r.apply(st)
	if vlan.Name != "enp1s0.100" || parent.Name != "soft0" {
		t.Errorf("after the rule: VLAN %s, parent %s; want enp1s0.100, soft0", vlan.Name, parent.Name)
	}
	drivers := read(`ACTION=="add", SUBSYSTEM=="net", DRIVERS=="?*", ATTR{address}=="52:54:00:12:34:56", ATTR{type}=="1", ENV{DEVTYPE}=="", NAME="soft1"`)
	if drivers.matchNetdev(st, vlan) || drivers.matchNetdev(st, parent) {
		t.Error("a rule with DRIVERS matches a netdev the simulator renders virtual")
	}
}
