//go:build kernlab

package guest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/session"
)

// Kernel users of RDMA that a firmware reset would break, made for real
// on this kernel over an rxe device: an NVMe over Fabrics target port and
// a host controller connected to it over RDMA (nvmet and nvme-rdma driven
// through configfs and /dev/nvme-fabrics, as nvmetcli and nvme-cli do),
// and an NFS mount over RDMA of the guest's own knfsd (see
// TestNFSOverRDMAUser). rdmaform's check (the one activate --by fw-reset
// refuses with, session.RDMAUsers: no rdmaform command reaches it
// without a ConnectX card) must name each, from the real
// sysfs, configfs, /proc/mounts and `rdma resource`, and nothing once
// they are gone.

const (
	usersAddr   = "192.0.2.41"
	usersNQN    = "nqn.2026-11.org.rdmaform:kernlab"
	nvmetDir    = "/sys/kernel/config/nvmet"
	nvmetPort   = nvmetDir + "/ports/1"
	nvmetSubsys = nvmetDir + "/subsystems/" + usersNQN
)

// rdmaUsers is rdmaform's check on this guest.
func rdmaUsers(t *testing.T) []string {
	t.Helper()
	h, err := host.NewLive(os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	users := session.RDMAUsers(context.Background(), h)
	t.Logf("rdmaform's RDMA users:\n  %s", strings.Join(users, "\n  "))
	return users
}

// usersRxe makes rxe device rxeu on a veth end with usersAddr, and
// removes it (and unloads rdma_rxe) when the test ends.
func usersRxe(t *testing.T) {
	t.Helper()
	leaveNoRxe(t, "rxeu")
	run(t, "/sbin/modprobe", "rdma_rxe")
	veth(t, "usa", "usb")
	run(t, "/sbin/ip", "addr", "add", usersAddr+"/24", "dev", "usa")
	run(t, "/sbin/rdma", "link", "add", "rxeu", "type", "rxe", "netdev", "usa")
}

// ensureConfigfs loads configfs (the module makes its mount point) and
// mounts it unless it is mounted, until the test ends.
func ensureConfigfs(t *testing.T) {
	t.Helper()
	run(t, "/sbin/modprobe", "configfs")
	if !strings.Contains(readFile(t, "/proc/mounts"), " /sys/kernel/config configfs ") {
		run(t, "/bin/mount", "-t", "configfs", "none", "/sys/kernel/config")
		t.Cleanup(func() { _, _ = tryRun("/bin/umount", "/sys/kernel/config") })
	}
}

// write writes a value to a sysfs, configfs or /proc file.
func write(t *testing.T, name, value string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(value), 0o644); err != nil {
		t.Fatalf("echo %q > %s: %v", value, name, err)
	}
}

// mkdir makes a configfs group.
func mkdir(t *testing.T, name string) {
	t.Helper()
	if err := os.Mkdir(name, 0o755); err != nil {
		t.Fatal(err)
	}
}

// wantUsers fails unless users holds each of want.
func wantUsers(t *testing.T, users []string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(users, w) {
			t.Errorf("rdmaform does not name %q; it names:\n  %s", w, strings.Join(users, "\n  "))
		}
	}
}

// cmIDs is `rdma -j resource show cm_id` of this guest, logged: the
// real output rdmaform parses.
func cmIDs(t *testing.T) {
	t.Helper()
	t.Logf("rdma -j resource show cm_id:\n%s", run(t, "/sbin/rdma", "-j", "resource", "show", "cm_id"))
}

