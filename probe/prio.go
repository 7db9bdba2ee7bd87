package probe

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/providers/qos"
)

// The per-priority counters of a port, as ethtool -S prints them ("NIC
// statistics:", then "     %.*s: %llu" a counter: ethtool's
// do_gnicstats). The names are mlx5's (drivers/net/ethernet/mellanox/
// mlx5/core/en_stats.c: pport_per_prio_traffic_stats_desc's
// "rx_prio%d_bytes", "rx_prio%d_packets", "tx_prio%d_bytes",
// "tx_prio%d_packets", and pport_per_prio_pfc_stats_desc's "rx_%s_pause",
// "tx_%s_pause" with %s "prio%d" for a priority with PFC on; these
// strings are in Debian 12's mlx5_core.ko of 6.1.0-56-amd64, the kernel
// lab's). No kernel here has a port with them (rxe's netdevs are veth and
// virtio-net): the check is proven on the simulator only.
var prioCounterRE = regexp.MustCompile(`(?m)^\s+((?:rx|tx)_prio([0-7])_(bytes|packets|pause)):\s+(\d+)\s*$`)

// counterSnap is a port's per-priority counters at one moment (nil when
// the port has none).
type counterSnap map[string]uint64

// readPrioCounters reads the netdev's per-priority counters; nil when
// there is no netdev, ethtool is missing or fails, or the driver has no
// such counters.
func readPrioCounters(ctx context.Context, h *host.Host, netdev string) counterSnap {
	if netdev == "" {
		return nil
	}
	res, err := h.Runner.Run(ctx, host.Cmd{Args: []string{"ethtool", "-S", netdev}})
	if err != nil {
		return nil
	}
	snap := counterSnap{}
	for _, m := range prioCounterRE.FindAllStringSubmatch(string(res.Stdout), -1) {
		n, err := strconv.ParseUint(m[4], 10, 64)
		if err == nil {
			snap[m[1]] = n
		}
	}
	if len(snap) == 0 {
		return nil
	}
	return snap
}

// expectedPriority is the priority the probe's traffic class must land
// on: the probe's own, or the port's DSCP map (the APP table's DSCP
// entries, dcb app; mlx5 trusts DSCP while it has one) for the traffic
// class's DSCP (its upper six bits). ok is false when the port trusts
// PCP: the priority is then the VLAN's, not the traffic class's.
func expectedPriority(ctx context.Context, h *host.Host, pp *perfPlan) (prio int, from string, ok bool) {
	if pp.s.Priority != nil {
		return *pp.s.Priority, "the probe's priority", true
	}
	dscp := *pp.s.TrafficClass >> 2
	res, err := h.Runner.Run(ctx, host.Cmd{Args: []string{"dcb", "-j", "app", "show", "dev", pp.netdev}})
	if err != nil {
		return 0, "", false
	}
	app, err := qos.ParseApp(res.Stdout)
	if err != nil || len(app) == 0 {
		return 0, "", false
	}
	if ps := app[dscp]; len(ps) > 0 {
		return ps[0], fmt.Sprintf("DSCP %d in %s's DSCP map", dscp, pp.netdev), true
	}
	// A DSCP without an APP entry keeps mlx5's firmware default map,
	// DSCP >> 3.
	return dscp >> 3, fmt.Sprintf("DSCP %d, mlx5's default map", dscp), true
}

// prioCheck compares the counters after the run with before: the bytes
// the run sent (and, bidirectional or a read, received) moved on the
// expected priority and at most 1 % as much on the others (perftest's
// own TCP exchange, background traffic), and no pause frame counted on
// another priority.
func prioCheck(ctx context.Context, h *host.Host, pp *perfPlan, before counterSnap) Check {
	c := Check{Name: "priority_counters", Result: CheckUnverified}
	prio, from, ok := expectedPriority(ctx, h, pp)
	if !ok {
		c.Want = "the traffic class's priority"
		c.Got = pp.netdev + " trusts PCP (no DSCP entry in dcb app): its priority is not the traffic class's"
		return c
	}
	c.Want = fmt.Sprintf("priority %d (%s)", prio, from)
	after := readPrioCounters(ctx, h, pp.netdev)
	if after == nil {
		c.Got = "ethtool -S " + pp.netdev + " could not be read after the run"
		return c
	}
	c.Result, c.Got = comparePrio(before, after, prio, dirs(pp))
	return c
}

// dirs are the directions a run's data crosses the port in: tx when this
// host sends (write, send), rx when it reads, both when bidirectional.
func dirs(pp *perfPlan) []string {
	switch {
	case pp.s.Bidirectional:
		return []string{"tx", "rx"}
	case pp.s.Tool == "ib_read_bw":
		return []string{"rx"}
	}
	return []string{"tx"}
}

// comparePrio judges the counters' moves: the bytes on prio in each
// direction, at most 1 % as much on the other priorities together, and
// no pause frame counted on another priority.
func comparePrio(before, after counterSnap, prio int, dirs []string) (result, got string) {
	delta := func(name string) uint64 {
		if after[name] < before[name] {
			return 0 // a counter reset
		}
		return after[name] - before[name]
	}
	var notes []string
	result = CheckOK
	for _, d := range dirs {
		on := delta(fmt.Sprintf("%s_prio%d_bytes", d, prio))
		var off uint64
		for q := 0; q < 8; q++ {
			if q != prio {
				off += delta(fmt.Sprintf("%s_prio%d_bytes", d, q))
			}
		}
		note := fmt.Sprintf("%s_prio%d_bytes +%d, other priorities +%d", d, prio, on, off)
		switch {
		case on == 0:
			result, note = CheckFailed, note+" (nothing on the priority)"
		case off*100 > on:
			result, note = CheckFailed, note+" (more than 1 % elsewhere)"
		}
		notes = append(notes, note)
	}
	var paused []string
	for name := range after {
		m := prioCounterRE.FindStringSubmatch("     " + name + ": 0")
		if m != nil && m[3] == "pause" && m[2] != strconv.Itoa(prio) && delta(name) > 0 {
			paused = append(paused, fmt.Sprintf("%s +%d", name, delta(name)))
		}
	}
	sort.Strings(paused)
	got = strings.Join(notes, "; ")
	if len(paused) > 0 {
		return CheckFailed, got + "; pause frames on other priorities: " + strings.Join(paused, ", ")
	}
	return result, got + "; no pause frame on other priorities"
}
