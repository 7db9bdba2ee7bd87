package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rdmaform/rdmaform/host"
)

// TestNFSOverRDMA: /proc/mounts lines as the kernel writes them
// (fs/proc_namespace.c show_vfsmnt: device, directory, type, options,
// "0 0", octal escapes; fs/nfs/super.c nfs_show_mount_options: proto= is
// the RPC transport's netid, "rdma" or "rdma6" for xprtrdma, "tcp" else).
func TestNFSOverRDMA(t *testing.T) {
	mounts := "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0\n" +
		"10.0.0.1:/export /mnt/data nfs4 rw,relatime,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,proto=rdma,port=20049,timeo=600,retrans=2,sec=sys,clientaddr=10.0.0.2,local_lock=none,addr=10.0.0.1 0 0\n" +
		"[fd00::1]:/scratch /mnt/my\\040scratch nfs rw,relatime,vers=3,proto=rdma6,port=20049,mountproto=tcp6 0 0\n" +
		"10.0.0.1:/home /home nfs4 rw,relatime,vers=4.2,proto=tcp,port=0 0 0\n" +
		"tmpfs /run/proto=rdma tmpfs rw,proto=rdma 0 0\n" +
		"broken line\n"
	got := nfsOverRDMA([]byte(mounts))
	want := []string{
		"NFS over RDMA mount 10.0.0.1:/export on /mnt/data (/proc/mounts: proto=rdma)",
		"NFS over RDMA mount [fd00::1]:/scratch on /mnt/my scratch (/proc/mounts: proto=rdma6)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("nfsOverRDMA:\n got %q\nwant %q", got, want)
	}
}

