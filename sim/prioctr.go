package sim

import (
	"fmt"
	"strings"
)

// mlx5's per-priority counters, as ethtool -S shows them and the emulated
// perftest moves them. The names and their order are the driver's
// (drivers/net/ethernet/mellanox/mlx5/core/en_stats.c, in Debian 12's
// 6.1 kernel: pport_per_prio_traffic_stats_desc, filled for priority 0
// to 7 in turn, then pport_per_prio_pfc_stats_desc's "rx_%s_pause" ...
// with %s "prio%d" for each priority with PFC on); the layout is ethtool's
// (do_gnicstats: "NIC statistics:" then "     %.*s: %llu" a counter).
// A netdev without DCB (veth, virtio-net) has none of them.
var (
	prioTrafficNames = []string{"rx_prio%d_bytes", "rx_prio%d_packets", "rx_prio%d_discards", "tx_prio%d_bytes", "tx_prio%d_packets"}
	prioPFCNames     = []string{"rx_prio%d_pause", "rx_prio%d_pause_duration", "tx_prio%d_pause", "tx_prio%d_pause_duration", "rx_prio%d_pause_transition"}
)

// ethtoolStats emulates ethtool -S DEV.
func ethtoolStats(s *Sim, dev string) (string, string, int) {
	var out, errOut string
	code := 0
	s.view(func(st *State) {
		n := st.Netdev(dev)
		if n == nil {
			errOut, code = ethtoolNoDevice, 1
			return
		}
		var b strings.Builder
		b.WriteString("NIC statistics:\n")
		line := func(name string, v uint64) { fmt.Fprintf(&b, "     %s: %d\n", name, v) }
		var rx, tx uint64
		for p := 0; p < 8; p++ {
			rx += n.PrioStats[fmt.Sprintf("rx_prio%d_packets", p)]
			tx += n.PrioStats[fmt.Sprintf("tx_prio%d_packets", p)]
		}
		line("rx_packets", rx)
		line("tx_packets", tx)
		if n.DCB != nil {
			for p := 0; p < 8; p++ {
				for _, f := range prioTrafficNames {
					name := fmt.Sprintf(f, p)
					line(name, n.PrioStats[name])
				}
			}
			for p := 0; p < 8; p++ {
				if p < len(n.DCB.PFC) && n.DCB.PFC[p] {
					for _, f := range prioPFCNames {
						name := fmt.Sprintf(f, p)
						line(name, n.PrioStats[name])
					}
				}
			}
		}
		out = b.String()
	})
	return out, errOut, code
}

// prioOf is the priority a traffic class lands on at a netdev: its DSCP
// (the upper six bits) through the hardware DSCP map when the port trusts
// DSCP, else 0 (untagged, trusting PCP).
func prioOf(n *Netdev, tc int) int {
	if n.DCB == nil || n.DCB.Trust != "dscp" || tc < 0 {
		return 0
	}
	if d := tc >> 2; d < len(n.DCB.DSCP2Prio) {
		return n.DCB.DSCP2Prio[d]
	}
	return 0
}

// countTraffic moves a netdev's counters for a run: out bytes sent and
// in bytes received on the traffic class's priority, with the packets of
// the port's MTU; a receiver with PFC on that priority sends a few pause
// frames, counted as tx pause; perftest's TCP exchange goes on
// priority 0.
func countTraffic(n *Netdev, tc int, out, in uint64) {
	if n == nil || n.DCB == nil {
		return
	}
	if n.PrioStats == nil {
		n.PrioStats = map[string]uint64{}
	}
	p := prioOf(n, tc)
	mtu := uint64(n.MTU)
	if mtu == 0 {
		mtu = 1500
	}
	add := func(f string, prio int, v uint64) { n.PrioStats[fmt.Sprintf(f, prio)] += v }
	add("tx_prio%d_bytes", p, out)
	add("tx_prio%d_packets", p, (out+mtu-1)/mtu)
	add("rx_prio%d_bytes", p, in)
	add("rx_prio%d_packets", p, (in+mtu-1)/mtu)
	if p < len(n.DCB.PFC) && n.DCB.PFC[p] && in > 0 {
		add("tx_prio%d_pause", p, 3)
	}
	add("tx_prio%d_bytes", 0, 2048)
	add("tx_prio%d_packets", 0, 8)
	add("rx_prio%d_bytes", 0, 2048)
	add("rx_prio%d_packets", 0, 8)
}
