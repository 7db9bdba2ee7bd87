//go:build kernlab

package guest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// virtioNetdev loads the virtio drivers for the lab's multi-queue
// virtio-net device (run.sh puts it on a PCIe root port of the q35
// machine's main bus) and returns its netdev and PCI address; the drivers
// are unloaded when the test ends, so the other tests never see the
// netdev.
func virtioNetdev(t *testing.T) (netdev, pci string) {
	t.Helper()
	return virtioNetdevUnder(t, "pci0000:00")
}

// virtioNetdevUnder is virtioNetdev for the virtio-net device below the
// PCI root bus root: pci0000:00 (the main bus), pci0000:80 (the NUMA
// node 1 expander bridge's, run.sh).
func virtioNetdevUnder(t *testing.T, root string) (netdev, pci string) {
	t.Helper()
	run(t, "/sbin/modprobe", "virtio_pci")
	run(t, "/sbin/modprobe", "virtio_net")
	t.Cleanup(func() {
		_, _ = tryRun("/sbin/rmmod", "virtio_net")
		_, _ = tryRun("/sbin/rmmod", "virtio_pci")
	})
	for i := 0; i < 50; i++ {
		ents, _ := os.ReadDir("/sys/class/net")
		for _, e := range ents {
			drv, err := os.Readlink(filepath.Join("/sys/class/net", e.Name(), "device", "driver"))
			if err != nil || filepath.Base(drv) != "virtio_net" {
				continue
			}
			// device is the virtio device (virtioN); the PCI function
			// is its parent. (EvalSymlinks of "device/.." would clean
			// the path first and give the netdev's own directory.)
			dev, err := filepath.EvalSymlinks(filepath.Join("/sys/class/net", e.Name(), "device"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(dev, "/"+root+"/") {
				continue
			}
			return e.Name(), filepath.Base(filepath.Dir(dev))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no virtio_net netdev appeared below %s (is the lab's virtio-net device missing from run.sh?)", root)
	return "", ""
}

// ethtoolField reads the current value of one field of `ethtool -g` or
// `-l` ("Combined:") as the real tool prints it.
func ethtoolField(t *testing.T, flag, netdev, label string) string {
	t.Helper()
	out := run(t, "/sbin/ethtool", flag, netdev)
	_, cur, ok := strings.Cut(out, "Current hardware settings:")
	if !ok {
		t.Fatalf("ethtool %s %s:\n%s", flag, netdev, out)
	}
	for _, l := range strings.Split(cur, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && k == label {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("ethtool %s %s has no %s:\n%s", flag, netdev, label, out)
	return ""
}

// TestEthtoolOnRealKernel: on the lab's 4-queue virtio-net device the
// channels and rings (virtio_net sets ring sizes since Linux 6.0) change
// through rdmaform, the real ethtool reads the new values back, and the
// next plan is empty; at the maximum it converges, one past it the plan
// refuses naming the maximum, and separate rx channels, which virtio_net
// does not have, are a finding. Nothing changes on the refused specs.
func TestEthtoolOnRealKernel(t *testing.T) {
	nd, _ := virtioNetdev(t)
	spec := func(ethtool string) string {
		return writeSpec(t, "version: 1\ninterfaces:\n  - name: "+nd+"\n    ethtool: "+ethtool+"\n")
	}
	converge(t, spec("{rings: {rx: 128, tx: 128}, channels: {combined: 4}}"))
	if c, r, x := ethtoolField(t, "-l", nd, "Combined"), ethtoolField(t, "-g", nd, "RX"), ethtoolField(t, "-g", nd, "TX"); c != "4" || r != "128" || x != "128" {
		t.Errorf("after apply: combined %s, rx ring %s, tx ring %s; want 4, 128, 128", c, r, x)
	}
	converge(t, spec("{rings: {rx: 256}, channels: {combined: 1}}"))
	if c, r := ethtoolField(t, "-l", nd, "Combined"), ethtoolField(t, "-g", nd, "RX"); c != "1" || r != "256" {
		t.Errorf("after the second apply: combined %s, rx ring %s; want 1, 256", c, r)
	}
	for _, c := range []struct{ ethtool, want string }{
		{"{channels: {combined: 5}}", "channels.combined: 5 is above the driver's maximum 4 for " + nd},
		{"{rings: {rx: 512}}", "rings.rx: 512 is above the driver's maximum 256 for " + nd},
		{"{channels: {rx: 1}}", "channels.rx: the driver of " + nd + " has no rx channels"},
	} {
		out, _ := mustCode(t, 1, "apply", "--yes", "-f", spec(c.ethtool))
		if !strings.Contains(out, c.want) {
			t.Errorf("%s: want %q:\n%s", c.ethtool, c.want, out)
		}
	}
	if c, r := ethtoolField(t, "-l", nd, "Combined"), ethtoolField(t, "-g", nd, "RX"); c != "1" || r != "256" {
		t.Errorf("a refused spec changed the device: combined %s, rx ring %s", c, r)
	}
	// A ring size virtio_net refuses (not a power of two): the kernel's
	// answer, quoted, and the device unchanged.
	code, out, errs := rdmaform(t, "apply", "--yes", "-f", spec("{rings: {rx: 100}}"))
	if code != 1 || !strings.Contains(out+errs, "Cannot allocate memory") {
		t.Errorf("rx ring 100: exit %d, want 1 quoting the kernel's ENOMEM\n%s%s", code, out, errs)
	}
	if r := ethtoolField(t, "-g", nd, "RX"); r != "256" {
		t.Errorf("rx ring after the refused size: %s", r)
	}
}

// TestMaxReadRequestOnRealKernel: rdmaform walks the real config space of
// the lab's PCI Express function (a virtio-net device on a q35 root port,
// named by PCI address with pcie alone: it is no RDMA device) and reads
// its Max Read Request Size as the kernel shows it: the spec at that value
// plans nothing. QEMU 7.2 emulates Device Control with bits 14:12
// read-only (Debian 12's source, qemu 1:7.2+dfsg-7+deb12u18: the only
// write masks of Device Control in hw/ are hw/pci/pcie.c:295-297, the
// error-reporting enables, and :838-839, Initiate FLR; no device names
// PCI_EXP_DEVCTL_READRQ, so no q35 device of this QEMU takes the write;
// only vfio-pci or Xen passthrough would), so a write does
// not take: apply writes in place, reads back, and fails naming the value
// the device kept, and the register is as before. On hardware the same
// write changes it (the simulator's scenario, TestMaxReadRequest).
func TestMaxReadRequestOnRealKernel(t *testing.T) {
	_, pci := virtioNetdev(t)
	cfg := "/sys/bus/pci/devices/" + pci + "/config"
	before := readFile(t, cfg)
	spec := func(v string) string {
		return writeSpec(t, "version: 1\ndevices:\n  - pci: \""+pci+"\"\n    pcie: {max_read_request: "+v+"}\n")
	}
	out, _ := mustCode(t, 0, "plan", "-f", spec("128"))
	if !strings.Contains(out, "No changes") {
		t.Errorf("plan at the device's 128:\n%s", out)
	}
	out, _ = mustCode(t, 2, "plan", "-f", spec("512"))
	if !strings.Contains(out, "max_read_request: 128 -> 512") {
		t.Errorf("plan for 512:\n%s", out)
	}
	code, out, errs := rdmaform(t, "apply", "--yes", "-f", spec("512"))
	if code != 1 || !strings.Contains(out+errs, pci+": Max Read Request Size reads 128 after writing 512") {
		t.Errorf("apply: exit %d, want 1 naming the value the device kept\n%s%s", code, out, errs)
	}
	if after := readFile(t, cfg); after != before {
		t.Errorf("the config space changed")
	}
	mustCode(t, 1, "plan", "-f", spec("8192"))
}