// TestUnescapeMount: /proc/mounts' escapes are a backslash and three
// octal digits (fs/proc_namespace.c mangle: seq_escape with " \t\n\\"),
// at the end of a path too; a backslash with fewer than three characters
// after it, or digits that are not octal, stays as it is.
func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		`/mnt/a\040b`:   "/mnt/a b",
		`/mnt/a\040`:    "/mnt/a ",
		`\011/mnt`:      "\t/mnt",
		`/mnt/a\134`:    `/mnt/a\`,
		`/mnt/a\04`:     `/mnt/a\04`,
		`/mnt/a\0`:      `/mnt/a\0`,
		`/mnt/a\`:       `/mnt/a\`,
		`/mnt/a\089`:    `/mnt/a\089`,
		`/mnt/a\040\04`: `/mnt/a \04`,
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

// noRDMATool is a host's runner where iproute2's rdma is not installed.
type noRDMATool struct{}

func (noRDMATool) Run(_ context.Context, c host.Cmd) (host.Result, error) {
	return host.Result{}, &host.ExitError{Cmd: c, Code: -1, Err: errors.New("executable file not found in $PATH")}
}

// TestRDMAUsersNVMeTargetPorts: an NVMe target port over RDMA
// (configfs: /sys/kernel/config/nvmet/ports/ID/addr_trtype, "rdma\n" as
// drivers/nvme/target/configfs.c nvmet_addr_trtype_show prints it) is a
// user of RDMA; a port over TCP is not, nor a port without the file. A
// controller over RDMA (/sys/class/nvme) is found beside it.
func TestRDMAUsersNVMeTargetPorts(t *testing.T) {
	root := t.TempDir()
	for f, v := range map[string]string{
		"sys/kernel/config/nvmet/ports/1/addr_trtype": "rdma\n",
		"sys/kernel/config/nvmet/ports/2/addr_trtype": "tcp\n",
		"sys/kernel/config/nvmet/ports/3/addr_traddr": "10.0.0.1\n",
		"sys/class/nvme/nvme0/transport":              "rdma\n",
	} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fsys, err := host.NewRootFS(root)
	if err != nil {
		t.Fatal(err)
	}
	got := RDMAUsers(context.Background(), &host.Host{FS: fsys, Runner: noRDMATool{}})
	want := []string{
		"NVMe over RDMA controller nvme0 (/sys/class/nvme/nvme0/transport: rdma)",
		"NVMe over RDMA target port 1 (/sys/kernel/config/nvmet/ports/1/addr_trtype: rdma)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RDMAUsers:\n got %q\nwant %q", got, want)
	}
}

// TestKernelCMIDs: `rdma -j resource show cm_id` as iproute2's
// rdma/res-cmid.c res_cm_id_line prints it (the keys in its order;
// "pid" only for a process's ID, print_comm without brackets in JSON):
// the kernel users, once per user and port; a process's ID is not one.
func TestKernelCMIDs(t *testing.T) {
	out := `[{"ifindex":0,"ifname":"mlx5_0","port":1,"cm-idn":0,"state":"LISTEN","ps":"TCP","comm":"rpcrdma","src-addr":"0.0.0.0:20049"},` +
		`{"ifindex":0,"ifname":"mlx5_0","port":1,"cm-idn":3,"lqpn":201,"qp-type":"RC","state":"CONNECT","ps":"TCP","comm":"rpcrdma","src-addr":"10.0.0.2:20049","dst-addr":"10.0.0.7:40112"},` +
		`{"ifindex":1,"ifname":"mlx5_1","port":1,"cm-idn":4,"lqpn":330,"qp-type":"RC","state":"CONNECT","ps":"TCP","comm":"nvme_rdma","src-addr":"10.0.1.2:47000","dst-addr":"10.0.1.9:4420"},` +
		`{"ifindex":0,"ifname":"mlx5_0","port":1,"cm-idn":5,"state":"LISTEN","ps":"TCP","pid":4242,"comm":"rping","src-addr":"0.0.0.0:7174"}]` + "\n"
	got := kernelCMIDs([]byte(out))
	want := []string{
		"rpcrdma (NFS over RDMA) on mlx5_0/1 (rdma resource show cm_id)",
		"nvme_rdma (NVMe over RDMA (initiator)) on mlx5_1/1 (rdma resource show cm_id)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("kernelCMIDs:\n got %q\nwant %q", got, want)
	}
	for _, bad := range []string{"", "[]\n", "error: no such file\n", `[{"ifname":"mlx5_0","port":1,"pid":1,"comm":"rping"}]`} {
		if got := kernelCMIDs([]byte(bad)); len(got) != 0 {
			t.Errorf("kernelCMIDs(%q) = %q, want none", bad, got)
		}
	}
}

// TestKernelCMIDsRealCaptures: `rdma -j resource show cm_id` as the
// kernel lab's 6.1 kernel and iproute2 6.1 print it with NVMe and NFS
// over RDMA on an rxe link (testdata/real/rdma, see PROVENANCE.md): one
// line per kernel user and device port, a listener bound to no address
// without a port.
func TestKernelCMIDsRealCaptures(t *testing.T) {
	for name, want := range map[string][]string{
		"cm_id-nvmet-listen": {"nvmet_rdma (NVMe over RDMA (target)) on rxeu/1 (rdma resource show cm_id)"},
		"cm_id-nvme-connected": {
			"nvmet_rdma (NVMe over RDMA (target)) on rxeu/1 (rdma resource show cm_id)",
			"nvme_rdma (NVMe over RDMA (initiator)) on rxeu/1 (rdma resource show cm_id)",
		},
		"cm_id-nfs-mounted": {
			"rpcrdma (NFS over RDMA) on rxeu (rdma resource show cm_id)",
			"rpcrdma (NFS over RDMA) on rxeu/1 (rdma resource show cm_id)",
		},
		"cm_id-none": nil,
	} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "real", "rdma", name+".stdout"))
		if err != nil {
			t.Fatal(err)
		}
		if got := kernelCMIDs(b); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %q\nwant %q", name, got, want)
		}
	}
}
