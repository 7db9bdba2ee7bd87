package sim

import "testing"

// TestSysctlFollowsNetdev: a renamed netdev keeps its written values under
// its new name; a netdev that is gone loses them; a write that is not one
// decimal integer, or a numa_balancing out of 0-3, is EINVAL.
func TestSysctlFollowsNetdev(t *testing.T) {
	st, err := NewState("cx5-roce", "n", 1)
	if err != nil {
		t.Fatal(err)
	}
	key := "net/ipv4/conf/ens1f0np0/arp_ignore"
	if err := st.writeSysctl("/proc/sys/"+key, key, " 1\n"); err != nil {
		t.Fatal(err)
	}
	st.renameNetdev(st.Netdev("ens1f0np0"), "rail0")
	st.sortAll()
	if got := st.sysctlFiles()["net/ipv4/conf/rail0/arp_ignore"]; got != "1" {
		t.Errorf("after the rename arp_ignore of rail0 = %q, want 1", got)
	}
	if _, ok := st.sysctlFiles()[key]; ok {
		t.Errorf("the old name's file is still there")
	}
	var keep []*Netdev
	for _, n := range st.Netdevs {
		if n.Name != "rail0" {
			keep = append(keep, n)
		}
	}
	st.Netdevs = keep
	st.sortAll()
	if len(st.Sysctl) != 0 {
		t.Errorf("a gone netdev's values stay: %v", st.Sysctl)
	}
	for _, c := range []struct{ key, v string }{{"kernel/numa_balancing", "4"}, {"kernel/numa_balancing", "-1"}, {"kernel/numa_balancing", "1x"}, {"net/ipv4/conf/all/rp_filter", ""}} {
		if err := st.writeSysctl("/proc/sys/"+c.key, c.key, c.v); err == nil {
			t.Errorf("%s = %q was taken", c.key, c.v)
		}
	}
	if err := st.writeSysctl("/proc/sys/kernel/numa_balancing", "kernel/numa_balancing", "3"); err != nil {
		t.Errorf("numa_balancing 3: %v", err)
	}
}
