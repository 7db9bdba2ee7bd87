//go:build kernlab

package guest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The kernel command line across a real second boot: "did it take?"
// decided by the kernel's own /proc/cmdline.
//
// The guest's root is its initramfs, on which grub-probe finds no device
// (grub-mkconfig asks it for the device of / and of /boot and stops when
// it fails). So rdmaform runs chrooted in a root tree on an ext2 disk of
// its own (/dev/vdb, run.sh's second disk), the guest's programs bound in,
// where Debian's real update-grub (grub2-common and grub-common, fetched
// by run.sh like the other guest packages) finds /dev/vdb. Two trees:
// "took" asks for iommu=pt numa_balancing=disable, "dropped" for those and
// amd_iommu=off (the lab's machine is an Intel one: intel_iommu=on is on
// every boot's command line, run.sh, so it cannot be the one left out). In the first boot rdmaform applies each (exit 3, a
// reboot is needed) and this test asks run.sh for a second boot with the
// command line of the "dropped" tree's generated grub.cfg (its first
// entry's linux line), less amd_iommu=off, which run.sh leaves out as a
// cloud image's own boot entry would. In the second boot the kernel's
// /proc/cmdline decides: the "took" tree's arguments took (activate exit
// 0, the ledger settles, plan empty), the "dropped" tree's amd_iommu=off
// is an activation failure naming it (exit 1) that apply does not write
// again.

const (
	cmdDisk = "/dev/vdb"
	cmdMnt  = "/kc"
	// cmdDrop is the argument run.sh leaves out of the second boot.
	cmdDrop = "amd_iommu=off"
)

var cmdTrees = map[string][]string{
	"took":    {"iommu=pt", "numa_balancing=disable"},
	"dropped": {"iommu=pt", "numa_balancing=disable", cmdDrop},
}

func cmdSpec(args []string) string {
	s := "version: 1\nkernel_args:\n"
	for _, a := range args {
		s += "  - {arg: " + a + "}\n"
	}
	return s
}

