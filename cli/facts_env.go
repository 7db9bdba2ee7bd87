package cli

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/providers/rdmacm"
)

// What the communication libraries need (facts -o env), and the NIC-GPU
// affinity a job launcher reads (facts -o affinity).
//
// The rails are the ports of the host's RDMA devices but virtual
// functions, in rail order: by NUMA node (unknown last), then PCI
// address, then port; software devices (rxe, no PCI function) after
// them, by name. A launcher that gives local rank i the i-th rail of its
// NUMA node gets the order NCCL's topology search prefers.

// rail is one port of a rail.
type rail struct {
	dev  *inventory.Device
	port *inventory.Port
}

func (r rail) hca() string { return r.dev.Name + ":" + strconv.Itoa(r.port.Num) }

// railsOf are the inventory's rails in rail order.
func railsOf(f host.FS, inv *inventory.Inventory) []rail {
	var devs []*inventory.Device
	for _, d := range inv.Devices {
		if d.PCI != "" && host.Exists(f, path.Join(inventory.BusPCI, d.PCI, "physfn")) {
			continue // a virtual function: a VM's or a container's, no rail
		}
		devs = append(devs, d)
	}
	numa := func(d *inventory.Device) int {
		if d.NUMANode < 0 {
			return int(^uint(0) >> 1)
		}
		return d.NUMANode
	}
	sort.SliceStable(devs, func(i, j int) bool {
		a, b := devs[i], devs[j]
		if (a.PCI == "") != (b.PCI == "") {
			return a.PCI != ""
		}
		if a.PCI == "" {
			return a.Name < b.Name
		}
		if numa(a) != numa(b) {
			return numa(a) < numa(b)
		}
		return a.PCI < b.PCI
	})
	var out []rail
	for _, d := range devs {
		ports := append([]*inventory.Port(nil), d.Ports...)
		sort.Slice(ports, func(i, j int) bool { return ports[i].Num < ports[j].Num })
		for _, p := range ports {
			out = append(out, rail{dev: d, port: p})
		}
	}
	return out
}

// ipv4Mapped is the prefix of a GID that holds an IPv4 address
// (::ffff:a.b.c.d), as sysfs prints it.
const ipv4Mapped = "0000:0000:0000:0000:0000:ffff:"

// railGID is the RoCE v2 GID index of a rail's address: among the port's
// RoCE v2 GIDs that are not link-local (fe80::), an IPv4 address on the
// port's own netdev first, then an IPv4 address on another netdev of the
// port (a VLAN), then any other address on the port's netdev, then on
// another; the lowest index of the first class that has one. ok is false
// when the port has none.
func railGID(p *inventory.Port) (g inventory.GID, ok bool) {
	own := map[string]bool{}
	for _, n := range p.Netdevs {
		own[n] = true
	}
	best := 5
	for _, x := range p.GIDs {
		if x.Type != inventory.GIDRoCEv2 || strings.HasPrefix(x.GID, "fe80:") {
			continue
		}
		class := 4
		switch v4 := strings.HasPrefix(x.GID, ipv4Mapped); {
		case v4 && own[x.Netdev]:
			class = 1
		case v4:
			class = 2
		case own[x.Netdev]:
			class = 3
		}
		if class < best || (class == best && x.Index < g.Index) {
			g, best, ok = x, class, true
		}
	}
	return g, ok
}

// envLine is one KEY=value line for a POSIX shell: the value single-quoted
// unless every byte is one no shell treats specially.
func envLine(key, val string) string {
	safe := val != ""
	for _, c := range []byte(val) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_.,:=+-@/%", c) >= 0) {
			safe = false
			break
		}
	}
	if safe {
		return key + "=" + val
	}
	return key + "='" + strings.ReplaceAll(val, "'", `'\''`) + "'"
}

