package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Kernel users of RDMA besides modules (State.Mounts, NVMe, KernelCMIDs):
// what a firmware reset of an adapter under them would break, as the
// kernel shows them.

// Mount is a file system in /proc/mounts besides sysfs and configfs,
// written as the kernel's show_vfsmnt does: device, directory, type,
// options, "0 0". An NFS mount over RDMA has proto=rdma in its options
// (fs/nfs/super.c nfs_show_mount_options prints the RPC transport's
// netid, "rdma" or "rdma6" for xprtrdma).
type Mount struct {
	Device  string `yaml:"device"`
	Dir     string `yaml:"dir"`
	Type    string `yaml:"type"`
	Options string `yaml:"options"`
}

// NVMeController is an NVMe controller: /sys/class/nvme/NAME/transport
// holds its transport's name (drivers/nvme/host/core.c
// nvme_sysfs_show_transport: ctrl->ops->name, "rdma" for nvme-rdma,
// "tcp", "pcie", "loop", "fc").
type NVMeController struct {
	Name      string `yaml:"name"`
	Transport string `yaml:"transport"`
}

// CMID is an rdma_cm ID a kernel user holds (NFS over RDMA's rpcrdma,
// nvme_rdma, nvmet_rdma, ib_iser, ko2iblnd): `rdma resource show cm_id`
// lists it without a pid, its comm the kernel user's name.
type CMID struct {
	Dev     string `yaml:"dev"`
	Port    int    `yaml:"port"`
	Comm    string `yaml:"comm"`
	State   string `yaml:"state"` // LISTEN, CONNECT
	PS      string `yaml:"ps"`    // TCP, UDP, IPOIB
	SrcAddr string `yaml:"src_addr"`
}

// renderUsers writes the mounts and NVMe controllers into the tree.
func (s *State) renderUsers(t *tree) {
	var b strings.Builder
	b.WriteString("sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0\n")
	if s.configfsMounted() {
		b.WriteString("configfs /sys/kernel/config configfs rw,nosuid,nodev,noexec,relatime 0 0\n")
	}
	for _, m := range s.Mounts {
		fmt.Fprintf(&b, "%s %s %s %s 0 0\n", m.Device, m.Dir, m.Type, m.Options)
	}
	t.file("/proc/mounts", b.String())
	for _, c := range s.NVMe {
		t.file("/sys/class/nvme/"+c.Name+"/transport", c.Transport+"\n")
	}
}

// rdmaTool emulates iproute2's rdma for `rdma -j resource show cm_id`:
// the kernel users' rdma_cm IDs as rdma/res-cmid.c's res_cm_id_line
// prints them in JSON (ifindex, ifname, port, cm-idn, state, ps, comm,
// src-addr as ADDR:PORT; no pid: a kernel user's).
func rdmaTool(_ context.Context, s *Sim, args []string, _ []byte) (string, string, int) {
	if strings.Join(args, " ") != "-j resource show cm_id" {
		return "", fmt.Sprintf("rdma %s: not emulated (the simulator knows -j resource show cm_id)\n", strings.Join(args, " ")), 1
	}
	type line struct {
		Ifindex int    `json:"ifindex"`
		Ifname  string `json:"ifname"`
		Port    int    `json:"port"`
		CMIDN   int    `json:"cm-idn"`
		State   string `json:"state"`
		PS      string `json:"ps"`
		Comm    string `json:"comm"`
		SrcAddr string `json:"src-addr"`
	}
	out := []line{}
	s.view(func(st *State) {
		for i, c := range st.KernelCMIDs {
			idx := 0
			for j, d := range st.Devices {
				if d.Name == c.Dev {
					idx = j
				}
			}
			out = append(out, line{Ifindex: idx, Ifname: c.Dev, Port: c.Port, CMIDN: i, State: c.State, PS: c.PS, Comm: c.Comm, SrcAddr: c.SrcAddr})
		}
	})
	b, _ := json.Marshal(out)
	return string(b) + "\n", "", 0
}
