package fabrictest

import (
	"fmt"
	"sort"

	"github.com/rdmaform/rdmaform/fleet"
)

// Thresholds make a pair bad: a bandwidth below MinBandwidthPercent % of
// the best pair's of its group, or a latency above MaxLatencyFactor
// times the best (lowest) of its group. ClusterKit's are 93 and 2.1.
type Thresholds struct {
	MinBandwidthPercent float64
	MaxLatencyFactor    float64
}

// DefaultThresholds are ClusterKit's.
var DefaultThresholds = Thresholds{MinBandwidthPercent: 93, MaxLatencyFactor: 2.1}

// The thresholds' limits: a percentage from 1 to 100, a factor from 1
// (no pair may be slower than the best) to 10.
const (
	MinPercent, MaxPercent = 1, 100
	MinFactor, MaxFactor   = 1, 10
)

// Check refuses thresholds out of their limits.
func (t Thresholds) Check() error {
	if !(t.MinBandwidthPercent >= MinPercent && t.MinBandwidthPercent <= MaxPercent) {
		return fmt.Errorf("the bandwidth floor %g%% is out of range (%d to %d %% of the best pair)", t.MinBandwidthPercent, MinPercent, MaxPercent)
	}
	if !(t.MaxLatencyFactor >= MinFactor && t.MaxLatencyFactor <= MaxFactor) {
		return fmt.Errorf("the latency ceiling %g× is out of range (%d to %d times the best pair)", t.MaxLatencyFactor, MinFactor, MaxFactor)
	}
	return nil
}

// Status is the report's verdict, with Nagios's exit codes.
type Status int

const (
	OK       Status = 0
	Warning  Status = 1
	Critical Status = 2
	Unknown  Status = 3
)

func (s Status) String() string {
	switch s {
	case OK:
		return "OK"
	case Warning:
		return "WARNING"
	case Critical:
		return "CRITICAL"
	}
	return "UNKNOWN"
}

// Measured is a pair's latest result and how many times it was measured.
type Measured struct {
	Result
	Times int
	// Reasons say why the pair is bad; none: it is good.
	Reasons []string
}

// Bad tells whether the pair is bad.
func (m *Measured) Bad() bool { return len(m.Reasons) > 0 }

// GroupReport is one group's figures.
type GroupReport struct {
	Group
	Pairs int // pairs measured
	// BestBandwidthGbps and BestLatencyUs are the best of the group's
	// measured pairs (0: none measured).
	BestBandwidthGbps, BestLatencyUs float64
}

// BadHost is a host named bad, and why.
type BadHost struct {
	Host, Reason string
}

// Report is what the results say about the fabric.
type Report struct {
	Thresholds Thresholds
	Groups     []GroupReport
	// Pairs is every measured pair (its latest result), BadPairs the bad
	// ones, both in the order of their first result.
	Pairs    []*Measured
	BadPairs []*Measured
	// Cleared hosts are in a good pair; BadHosts are named: in no good
	// pair, and measured too slow with a cleared host. Unmeasured hosts
	// are in no good pair and could not be measured with a cleared host
	// (the run failed: the host was down, late, or its path would not
	// connect), and are not named bad: the test has no figure of theirs.
	// Suspects are in a bad pair and neither cleared, named nor
	// unmeasured: a retest round will tell.
	Cleared    map[string]bool
	BadHosts   []BadHost
	Unmeasured []BadHost
	Suspects   []string
	// BadPaths are bad pairs of two cleared hosts (each moved data well
	// with another host): the path between them, not a host. Confirmed
	// when measured twice; a retest round measures the others again.
	BadPaths []*Measured
	// Untested hosts have no result.
	Untested []string
	Status   Status
}

func pairKey(a, b string) Pair {
	if fleet.NameLess(b, a) {
		a, b = b, a
	}
	return Pair{a, b}
}

