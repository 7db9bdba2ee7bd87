// Package fabrictest is the cluster-wide fabric test in the ClusterKit
// style: it cuts an inventory's hosts into pairwise rounds (every pair of
// one fabric and one link layer exactly once, each host at most once a
// round), reads the per-pair results the engines (Ansible, Slurm) bring
// back, finds the bad pairs against the best pair, and names the bad
// hosts, asking for retest rounds while a bad pair has no culprit. Pure:
// it reads no file and runs nothing.
package fabrictest

import (
	"sort"

	"github.com/rdmaform/rdmaform/fleet"
)

// Group is the hosts that may be paired: one fabric, one link layer
// ("" for an inventory that names none), hosts sorted as fleet sorts them.
type Group struct {
	Fabric    string
	LinkLayer string
	Hosts     []string
}

// Pair is two hosts of one group, in schedule order.
type Pair [2]string

// Round is pairs run at the same time: no host is in two of them.
type Round struct {
	Pairs []Pair
}

// Groups are the inventory's hosts by (fabric, link layer), ordered by
// fabric then link layer; the hosts keep the inventory's order.
func Groups(inv *fleet.Inventory) []Group {
	type key struct{ fabric, ll string }
	at := map[key]int{}
	var gs []Group
	for _, h := range inv.Hosts {
		k := key{h.Fabric, h.LinkLayer}
		i, ok := at[k]
		if !ok {
			i = len(gs)
			at[k] = i
			gs = append(gs, Group{Fabric: h.Fabric, LinkLayer: h.LinkLayer})
		}
		gs[i].Hosts = append(gs[i].Hosts, h.Name)
	}
	sort.SliceStable(gs, func(i, j int) bool {
		if gs[i].Fabric != gs[j].Fabric {
			return gs[i].Fabric < gs[j].Fabric
		}
		return gs[i].LinkLayer < gs[j].LinkLayer
	})
	return gs
}

// Rounds is the schedule of one group of n hosts by the circle method
// (a round-robin tournament): n-1 rounds of n/2 pairs for even n, n
// rounds of (n-1)/2 pairs for odd n (each host sits one round out);
// every pair exactly once, each host at most once a round. One host
// or none: no round.
func Rounds(hosts []string) []Round {
	n := len(hosts)
	if n < 2 {
		return nil
	}
	m := n
	if m%2 == 1 {
		m++ // position n is the bye
	}
	pos := make([]int, m)
	for i := range pos {
		pos[i] = i
	}
	rounds := make([]Round, m-1)
	per := n / 2
	all := make([]Pair, 0, (m-1)*per) // one allocation for every pair
	for r := range rounds {
		pairs := all[len(all) : len(all) : len(all)+per]
		for i := 0; i < m/2; i++ {
			a, b := pos[i], pos[m-1-i]
			if a >= n || b >= n {
				continue
			}
			if a > b {
				a, b = b, a
			}
			pairs = append(pairs, Pair{hosts[a], hosts[b]})
		}
		rounds[r].Pairs = pairs
		all = all[:len(all)+len(pairs)]
		// Keep position 0, turn the others one step.
		last := pos[m-1]
		copy(pos[2:], pos[1:m-1])
		pos[1] = last
	}
	return rounds
}

// Schedule is every group's rounds side by side: round r holds round r
// of each group (groups share no host, so no host is twice in a round).
// Its length is the longest group's.
func Schedule(groups []Group) []Round {
	var each [][]Round
	longest := 0
	for _, g := range groups {
		if rs := Rounds(g.Hosts); len(rs) > 0 {
			each = append(each, rs)
			longest = max(longest, len(rs))
		}
	}
	if len(each) == 1 {
		return each[0]
	}
	out := make([]Round, longest)
	for r := range out {
		n := 0
		for _, rs := range each {
			if r < len(rs) {
				n += len(rs[r].Pairs)
			}
		}
		out[r].Pairs = make([]Pair, 0, n)
		for _, rs := range each {
			if r < len(rs) {
				out[r].Pairs = append(out[r].Pairs, rs[r].Pairs...)
			}
		}
	}
	return out
}

// Alone is the hosts no schedule can test: the only host of their group.
func Alone(groups []Group) []string {
	var out []string
	for _, g := range groups {
		if len(g.Hosts) == 1 {
			out = append(out, g.Hosts[0])
		}
	}
	return out
}
