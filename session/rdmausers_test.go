package session

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
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