// Analyze judges results (in the order they were written, files one
// after the other; a pair measured again counts by its latest result)
// against the inventory's groups: every result's hosts must be in the
// inventory and of one group.
func Analyze(groups []Group, results []Result, t Thresholds) (*Report, error) {
	if err := t.Check(); err != nil {
		return nil, err
	}
	groupOf := map[string]int{}
	for i, g := range groups {
		for _, h := range g.Hosts {
			groupOf[h] = i
		}
	}
	rep := &Report{Thresholds: t, Cleared: map[string]bool{}}
	byPair := map[Pair]*Measured{}
	for _, r := range results {
		gi := [2]int{}
		for k, h := range r.Hosts {
			g, ok := groupOf[h]
			if !ok {
				return nil, &Error{File: r.File, Line: r.Line, Col: r.Col, Msg: fmt.Sprintf("host %s is not in the inventory", h)}
			}
			gi[k] = g
		}
		if gi[0] != gi[1] {
			a, b := groups[gi[0]], groups[gi[1]]
			return nil, &Error{File: r.File, Line: r.Line, Col: r.Col, Msg: fmt.Sprintf("%s (%s) and %s (%s) are not of one fabric and link layer: no pair of the test",
				r.Hosts[0], groupName(a), r.Hosts[1], groupName(b))}
		}
		k := pairKey(r.Hosts[0], r.Hosts[1])
		m := byPair[k]
		if m == nil {
			m = &Measured{}
			byPair[k] = m
			rep.Pairs = append(rep.Pairs, m)
		}
		m.Result, m.Times = r, m.Times+1
	}
	rep.Groups = make([]GroupReport, len(groups))
	for i, g := range groups {
		rep.Groups[i].Group = g
	}
	for _, m := range rep.Pairs {
		g := &rep.Groups[groupOf[m.Hosts[0]]]
		g.Pairs++
		if m.Err != "" {
			continue
		}
		if m.BandwidthGbps > g.BestBandwidthGbps {
			g.BestBandwidthGbps = m.BandwidthGbps
		}
		if g.BestLatencyUs == 0 || m.LatencyUs < g.BestLatencyUs {
			g.BestLatencyUs = m.LatencyUs
		}
	}
	for _, m := range rep.Pairs {
		g := &rep.Groups[groupOf[m.Hosts[0]]]
		switch {
		case m.Err != "":
			m.Reasons = append(m.Reasons, "not measured: "+m.Err)
		default:
			if floor := g.BestBandwidthGbps * t.MinBandwidthPercent / 100; m.BandwidthGbps < floor {
				m.Reasons = append(m.Reasons, fmt.Sprintf("bandwidth %.6g Gb/s is below %g%% of the best pair's %.6g Gb/s (%.6g Gb/s)", m.BandwidthGbps, t.MinBandwidthPercent, g.BestBandwidthGbps, floor))
			}
			if ceil := g.BestLatencyUs * t.MaxLatencyFactor; m.LatencyUs > ceil {
				m.Reasons = append(m.Reasons, fmt.Sprintf("latency %.6g µs is above %g× the best pair's %.6g µs (%.6g µs)", m.LatencyUs, t.MaxLatencyFactor, g.BestLatencyUs, ceil))
			}
		}
		if m.Bad() {
			rep.BadPairs = append(rep.BadPairs, m)
		} else {
			rep.Cleared[m.Hosts[0]], rep.Cleared[m.Hosts[1]] = true, true
		}
	}
	// Name the hosts: too slow with a cleared host is bad; failed with
	// one, unmeasured (a failed run is no figure).
	named, failed := map[string]string{}, map[string]string{}
	inBad := map[string]bool{}
	for _, m := range rep.BadPairs {
		for k, h := range m.Hosts {
			inBad[h] = true
			peer := m.Hosts[1-k]
			if rep.Cleared[h] || !rep.Cleared[peer] {
				continue
			}
			switch {
			case m.Err != "" && failed[h] == "":
				failed[h] = fmt.Sprintf("in no good pair, and not measured with %s, which is good with another host: %s", peer, m.Err)
			case m.Err == "" && named[h] == "":
				named[h] = fmt.Sprintf("in no good pair, and bad with %s, which is good with another host: %s", peer, m.Reasons[0])
			}
		}
	}
	for _, g := range groups {
		for _, h := range g.Hosts {
			switch {
			case named[h] != "":
				rep.BadHosts = append(rep.BadHosts, BadHost{Host: h, Reason: named[h]})
			case failed[h] != "":
				rep.Unmeasured = append(rep.Unmeasured, BadHost{Host: h, Reason: failed[h]})
			case inBad[h] && !rep.Cleared[h]:
				rep.Suspects = append(rep.Suspects, h)
			}
		}
	}
	sortHosts := func(b []BadHost) {
		sort.Slice(b, func(i, j int) bool { return fleet.NameLess(b[i].Host, b[j].Host) })
	}
	sortHosts(rep.BadHosts)
	sortHosts(rep.Unmeasured)
	sort.Slice(rep.Suspects, func(i, j int) bool { return fleet.NameLess(rep.Suspects[i], rep.Suspects[j]) })
	for _, m := range rep.BadPairs {
		if rep.Cleared[m.Hosts[0]] && rep.Cleared[m.Hosts[1]] {
			rep.BadPaths = append(rep.BadPaths, m)
		}
	}
	measured := map[string]bool{}
	for _, m := range rep.Pairs {
		measured[m.Hosts[0]], measured[m.Hosts[1]] = true, true
	}
	for _, g := range groups {
		for _, h := range g.Hosts {
			if !measured[h] {
				rep.Untested = append(rep.Untested, h)
			}
		}
	}
	sort.Slice(rep.Untested, func(i, j int) bool { return fleet.NameLess(rep.Untested[i], rep.Untested[j]) })
	switch {
	case len(rep.BadHosts) > 0:
		rep.Status = Critical
	case len(rep.Suspects) > 0 || len(rep.BadPaths) > 0 || len(rep.Unmeasured) > 0 || len(rep.Untested) > 0:
		rep.Status = Warning
	default:
		rep.Status = OK
	}
	return rep, nil
}