func TestKernelArgsAcrossBoot(t *testing.T) {
	second := os.Getenv("KERNLAB_BOOT") == "2"
	mountCmdDisk(t, !second)
	trees := map[string]string{}
	for _, name := range []string{"took", "dropped"} {
		trees[name] = cmdTree(t, name, !second)
	}
	if !second {
		for _, name := range []string{"took", "dropped"} {
			root, want := trees[name], cmdTrees[name]
			chrootCode(t, root, 2, "plan", "-f", "/root/k.yaml")
			chrootCode(t, root, 3, "apply", "--yes", "-f", "/root/k.yaml")
			// The real update-grub wrote every linux line with the
			// arguments after the distribution's and before "quiet"
			// (GRUB_CMDLINE_LINUX_DEFAULT).
			lines := grubLinuxLines(t, root)
			if !strings.HasSuffix(lines[0], " ro "+strings.Join(want, " ")+" quiet") {
				t.Fatalf("%s: grub.cfg's first linux line %q, want the arguments %v after ro", name, lines[0], want)
			}
			out := chrootCode(t, root, 3, "plan", "-f", "/root/k.yaml")
			if !strings.Contains(out, "kernel_arg[iommu]") || !strings.Contains(out, "after reboot") {
				t.Errorf("%s: plan after apply does not show the arguments pending a reboot:\n%s", name, out)
			}
			if n := len(cmdLedger(t, root)); n != len(want) {
				t.Errorf("%s: %d ledger entries, want %d", name, n, len(want))
			}
			if got := cmdStatus(t, root, 3); len(got) != len(want) || got[want[0]] != "pending" {
				t.Errorf("%s: status lists the kernel arguments %v, want each of %v pending", name, got, want)
			}
		}
		run(t, "/bin/sync")
		fmt.Println("KERNLAB-CMDLINE-FROM /dropped/boot/grub/grub.cfg DROP " + cmdDrop)
		fmt.Println("KERNLAB-REBOOT TestKernelArgsAcrossBoot")
		return
	}

	// The second boot: what GRUB's entry gave, less the dropped argument.
	running := strings.Fields(readFile(t, "/proc/cmdline"))
	t.Logf("/proc/cmdline: %s", strings.Join(running, " "))
	boot := strings.TrimSpace(readFile(t, bootIDFile))
	for _, a := range cmdTrees["took"] {
		if !slices.Contains(running, a) {
			t.Fatalf("%s is not on /proc/cmdline: run.sh did not boot the generated entry", a)
		}
	}
	// GRUB names the image by its path on its filesystem: the tree is
	// /dropped on the disk (grub-mkrelpath).
	image := "BOOT_IMAGE=/dropped/boot/vmlinuz-" + strings.TrimSpace(run(t, "/bin/uname", "-r"))
	if slices.Contains(running, cmdDrop) || !slices.Contains(running, image) {
		t.Fatalf("/proc/cmdline is not GRUB's entry (%s ...) less %s", image, cmdDrop)
	}

	took := trees["took"]
	for _, e := range cmdLedger(t, took) {
		if e.BootID == boot {
			t.Fatalf("a ledger entry of this boot before anything ran: %+v", e)
		}
	}
	if got := cmdStatus(t, took, 0); len(got) != 2 || got["iommu=pt"] != "took" || got["numa_balancing=disable"] != "took" {
		t.Errorf("took: status lists %v, want both arguments took", got)
	}
	// The running kernel has every argument: activate has nothing to do,
	// settles the ledger and proves the plan empty.
	chrootCode(t, took, 0, "activate", "-f", "/root/k.yaml")
	if out := chrootCode(t, took, 0, "plan", "-f", "/root/k.yaml"); !strings.Contains(out, "No changes") {
		t.Errorf("took: plan after activate is not empty:\n%s", out)
	}
	if exists(filepath.Join(took, "var/lib/rdmaform/staged-cmdline.json")) {
		t.Errorf("took: the ledger keeps arguments that took:\n%s", readFile(t, filepath.Join(took, "var/lib/rdmaform/staged-cmdline.json")))
	}

	// amd_iommu=off was written, update-grub ran, a reboot came, and the
	// kernel does not have it: an activation failure named at its spec
	// line, never staged again.
	dropped := trees["dropped"]
	cfg := filepath.Join(dropped, "boot/grub/grub.cfg")
	before := readFile(t, cfg)
	staged := cmdLedger(t, dropped)
	if got := cmdStatus(t, dropped, 1); got[cmdDrop] != "failed" || got["iommu=pt"] != "took" {
		t.Errorf("dropped: status lists %v, want %s failed and the others took", got, cmdDrop)
	}
	out := chrootCode(t, dropped, 1, "plan", "-f", "/root/k.yaml")
	if !strings.Contains(out, cmdDrop+" did not take") || !strings.Contains(out, "k.yaml:5:") {
		t.Errorf("dropped: plan does not name %s at its line as an activation failure:\n%s", cmdDrop, out)
	}
	for _, a := range cmdTrees["took"] {
		if strings.Contains(out, a+" did not take") {
			t.Errorf("dropped: plan calls %s an activation failure:\n%s", a, out)
		}
	}
	out = chrootCode(t, dropped, 1, "activate", "-f", "/root/k.yaml")
	if !strings.Contains(out, cmdDrop) {
		t.Errorf("dropped: activate does not name %s:\n%s", cmdDrop, out)
	}
	chrootCode(t, dropped, 1, "apply", "--yes", "-f", "/root/k.yaml")
	if readFile(t, cfg) != before {
		t.Errorf("dropped: apply wrote grub.cfg again after the activation failure")
	}
	after := cmdLedger(t, dropped)
	var kept *cmdEntry
	for i, e := range after {
		if e.Arg == cmdDrop {
			kept = &after[i]
		}
	}
	var first *cmdEntry
	for i, e := range staged {
		if e.Arg == cmdDrop {
			first = &staged[i]
		}
	}
	if first == nil || kept == nil || kept.BootID != first.BootID || kept.BootID == boot {
		t.Errorf("dropped: the ledger entry of %s before %+v, after %+v: want it kept with the first boot's ID (staged once)", cmdDrop, first, kept)
	}
}