func TestNVMeOverRDMAUsers(t *testing.T) {
	usersRxe(t)
	ensureConfigfs(t)
	if users := rdmaUsers(t); len(users) != 0 {
		t.Fatalf("RDMA users before any was made: %q", users)
	}

	// The target: a subsystem with a null_blk namespace, a port over RDMA
	// on the rxe device's address, as nvmetcli writes them.
	run(t, "/sbin/modprobe", "null_blk", "nr_devices=1")
	t.Cleanup(func() { _, _ = tryRun("/sbin/modprobe", "-r", "null_blk") })
	run(t, "/sbin/modprobe", "nvmet_rdma")
	t.Cleanup(func() { nvmetTeardown(t) })
	mkdir(t, nvmetSubsys)
	write(t, nvmetSubsys+"/attr_allow_any_host", "1")
	mkdir(t, nvmetSubsys+"/namespaces/1")
	write(t, nvmetSubsys+"/namespaces/1/device_path", "/dev/nullb0")
	write(t, nvmetSubsys+"/namespaces/1/enable", "1")
	mkdir(t, nvmetPort)
	write(t, nvmetPort+"/addr_trtype", "rdma")
	write(t, nvmetPort+"/addr_adrfam", "ipv4")
	write(t, nvmetPort+"/addr_traddr", usersAddr)
	write(t, nvmetPort+"/addr_trsvcid", "4420")
	// Linking the subsystem to the port makes nvmet_rdma listen.
	if err := os.Symlink(nvmetSubsys, nvmetPort+"/subsystems/"+usersNQN); err != nil {
		t.Fatal(err)
	}
	cmIDs(t)
	users := rdmaUsers(t)
	wantUsers(t, users,
		"nvmet_rdma (NVMe over RDMA (target)) holding the RDMA core (/sys/module/ib_core/holders)",
		"NVMe over RDMA target port 1 (/sys/kernel/config/nvmet/ports/1/addr_trtype: rdma)",
		"nvmet_rdma (NVMe over RDMA (target)) on rxeu/1 (rdma resource show cm_id)")

	// The host: a controller over RDMA, connected as nvme-cli does it
	// (drivers/nvme/host/fabrics.c opt_tokens), without nvme-cli.
	run(t, "/sbin/modprobe", "nvme_rdma")
	ctrl := nvmeConnect(t, fmt.Sprintf("transport=rdma,traddr=%s,trsvcid=4420,nqn=%s", usersAddr, usersNQN))
	cmIDs(t)
	users = rdmaUsers(t)
	wantUsers(t, users,
		"nvme_rdma (NVMe over RDMA (initiator)) holding the RDMA core (/sys/module/ib_core/holders)",
		"nvmet_rdma (NVMe over RDMA (target)) holding the RDMA core (/sys/module/ib_core/holders)",
		fmt.Sprintf("NVMe over RDMA controller %s (/sys/class/nvme/%s/transport: rdma)", ctrl, ctrl),
		"NVMe over RDMA target port 1 (/sys/kernel/config/nvmet/ports/1/addr_trtype: rdma)",
		"nvme_rdma (NVMe over RDMA (initiator)) on rxeu/1 (rdma resource show cm_id)",
		"nvmet_rdma (NVMe over RDMA (target)) on rxeu/1 (rdma resource show cm_id)")
	refusedFor(t,
		fmt.Sprintf("NVMe over RDMA controller %s (/sys/class/nvme/%s/transport: rdma)", ctrl, ctrl),
		"NVMe over RDMA target port 1 (/sys/kernel/config/nvmet/ports/1/addr_trtype: rdma)",
		"nvme_rdma (NVMe over RDMA (initiator)) holding the RDMA core")

	// Disconnected, the port removed and the modules unloaded (what an
	// operator stops before a reset): nothing is left to refuse for.
	write(t, "/sys/class/nvme/"+ctrl+"/delete_controller", "1")
	for i := 0; exists("/sys/class/nvme/" + ctrl); i++ {
		if i == 300 {
			t.Fatalf("%s is still there 30 s after delete_controller", ctrl)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The controller and its connections are gone; the loaded nvme_rdma
	// module still holds the RDMA core (and is named for it).
	users = rdmaUsers(t)
	if slices.ContainsFunc(users, func(u string) bool {
		return strings.Contains(u, "controller") || strings.HasPrefix(u, "nvme_rdma (NVMe over RDMA (initiator)) on ")
	}) {
		t.Errorf("the disconnected controller is still named: %q", users)
	}
	wantUsers(t, users, "nvme_rdma (NVMe over RDMA (initiator)) holding the RDMA core (/sys/module/ib_core/holders)")
	nvmetTeardown(t)
	rmmod(t, "nvme_rdma", "nvmet_rdma")
	cmIDs(t)
	if users := rdmaUsers(t); len(users) != 0 {
		t.Errorf("RDMA users after the teardown: %q", users)
	}
	notRefused(t)
}

// nvmeConnect writes a connect string to /dev/nvme-fabrics and returns
// the new controller's name from the kernel's answer (instance=N,cntlid=M).
func nvmeConnect(t *testing.T, opts string) string {
	t.Helper()
	f, err := os.OpenFile("/dev/nvme-fabrics", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte(opts)); err != nil {
		t.Fatalf("echo %q > /dev/nvme-fabrics: %v\n%s", opts, err, run(t, "/bin/dmesg"))
	}
	b := make([]byte, 256)
	n, err := f.Read(b)
	if err != nil {
		t.Fatal(err)
	}
	answer := strings.TrimSpace(string(b[:n]))
	t.Logf("/dev/nvme-fabrics: %s", answer)
	var inst, cntlid int
	if _, err := fmt.Sscanf(answer, "instance=%d,cntlid=%d", &inst, &cntlid); err != nil {
		t.Fatalf("/dev/nvme-fabrics answered %q: %v", answer, err)
	}
	ctrl := fmt.Sprintf("nvme%d", inst)
	t.Cleanup(func() {
		if exists("/sys/class/nvme/" + ctrl) {
			_ = os.WriteFile("/sys/class/nvme/"+ctrl+"/delete_controller", []byte("1"), 0)
		}
	})
	return ctrl
}

// nvmetTeardown removes the target as nvmetcli clear does; what is not
// there is skipped.
func nvmetTeardown(t *testing.T) {
	t.Helper()
	for _, step := range []func() error{
		func() error { return os.Remove(nvmetPort + "/subsystems/" + usersNQN) },
		func() error { return os.Remove(nvmetPort) },
		func() error { return os.WriteFile(nvmetSubsys+"/namespaces/1/enable", []byte("0"), 0) },
		func() error { return os.Remove(nvmetSubsys + "/namespaces/1") },
		func() error { return os.Remove(nvmetSubsys) },
	} {
		if err := step(); err != nil && !os.IsNotExist(err) {
			t.Errorf("removing the NVMe target: %v", err)
		}
	}
}

// TestNFSOverRDMAUser mounts an NFS export of the guest's own knfsd over
// RDMA, without nfs-utils: nfsd is driven through its filesystem
// (/proc/fs/nfsd: versions, an rdma listener in portlist, threads) and
// the export caches that rpc.mountd would fill are filled through their
// channels (/proc/net/rpc/*/channel, the formats of fs/nfsd/export.c and
// net/sunrpc/svcauth_unix.c); the client mounts with mount(2) and
// proto=rdma. NFSv4.2 only: it needs neither rpcbind nor mountd.
func TestNFSOverRDMAUser(t *testing.T) {
	usersRxe(t)
	if users := rdmaUsers(t); len(users) != 0 {
		t.Fatalf("RDMA users before any was made: %q", users)
	}
	for _, m := range []string{"rpcrdma", "nfsd", "nfsv4"} {
		run(t, "/sbin/modprobe", m)
	}
	const nfsdFS, export, mnt = "/proc/fs/nfsd", "/srv/rdmaexport", "/mnt/rdmanfs"
	for _, d := range []string{export, mnt} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mount("tmpfs", export, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(export, syscall.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(export, "hello"), []byte("over rdma\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("nfsd", nfsdFS, "nfsd", 0, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = os.WriteFile(nfsdFS+"/threads", []byte("0\n"), 0)
		_ = syscall.Unmount(nfsdFS, 0)
	})
	write(t, nfsdFS+"/versions", "-2 -3 +4 +4.1 +4.2\n")
	// The shortest lease and grace period (10 s, nfsd4_write_time): the
	// client's first OPEN waits for the grace period to end.
	write(t, nfsdFS+"/nfsv4leasetime", "10\n")
	write(t, nfsdFS+"/nfsv4gracetime", "10\n")
	write(t, nfsdFS+"/portlist", "rdma 20049\n")
	write(t, nfsdFS+"/threads", "2\n")
	t.Logf("%s/portlist: %s", nfsdFS, readFile(t, nfsdFS+"/portlist"))
	// What rpc.mountd answers: the client's address is in domain
	// "rdmaform", which exports the tmpfs as the NFSv4 root (fsid=0):
	// flags NFSEXP_INSECURE_PORT|NFSEXP_NOSUBTREECHECK|NFSEXP_FSID.
	const expiry = "2147483647"
	write(t, "/proc/net/rpc/auth.unix.ip/channel", "nfsd "+usersAddr+" "+expiry+" rdmaform\n")
	write(t, "/proc/net/rpc/nfsd.export/channel", "rdmaform "+export+" "+expiry+" 9218 65534 65534 0\n")
	write(t, "/proc/net/rpc/nfsd.fh/channel", "rdmaform 1 \\x00000000 "+expiry+" "+export+"\n")

	opts := "vers=4.2,proto=rdma,port=20049,addr=" + usersAddr + ",clientaddr=" + usersAddr + ",soft,timeo=100,retrans=2"
	done := make(chan error, 1)
	go func() { done <- syscall.Mount(usersAddr+":/", mnt, "nfs4", 0, opts) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("mount -t nfs4 -o %s %s:/ %s: %v\n%s", opts, usersAddr, mnt, err, run(t, "/bin/dmesg"))
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("mount -t nfs4 over RDMA did not return in 3 minutes\n%s", run(t, "/bin/dmesg"))
	}
	t.Cleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_FORCE|syscall.MNT_DETACH) })
	for _, l := range strings.Split(readFile(t, "/proc/mounts"), "\n") {
		if strings.Contains(l, mnt) {
			t.Logf("/proc/mounts: %s", l)
		}
	}
	cmIDs(t)
	users := rdmaUsers(t)
	wantUsers(t, users,
		"rpcrdma (NFS over RDMA) holding the RDMA core (/sys/module/ib_core/holders)",
		"NFS over RDMA mount "+usersAddr+":/ on "+mnt+" (/proc/mounts: proto=rdma)",
		// The server's listener (bound to no address: on every device, no
		// port) and both ends of the connection.
		"rpcrdma (NFS over RDMA) on rxeu (rdma resource show cm_id)",
		"rpcrdma (NFS over RDMA) on rxeu/1 (rdma resource show cm_id)")
	refusedFor(t, "NFS over RDMA mount "+usersAddr+":/ on "+mnt+" (/proc/mounts: proto=rdma)")

	// A file read through the mount (its OPEN waits for the end of the
	// server's grace period, which passed during the checks above).
	if got := readFile(t, filepath.Join(mnt, "hello")); got != "over rdma\n" {
		t.Errorf("the file read over NFS/RDMA: %q", got)
	}

	// Unmounted and the server stopped: only the module is left. The
	// client ends its NFSv4 session after umount(2) returns (its last
	// RPCs to the server, from the state manager): the server stays up
	// until the client has let go of nfsv4, else those RPCs retry (soft,
	// timeo 10 s, 2 retransmissions) and hold the module past rmmod's
	// wait, as a CI run saw once.
	if err := syscall.Unmount(mnt, 0); err != nil {
		t.Fatal(err)
	}
	released(t, "nfsv4", 90*time.Second)
	write(t, nfsdFS+"/threads", "0\n")
	users = rdmaUsers(t)
	if slices.ContainsFunc(users, func(u string) bool { return strings.HasPrefix(u, "NFS over RDMA mount") }) {
		t.Errorf("the unmounted NFS is still named: %q", users)
	}
	if err := syscall.Unmount(nfsdFS, 0); err != nil {
		t.Fatal(err)
	}
	rmmod(t, "nfsv4", "nfsd", "rpcrdma")
	cmIDs(t)
	if users := rdmaUsers(t); len(users) != 0 {
		t.Errorf("RDMA users after the teardown: %q", users)
	}
}

// released waits up to limit for nothing to hold module m (its
// /sys/module/M/refcnt 0).
func released(t *testing.T, m string, limit time.Duration) {
	t.Helper()
	var n string
	start := time.Now()
	for end := start.Add(limit); ; time.Sleep(500 * time.Millisecond) {
		n = strings.TrimSpace(readFile(t, "/sys/module/"+m+"/refcnt"))
		if n == "0" {
			t.Logf("%s released %s after the unmount", m, time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s still held (refcnt %s) %s after the unmount\n%s", m, n, limit, run(t, "/bin/dmesg"))
		}
	}
}

// rmmod unloads modules and the ones they needed that nothing else uses
// (modprobe -r: later guest tests want a guest that starts clean), asking
// again for up to 30 s while one is still in use (the kernel releases
// RDMA queues and RPC transports from work queues after a disconnect).
func rmmod(t *testing.T, mods ...string) {
	t.Helper()
	for _, m := range mods {
		for i := 0; ; i++ {
			out, err := tryRun("/sbin/modprobe", "-r", m)
			if err == nil {
				break
			}
			if i == 60 {
				t.Fatalf("modprobe -r %s: %v\n%s", m, err, out)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
}