func groupName(g Group) string {
	f, ll := g.Fabric, g.LinkLayer
	if f == "" {
		f = "the fabric with no name"
	} else {
		f = "fabric " + f
	}
	if ll == "" {
		ll = "no link layer given"
	}
	return f + ", " + ll
}

// GroupName is how the text output names a group.
func GroupName(g Group) string { return groupName(g) }

// Waiting is a suspect host (or a bad path's two hosts) a retest round
// could not measure, and why.
type Waiting struct {
	Hosts  []string
	Reason string
}

// Retest is the next round the report asks for, halving each bad pair
// that has no culprit yet: each suspect is paired with a cleared host
// of its group (one it has not been measured with when there is one),
// so that the pair's bad figure falls on the suspect or clears it; each
// bad path measured once is measured again. No host is in two pairs;
// what does not fit waits for the round after. An empty round: nothing
// to retest (the report is final).
func Retest(rep *Report) (Round, []Waiting) {
	used := map[string]bool{}
	var round Round
	var waiting []Waiting
	seen := map[Pair]bool{}
	for _, m := range rep.Pairs {
		seen[pairKey(m.Hosts[0], m.Hosts[1])] = true
	}
	groupOf := map[string]int{}
	for i, g := range rep.Groups {
		for _, h := range g.Hosts {
			groupOf[h] = i
		}
	}
	// The cleared hosts of each group, in inventory order, as partners.
	partners := make([][]string, len(rep.Groups))
	for i, g := range rep.Groups {
		for _, h := range g.Hosts {
			if rep.Cleared[h] {
				partners[i] = append(partners[i], h)
			}
		}
	}
	next := make([]int, len(rep.Groups)) // where each group's search starts
	for _, s := range rep.Suspects {
		gi := groupOf[s]
		ps := partners[gi]
		if len(ps) == 0 {
			waiting = append(waiting, Waiting{Hosts: []string{s}, Reason: "no host of its group is known good yet"})
			continue
		}
		pick := ""
		// A free partner it has not met, else any free partner.
		for pass := 0; pass < 2 && pick == ""; pass++ {
			for k := 0; k < len(ps); k++ {
				p := ps[(next[gi]+k)%len(ps)]
				if used[p] || (pass == 0 && seen[pairKey(s, p)]) {
					continue
				}
				pick = p
				next[gi] = (next[gi] + k + 1) % len(ps)
				break
			}
		}
		if pick == "" {
			waiting = append(waiting, Waiting{Hosts: []string{s}, Reason: "every known-good host of its group is busy this round"})
			continue
		}
		used[s], used[pick] = true, true
		round.Pairs = append(round.Pairs, Pair{s, pick})
	}
	for _, m := range rep.BadPaths {
		if m.Times > 1 {
			continue
		}
		a, b := m.Hosts[0], m.Hosts[1]
		if used[a] || used[b] {
			waiting = append(waiting, Waiting{Hosts: []string{a, b}, Reason: "the bad path's hosts are busy this round"})
			continue
		}
		used[a], used[b] = true, true
		round.Pairs = append(round.Pairs, Pair{a, b})
	}
	return round, waiting
}