// cmdStatus runs status -o json in root (exit want) and returns each
// listed kernel argument's state.
func cmdStatus(t *testing.T, root string, want int) map[string]string {
	t.Helper()
	_, out := chrootRun(t, root, want, "status", "-o", "json")
	var doc struct {
		KernelArgs []struct {
			Arg   string `json:"arg"`
			State string `json:"state"`
		} `json:"kernel_args"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("status -o json in %s: %v\n%s", root, err, out)
	}
	got := map[string]string{}
	for _, a := range doc.KernelArgs {
		got[a.Arg] = a.State
	}
	return got
}

// cmdEntry is the part of a ledger entry this test reads.
type cmdEntry struct {
	BootID string `json:"boot_id"`
	Arg    string `json:"arg"`
}

func cmdLedger(t *testing.T, root string) []cmdEntry {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "var/lib/rdmaform/staged-cmdline.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var l struct {
		Entries []cmdEntry `json:"entries"`
	}
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatalf("the ledger: %v\n%s", err, b)
	}
	return l.Entries
}

// grubLinuxLines are the arguments of grub.cfg's linux lines (the image
// left out), the first entry's first.
func grubLinuxLines(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(readFile(t, filepath.Join(root, "boot/grub/grub.cfg")), "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[0] == "linux" {
			out = append(out, strings.Join(f[2:], " "))
		}
	}
	if len(out) == 0 {
		t.Fatalf("grub.cfg in %s has no linux line", root)
	}
	return out
}

// mountCmdDisk mounts the second disk on cmdMnt (formatting it first when
// fresh) until the test ends; every mount made under it goes with it.
func mountCmdDisk(t *testing.T, fresh bool) {
	t.Helper()
	for _, m := range []string{"virtio_pci", "virtio_blk", "ext4"} {
		run(t, "/sbin/modprobe", m)
	}
	for i := 0; !exists(cmdDisk); i++ {
		if i == 100 {
			t.Fatalf("no %s: run.sh gives the guest a second disk for this test", cmdDisk)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if fresh {
		run(t, "/bin/busybox", "mke2fs", "-F", "-L", "cmdline", cmdDisk)
	}
	if err := os.MkdirAll(cmdMnt, 0o755); err != nil {
		t.Fatal(err)
	}
	guestMount(t, cmdDisk, cmdMnt, "ext2", 0)
}

// guestMount mounts and unmounts at the test's end (lazily, the last
// mount first).
func guestMount(t *testing.T, src, dst, fstype string, flags uintptr) {
	t.Helper()
	if err := syscall.Mount(src, dst, fstype, flags, ""); err != nil {
		t.Fatalf("mount %s on %s (%s): %v", src, dst, fstype, err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dst, syscall.MNT_DETACH) })
}

// cmdTree makes (in the first boot) or mounts again (in the second) the
// root tree NAME on the second disk: its own /etc/default (Debian's
// default grub file and an empty grub.d), /boot with a kernel image of
// the running kernel's version (update-grub lists the file; its content
// is not read), /var/lib/rdmaform and the spec in /root; the guest's
// programs and GRUB's scripts bound in, and its own proc, sys, dev, tmp
// and run. The tree is bound on itself so that it is a mount point.
func cmdTree(t *testing.T, name string, fresh bool) string {
	t.Helper()
	root := filepath.Join(cmdMnt, name)
	if fresh {
		for _, d := range []string{"bin", "sbin", "usr", "lib", "lib64", "etc/default/grub.d", "etc/grub.d", "boot/grub", "var/lib/rdmaform", "root", "proc", "sys", "dev", "tmp", "run", "opt/busybox"} {
			if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		uname := strings.TrimSpace(run(t, "/bin/uname", "-r"))
		files := map[string]string{
			"etc/default/grub":      readFile(t, "/usr/share/grub/default/grub"),
			"boot/vmlinuz-" + uname: "the running kernel's image is QEMU's -kernel; update-grub only lists this file\n",
			"root/k.yaml":           cmdSpec(cmdTrees[name]),
			"etc/hostname":          "rdmaform-guest\n",
			"etc/machine-id":        readFile(t, "/etc/machine-id"),
			"etc/passwd":            readFile(t, "/etc/passwd"),
			"etc/group":             readFile(t, "/etc/group"),
		}
		for f, s := range files {
			if err := os.WriteFile(filepath.Join(root, f), []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// Every busybox applet, for grub-mkconfig's scripts (the guest
		// links only some in /bin).
		for _, a := range strings.Fields(run(t, "/bin/busybox", "--list")) {
			if err := os.Symlink("/bin/busybox", filepath.Join(root, "opt/busybox", a)); err != nil {
				t.Fatal(err)
			}
		}
	}
	guestMount(t, root, root, "", syscall.MS_BIND)
	for _, d := range []string{"bin", "sbin", "usr", "lib", "lib64", "etc/grub.d"} {
		guestMount(t, "/"+d, filepath.Join(root, d), "", syscall.MS_BIND)
	}
	guestMount(t, "proc", filepath.Join(root, "proc"), "proc", 0)
	guestMount(t, "sysfs", filepath.Join(root, "sys"), "sysfs", 0)
	guestMount(t, "devtmpfs", filepath.Join(root, "dev"), "devtmpfs", 0)
	guestMount(t, "tmpfs", filepath.Join(root, "tmp"), "tmpfs", 0)
	guestMount(t, "tmpfs", filepath.Join(root, "run"), "tmpfs", 0)
	return root
}

// chrootCode runs rdmaform chrooted in root and fails the test unless it
// exits with want; it returns stdout and stderr together.
func chrootCode(t *testing.T, root string, want int, args ...string) string {
	t.Helper()
	all, _ := chrootRun(t, root, want, args...)
	return all
}

// lockedBuffer is the whole output, which stdout's and stderr's copying
// goroutines write at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// chrootRun is chrootCode returning the whole output, then stdout alone.
func chrootRun(t *testing.T, root string, want int, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(rdmaformBin, args...)
	var out lockedBuffer
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.MultiWriter(&out, &stdout), &out
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin:/opt/busybox", "HOME=/root", "NO_COLOR=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("rdmaform %s in %s: %v", strings.Join(args, " "), root, err)
	}
	t.Logf("(in %s) $ rdmaform %s  # exit %d\n%s", root, strings.Join(args, " "), code, out.String())
	if code != want {
		t.Fatalf("rdmaform %s in %s: exit %d, want %d\n%s", strings.Join(args, " "), root, code, want, out.String())
	}
	return out.String(), stdout.String()
}