// factsEnv prints the NCCL variables of the host. A variable whose value
// cannot be told (no RoCE v2 GID on a rail, rails that disagree, rdma_cm
// not loaded) is left out with a warning on stderr naming why; the exit
// code stays 0, as the other lines hold.
func (a *app) factsEnv(ctx context.Context, h *host.Host, inv *inventory.Inventory) {
	out, warn := a.env.Stdout, func(format string, args ...any) {
		fmt.Fprintf(a.env.Stderr, "rdmaform: warning: "+format+"\n", args...)
	}
	rails := railsOf(h.FS, inv)
	if len(rails) == 0 {
		warn("no RDMA device: no NCCL_IB_HCA")
	} else {
		var hcas []string
		for _, r := range rails {
			hcas = append(hcas, r.hca())
		}
		// "=": exact names (NCCL matches prefixes otherwise: mlx5_1 would
		// take mlx5_10).
		fmt.Fprintln(out, envLine("NCCL_IB_HCA", "="+strings.Join(hcas, ",")))
	}
	var roce []rail
	for _, r := range rails {
		if r.port.LinkLayer == linklayer.Ethernet {
			roce = append(roce, r)
		}
	}
	if len(roce) > 0 {
		idx, bad := -1, ""
		for _, r := range roce {
			g, ok := railGID(r.port)
			switch {
			case !ok:
				bad = fmt.Sprintf("%s has no RoCE v2 GID with an address", r.hca())
			case idx >= 0 && g.Index != idx:
				bad = fmt.Sprintf("the rails' RoCE v2 GID indexes differ (%s: %d, others %d)", r.hca(), g.Index, idx)
			default:
				idx = g.Index
				continue
			}
			break
		}
		if bad != "" {
			warn("no NCCL_IB_GID_INDEX: %s", bad)
		} else {
			fmt.Fprintln(out, envLine("NCCL_IB_GID_INDEX", strconv.Itoa(idx)))
		}
		tos, bad := -1, ""
		for _, r := range roce {
			v, err := rdmacm.ReadPort(ctx, h, r.dev.Name, r.port.Num)
			switch {
			case err != nil:
				bad = fmt.Sprintf("%s's RoCE ToS (rdma_cm's default_roce_tos) cannot be read: %v", r.hca(), err)
			case tos >= 0 && v.Tos != tos:
				bad = fmt.Sprintf("the rails' RoCE ToS differ (%s: %d, others %d)", r.hca(), v.Tos, tos)
			default:
				tos = v.Tos
				continue
			}
			break
		}
		if bad != "" {
			warn("no NCCL_IB_TC: %s", bad)
		} else {
			fmt.Fprintln(out, envLine("NCCL_IB_TC", strconv.Itoa(tos)))
		}
	}
	var links []string
	if rl, ok := h.Net.(host.RouteLister); ok {
		var err error
		if links, err = rl.DefaultRouteLinks(); err != nil {
			warn("no NCCL_SOCKET_IFNAME: reading the default routes: %v", err)
			return
		}
	}
	if len(links) == 0 {
		warn("no NCCL_SOCKET_IFNAME: no default route")
		return
	}
	sort.Strings(links)
	fmt.Fprintln(out, envLine("NCCL_SOCKET_IFNAME", "="+strings.Join(links, ",")))
}

// AffinityDoc is facts -o affinity: each GPU and its nearest rails.
type AffinityDoc struct {
	FormatVersion int           `json:"format_version"`
	GPUs          []GPUAffinity `json:"gpus"`
}

// GPUAffinity is one GPU and the rails of its nearest relation.
type GPUAffinity struct {
	PCI      string `json:"pci"`
	NUMANode int    `json:"numa_node"`
	// Relation is the nearest relation ("" when no rail has a PCI path to
	// the GPU); NICs are the rails at it, in rail order.
	Relation string        `json:"relation"`
	NICs     []AffinityNIC `json:"nics"`
}

// AffinityNIC is one rail as a GPU's neighbour.
type AffinityNIC struct {
	HCA      string   `json:"hca"` // mlx5_0:1, as NCCL_IB_HCA names it
	RDMA     string   `json:"rdma"`
	PCI      string   `json:"pci"`
	Port     int      `json:"port"`
	Netdevs  []string `json:"netdevs"`
	NUMANode int      `json:"numa_node"`
	Bridges  []string `json:"bridges"`
}

// affinityOf is the affinity document of the inventory.
func affinityOf(f host.FS, inv *inventory.Inventory) AffinityDoc {
	doc := AffinityDoc{FormatVersion: FormatVersion, GPUs: []GPUAffinity{}}
	rails := railsOf(f, inv)
	for _, g := range inv.GPUs {
		ga := GPUAffinity{PCI: g.PCI, NUMANode: g.NUMANode, NICs: []AffinityNIC{}}
		best := inventory.Relation(0)
		for _, r := range rails {
			for _, x := range r.dev.GPUAffinity {
				if x.GPU == g.PCI && (best == 0 || x.Relation < best) {
					best = x.Relation
				}
			}
		}
		if best != 0 {
			ga.Relation = best.String()
		}
		for _, r := range rails {
			for _, x := range r.dev.GPUAffinity {
				if x.GPU != g.PCI || x.Relation != best {
					continue
				}
				ga.NICs = append(ga.NICs, AffinityNIC{HCA: r.hca(), RDMA: r.dev.Name, PCI: r.dev.PCI, Port: r.port.Num,
					Netdevs: append([]string{}, r.port.Netdevs...), NUMANode: r.dev.NUMANode, Bridges: append([]string{}, x.Bridges...)})
			}
		}
		doc.GPUs = append(doc.GPUs, ga)
	}
	return doc
}
