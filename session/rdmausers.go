package session

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/host"
)

// RDMAUsers names the kernel users of RDMA that a firmware reset would
// break, each with where it was found, sorted:
//   - the modules of rdmaConsumers holding the RDMA core
//     (/sys/module/ib_core/holders);
//   - NFS mounted over RDMA (/proc/mounts: an nfs or nfs4 mount whose
//     options hold proto=rdma or proto=rdma6; the kernel prints the RPC
//     transport's netid there, fs/nfs/super.c nfs_show_mount_options, so
//     `mount -o rdma` shows as proto=rdma too);
//   - NVMe over Fabrics controllers over RDMA (/sys/class/nvme/*/transport
//     "rdma", drivers/nvme/host/core.c nvme_sysfs_show_transport) and NVMe
//     target ports over RDMA (/sys/kernel/config/nvmet/ports/*/addr_trtype
//     "rdma");
//   - rdma_cm IDs the kernel holds (`rdma -j resource show cm_id`: an
//     entry without a pid is a kernel user's, its comm names it), when
//     iproute2's rdma is installed; a missing or failing rdma tool is
//     skipped (the other sources still count).
//
// Equivalent to: ls /sys/module/ib_core/holders; cat /proc/mounts /sys/class/nvme/*/transport; rdma -j resource show cm_id
func RDMAUsers(ctx context.Context, h *host.Host) []string {
	var out []string
	if es, err := h.FS.ReadDir("/sys/module/ib_core/holders"); err == nil {
		for _, e := range es {
			if what, ok := rdmaConsumers[e.Name()]; ok {
				out = append(out, e.Name()+" ("+what+") holding the RDMA core (/sys/module/ib_core/holders)")
			}
		}
	}
	if b, err := h.FS.ReadFile("/proc/mounts"); err == nil {
		out = append(out, nfsOverRDMA(b)...)
	}
	for _, g := range []struct{ dir, file, what string }{
		{"/sys/class/nvme", "transport", "NVMe over RDMA controller %s (%s: rdma)"},
		{"/sys/kernel/config/nvmet/ports", "addr_trtype", "NVMe over RDMA target port %s (%s: rdma)"},
	} {
		es, err := h.FS.ReadDir(g.dir)
		if err != nil {
			continue
		}
		for _, e := range es {
			f := path.Join(g.dir, e.Name(), g.file)
			if v, err := host.ReadAttr(h.FS, f); err == nil && v == "rdma" {
				out = append(out, fmt.Sprintf(g.what, e.Name(), f))
			}
		}
	}
	if res, err := h.Runner.Run(ctx, host.Cmd{Args: []string{"rdma", "-j", "resource", "show", "cm_id"}}); err == nil {
		out = append(out, kernelCMIDs(res.Stdout)...)
	}
	sort.Strings(out)
	return out
}

// nfsOverRDMA lists the NFS mounts over RDMA of a /proc/mounts.
func nfsOverRDMA(mounts []byte) []string {
	var out []string
	for _, line := range strings.Split(string(mounts), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || (f[2] != "nfs" && f[2] != "nfs4") {
			continue
		}
		for _, o := range strings.Split(f[3], ",") {
			if o == "proto=rdma" || o == "proto=rdma6" {
				out = append(out, fmt.Sprintf("NFS over RDMA mount %s on %s (/proc/mounts: %s)", unescapeMount(f[0]), unescapeMount(f[1]), o))
				break
			}
		}
	}
	return out
}

// unescapeMount undoes /proc/mounts' octal escapes (\040 for a space).
func unescapeMount(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// kernelCMIDs lists the kernel users of rdma_cm in `rdma -j resource show
// cm_id` (iproute2 rdma/res-cmid.c: "pid" only for a process's ID; a
// kernel user's "comm" is its module), one line per user and device port.
func kernelCMIDs(out []byte) []string {
	var ids []struct {
		Ifname string          `json:"ifname"`
		Port   int             `json:"port"`
		Comm   string          `json:"comm"`
		PID    json.RawMessage `json:"pid"`
	}
	if err := json.Unmarshal(out, &ids); err != nil {
		return nil
	}
	seen := map[string]bool{}
	var users []string
	for _, id := range ids {
		if id.PID != nil || id.Comm == "" {
			continue
		}
		what := id.Comm
		if w, ok := rdmaConsumers[id.Comm]; ok {
			what += " (" + w + ")"
		}
		link := id.Ifname
		if id.Port > 0 {
			link += "/" + strconv.Itoa(id.Port)
		}
		s := fmt.Sprintf("%s on %s (rdma resource show cm_id)", what, link)
		if !seen[s] {
			seen[s] = true
			users = append(users, s)
		}
	}
	return users
}
