// Package bench measures rdmaform against the ways the same work is done
// without it: plan wall time on simulated GPU nodes against a scripted
// sequential mlxconfig loop, tool runs per plan, IPoIB connections on a
// real NetworkManager against Ansible's community.general.nmcli, and the
// CPU and memory cost of a 2,000-resource spec. `make bench` runs it all
// (bench/cmd/rdmaform-bench) and prints one table; the Go benchmarks in
// bench_test.go are the CPU and allocation figures (go test -bench
// -benchmem). Benchmarks only: nothing here asserts a timing.
package bench

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rdmaform/rdmaform/sim"
)

// AllTools are the emulated programs of a gpu-node host; each gets the
// same latency so the benchmark counts rounds of tool runs, whatever the
// tool.
var AllTools = []string{"dcb", "ethtool", "mlxconfig", "mlxfwreset", "mst", "modprobe", "nmcli", "systemctl"}

// GPUNode creates a simulated gpu-node host with cards dual-port
// ConnectX-7 cards (2×cards PCI functions, each an RDMA device with one
// InfiniBand port) in dir, every emulated tool run taking latency.
func GPUNode(dir string, cards int, latency time.Duration) (*sim.Sim, error) {
	st, err := sim.NewState("gpu-node", "bench", cards)
	if err != nil {
		return nil, err
	}
	if latency > 0 {
		st.Latency = map[string]sim.Duration{}
		for _, t := range AllTools {
			st.Latency[t] = sim.Duration(latency)
		}
	}
	return sim.Create(dir, st)
}

// GPUNodeReset is GPUNode with the firmware reset tool's runs taking
// reset instead of latency.
func GPUNodeReset(dir string, cards int, latency, reset time.Duration) (*sim.Sim, error) {
	st, err := sim.NewState("gpu-node", "bench", cards)
	if err != nil {
		return nil, err
	}
	st.Latency = map[string]sim.Duration{}
	for _, t := range AllTools {
		st.Latency[t] = sim.Duration(latency)
	}
	st.Latency["mlxfwreset"] = sim.Duration(reset)
	return sim.Create(dir, st)
}

// Big2000 sizes the 2,000-resource spec and its host: 32 cards (64
// functions), the last BigEthCards of them in PCI order switched to
// Ethernet (RoCE), the InfiniBand ports (the 15 cards of PCI domain 0,
// whose netdev names leave room for a P_Key suffix within 15 bytes)
// filling their 16-entry P_Key tables (BigPKeysPerPort P_Keys besides
// 0x8002 and the default), and
// BigNetdevs plain netdevs for the interfaces section.
const (
	BigCards        = 32
	BigEthCards     = 17
	BigPKeysPerPort = 14
	BigNetdevs      = 1422
)

// BigHost creates the host the 2,000-resource spec plans against: a
// gpu-node with BigCards cards, BigEthCards of them on Ethernet (set
// through the emulated mlxconfig and a simulated reboot, as on a real
// host), BigPKeysPerPort extra P_Keys on every InfiniBand port and
// BigNetdevs extra Ethernet netdevs. No latency: this host measures CPU.
//
// The rdma_cm configfs groups of the Ethernet devices exist already (as
// after `mkdir /sys/kernel/config/rdma_cm/mlx5_N`): on the simulator a
// group's mkdir and rmdir each rewrite the whole sim.yaml, ~0.1 s for
// this host, which would otherwise be most of the plan's time and none of
// rdmaform's (a real configfs mkdir takes microseconds).
//
// It is built in two steps to render the ~16,000 files of the big tree
// once: the cards switch to Ethernet on a host without the extra netdevs
// (scratch), then the result, with them, is created in dir.
func BigHost(dir, scratch string) (*sim.Sim, error) {
	st, err := sim.NewState("gpu-node", "bench", BigCards)
	if err != nil {
		return nil, err
	}
	s, err := sim.Create(scratch, st)
	if err != nil {
		return nil, err
	}
	for _, pci := range cardPCIs(st)[BigCards-BigEthCards:] {
		res, err := s.RunTool(context.Background(), []string{"mlxconfig", "-d", pci, "-y", "set", "LINK_TYPE_P1=ETH", "LINK_TYPE_P2=ETH"})
		if err != nil {
			return nil, fmt.Errorf("mlxconfig -d %s set: %w\n%s", pci, err, res.Stdout)
		}
	}
	if err := s.Reboot(); err != nil {
		return nil, err
	}
	st = s.State()
	for _, d := range st.Devices {
		for _, p := range d.Ports {
			if p.LinkLayer == "Ethernet" {
				st.CMGroups = append(st.CMGroups, d.Name)
				continue
			}
			for k := 0; k < BigPKeysPerPort; k++ {
				p.PKeys = append(p.PKeys, 0x8003+k)
			}
		}
	}
	for i := 0; i < BigNetdevs; i++ {
		st.Netdevs = append(st.Netdevs, &sim.Netdev{Name: netdevName(i), Kind: "ether", MTU: 1500, Up: true,
			MAC: fmt.Sprintf("02:00:00:00:%02x:%02x", i>>8, i&0xff), Boot: &sim.NetdevBoot{MTU: 1500, Up: true}})
	}
	return sim.Create(dir, st)
}

func netdevName(i int) string { return fmt.Sprintf("bn%d", i) }

// cardPCIs lists function 0 of every card, in PCI order.
func cardPCIs(st *sim.State) []string {
	var out []string
	for _, d := range st.Devices {
		if strings.HasSuffix(d.PCI, ".0") {
			out = append(out, d.PCI)
		}
	}
	sort.Strings(out)
	return out
}

// RoCENode creates a gpu-node host with cards cards whose ports are all
// Ethernet (switched with the emulated mlxconfig and a simulated reboot,
// as on a real host), every emulated tool run taking latency.
func RoCENode(dir, scratch string, cards int, latency time.Duration) (*sim.Sim, error) {
	st, err := sim.NewState("gpu-node", "bench", cards)
	if err != nil {
		return nil, err
	}
	s, err := sim.Create(scratch, st)
	if err != nil {
		return nil, err
	}
	for _, pci := range cardPCIs(st) {
		res, err := s.RunTool(context.Background(), []string{"mlxconfig", "-d", pci, "-y", "set", "LINK_TYPE_P1=ETH", "LINK_TYPE_P2=ETH"})
		if err != nil {
			return nil, fmt.Errorf("mlxconfig -d %s set: %w\n%s", pci, err, res.Stdout)
		}
	}
	if err := s.Reboot(); err != nil {
		return nil, err
	}
	st = s.State()
	if latency > 0 {
		st.Latency = map[string]sim.Duration{}
		for _, t := range AllTools {
			st.Latency[t] = sim.Duration(latency)
		}
	}
	return sim.Create(dir, st)
}
