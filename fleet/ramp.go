package fleet

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/internal/words"
)

// Step is what set one wave's size: its compartment and its ramp step.
type Step struct {
	// Compartment is the inventory group of the wave's hosts; "" when
	// the policy has no compartments, OtherHosts for the hosts in none
	// of its groups.
	Compartment string
	// Index is the ramp step: 0 the canary, 1 the first step after it;
	// -1 when there is no ramp.
	Index int
	// Rule is how the size was computed ("canary: 1 host", "ramp step 2:
	// 20% of 40 hosts = 8"), Size the hosts it asked for and Short, when
	// the wave holds fewer, which limit kept the others out.
	Rule  string
	Size  int
	Short string
}

// OtherHosts is the compartment of the hosts in none of a policy's
// compartment groups: it comes last.
const OtherHosts = "(other hosts)"

// Rolled is PlanRollout's result: the waves and, for each, its Step.
type Rolled struct {
	*Waves
	Steps  []Step
	Policy Rollout

	// Explain's indexes, made at its first call.
	hostOf  map[string]*Host
	waveOf  map[string]int
	domains map[string][]string // domain -> its hosts in a wave
	sms     map[string][]string // fabric -> its subnet manager hosts
}

// PlanRollout cuts the inventory's pending hosts into waves under a
// whole policy. Without a ramp and compartments it is Plan. With
// compartments, each compartment (its hosts in inventory order of the
// policy's groups; the hosts in none come last) gets waves of its own,
// one compartment after the other. With a ramp, the first wave of each
// compartment holds Canary hosts, and each later wave the ramp's next
// size (a step, the last repeating, or the wave before times the
// factor, rounded up), never more than max_unavailable; a wave is filled
// host by host from the domain with the most hosts left that is under
// max_per_domain in the wave and has a host whose fabric's subnet
// manager is not in it yet (subnet manager hosts first), so a wave may
// hold fewer hosts than its step when the domains or the subnet managers
// allow no more (Step.Short says so).
func PlanRollout(inv *Inventory, r Rollout) (*Rolled, error) {
	base, err := Plan(inv, r.Policy)
	if err != nil {
		return nil, err
	}
	out := &Rolled{Waves: base, Policy: r}
	if !r.Ramp.On() && len(r.Compartments.Groups) == 0 {
		for range base.Waves {
			out.Steps = append(out.Steps, Step{Index: -1, Rule: "no ramp: waves of equal size; " + base.Bound, Size: base.PerWave})
		}
		return out, nil
	}
	if r.Ramp.On() && r.Canary > base.PerWave {
		return nil, fmt.Errorf("%w: canary %d: more than max_unavailable (%d %s per wave)", ErrLimit, r.Canary, base.PerWave, words.Plural(base.PerWave, "host", "hosts"))
	}
	comps, err := compartments(inv, r.Compartments.Groups)
	if err != nil {
		return nil, err
	}
	out.Waves = &Waves{Hosts: base.Hosts, Pending: base.Pending, PerWave: base.PerWave, MaxPerDomain: base.MaxPerDomain,
		CountOnly: base.CountOnly, LeftOut: base.LeftOut}
	if r.Compartments.Order == OrderParallel {
		return out, out.parallel(comps, r, base.PerWave, base.CountOnly)
	}
	var bounds []string
	for _, c := range comps {
		var pend []Host
		for _, h := range c.hosts {
			if h.Pending != PendingNo {
				pend = append(pend, h)
			}
		}
		if len(pend) == 0 {
			continue
		}
		var waves []Wave
		var steps []Step
		if r.Ramp.On() {
			waves, steps = ramp(pend, r, base.PerWave, base.CountOnly)
		} else {
			w, err := Plan(&Inventory{Format: inv.Format, Hosts: pend}, Policy{MaxUnavailable: Limit{N: base.PerWave}, MaxPerDomain: r.MaxPerDomain})
			if err != nil {
				return nil, err
			}
			waves = w.Waves
			for range waves {
				steps = append(steps, Step{Index: -1, Rule: "no ramp: waves of equal size; " + w.Bound, Size: base.PerWave})
			}
		}
		if c.name != "" {
			bounds = append(bounds, fmt.Sprintf("compartment %s: %d pending %s in %d %s", c.name, len(pend), words.Plural(len(pend), "host", "hosts"), len(waves), words.Plural(len(waves), "wave", "waves")))
		}
		for i := range steps {
			steps[i].Compartment = c.name
			if c.name != "" {
				for h, why := range waves[i].Reasons {
					waves[i].Reasons[h] = "compartment " + c.name + "; " + why
				}
			}
		}
		out.Waves.Waves = append(out.Waves.Waves, waves...)
		out.Steps = append(out.Steps, steps...)
	}
	switch {
	case len(bounds) > 0:
		out.Waves.Bound = strings.Join(bounds, "; ")
	case r.Ramp.On():
		out.Waves.Bound = fmt.Sprintf("a canary of %d, then the ramp (%s), at most %d per wave", r.Canary, r.Ramp, base.PerWave)
	}
	return out, nil
}

func (r Ramp) String() string {
	if r.Factor > 0 {
		return fmt.Sprintf("factor %g", r.Factor)
	}
	s := make([]string, len(r.Steps))
	for i, l := range r.Steps {
		s[i] = l.String()
	}
	return "steps " + strings.Join(s, ", ")
}

type compartment struct {
	name  string
	hosts []Host
}

// compartments parts the inventory's hosts by the policy's groups, in
// their order, then the hosts in none (OtherHosts); without groups, one
// compartment of every host, named "". A host in two of the groups is an
// error: its compartment would be a guess.
func compartments(inv *Inventory, groups []string) ([]compartment, error) {
	if len(groups) == 0 {
		return []compartment{{hosts: inv.Hosts}}, nil
	}
	index := map[string]int{}
	for i, g := range groups {
		index[g] = i
	}
	out := make([]compartment, len(groups)+1)
	for i, g := range groups {
		out[i].name = g
	}
	out[len(groups)].name = OtherHosts
	for _, h := range inv.Hosts {
		k := len(groups)
		for _, g := range h.Groups {
			i, ok := index[g]
			if !ok {
				continue
			}
			if k != len(groups) {
				a, b := groups[min(i, k)], groups[max(i, k)]
				return nil, fmt.Errorf("%w: host %s is in the compartments %s and %s: a host belongs to one", ErrInventory, h.Name, a, b)
			}
			k = i
		}
		out[k].hosts = append(out[k].hosts, h)
	}
	return out, nil
}

// OrderParallel and OrderSequential are compartments.order's values.
const (
	OrderSequential = "sequential"
	OrderParallel   = "parallel"
)

// parallel rolls the compartments side by side: wave k holds each
// compartment's k-th step (its canary, then its ramp; without a ramp,
// waves of its share), so that every compartment starts at once and
// goes at its own pace. The wave's limits are shared: max_per_domain and
// the subnet manager rule count the hosts of every compartment in the
// wave, and max_unavailable is split evenly between the compartments
// that have hosts left (rounded down; a compartment's step is cut to its
// share). max_unavailable must let every compartment have a host in the
// first wave.
func (out *Rolled) parallel(comps []compartment, r Rollout, perWave int, countOnly bool) error {
	type side struct {
		name string
		c    *ramper
	}
	var sides []side
	for _, c := range comps {
		var pend []Host
		for _, h := range c.hosts {
			if h.Pending != PendingNo {
				pend = append(pend, h)
			}
		}
		if len(pend) > 0 {
			sides = append(sides, side{c.name, newRamper(pend, r, perWave, countOnly)})
		}
	}
	if len(sides) > perWave {
		return fmt.Errorf("%w: compartments.order parallel: %d compartments have hosts pending, more than max_unavailable (%d %s per wave): each needs a host in the first wave",
			ErrLimit, len(sides), perWave, words.Plural(perWave, "host", "hosts"))
	}
	if r.Ramp.On() && r.Canary*len(sides) > perWave {
		return fmt.Errorf("%w: compartments.order parallel: canary %d in each of %d compartments is more than max_unavailable (%d %s per wave)",
			ErrLimit, r.Canary, len(sides), perWave, words.Plural(perWave, "host", "hosts"))
	}
	var names []string
	for _, sd := range sides {
		names = append(names, sd.name)
	}
	for {
		var active []side
		for _, sd := range sides {
			if sd.c.left > 0 {
				active = append(active, sd)
			}
		}
		if len(active) == 0 {
			break
		}
		share := perWave / len(active)
		wv := Wave{Reasons: map[string]string{}}
		inWave, smIn := map[string]int{}, map[string]bool{}
		var rules, shorts []string
		step := Step{Compartment: strings.Join(names, ", "), Index: -1}
		for _, sd := range active {
			c := sd.c
			c.perWave = share
			var st Step
			if r.Ramp.On() {
				st = c.next()
				step.Index = max(step.Index, st.Index)
			} else {
				st = Step{Index: -1, Size: share, Rule: fmt.Sprintf("no ramp: waves of its share of max_unavailable, %d / %d compartments = %d", perWave, len(active), share)}
			}
			if r.Ramp.On() && strings.HasSuffix(st.Rule, fmt.Sprintf(", cut to max_unavailable %d", share)) {
				st.Rule = strings.TrimSuffix(st.Rule, fmt.Sprintf(", cut to max_unavailable %d", share)) +
					fmt.Sprintf(", cut to its share of max_unavailable, %d / %d compartments = %d", perWave, len(active), share)
			}
			before := len(wv.Hosts)
			c.fill(&wv, &st, st.Size, inWave, smIn)
			label := sd.name
			if label == "" {
				label = "every host"
			}
			for _, h := range wv.Hosts[before:] {
				wv.Reasons[h] = "compartment " + label + ", side by side with the others; " + wv.Reasons[h]
			}
			rules = append(rules, label+": "+st.Rule)
			if st.Short != "" {
				shorts = append(shorts, label+": "+st.Short)
			}
			step.Size += st.Size
		}
		step.Rule = strings.Join(rules, "; ")
		step.Short = strings.Join(shorts, "; ")
		sort.Slice(wv.Hosts, func(a, b int) bool { return NameLess(wv.Hosts[a], wv.Hosts[b]) })
		out.Waves.Waves = append(out.Waves.Waves, wv)
		out.Steps = append(out.Steps, step)
	}
	out.Waves.Bound = fmt.Sprintf("compartments %s side by side, max_unavailable %d split between those with hosts left", strings.Join(names, ", "), perWave)
	return nil
}

// ramp deals one compartment's pending hosts into waves of growing size.
func ramp(pend []Host, r Rollout, perWave int, countOnly bool) ([]Wave, []Step) {
	c := newRamper(pend, r, perWave, countOnly)
	var waves []Wave
	var steps []Step
	for c.left > 0 {
		st := c.next()
		wv := Wave{Reasons: map[string]string{}}
		c.fill(&wv, &st, st.Size, map[string]int{}, map[string]bool{})
		sort.Slice(wv.Hosts, func(a, b int) bool { return NameLess(wv.Hosts[a], wv.Hosts[b]) })
		waves = append(waves, wv)
		steps = append(steps, st)
	}
	return waves, steps
}

// rampDomain is a domain's hosts not yet in a wave: SM hosts first, then
// by name.
type rampDomain struct {
	name  string
	hosts []*Host
}

// ramper is one compartment's ramp: its hosts left by domain and its
// next step.
type ramper struct {
	r         Rollout
	perWave   int
	perDomain int
	countOnly bool
	domains   []*rampDomain
	pend      int // the compartment's pending hosts (a step's P%)
	left      int
	n, prev   int
}

func newRamper(pend []Host, r Rollout, perWave int, countOnly bool) *ramper {
	c := &ramper{r: r, perWave: perWave, perDomain: r.MaxPerDomain, countOnly: countOnly, pend: len(pend), left: len(pend)}
	if countOnly {
		c.perDomain = perWave
	}
	byName := map[string]*rampDomain{}
	for i := range pend {
		h := &pend[i]
		d := byName[h.Domain]
		if d == nil {
			d = &rampDomain{name: h.Domain}
			byName[h.Domain] = d
			c.domains = append(c.domains, d)
		}
		d.hosts = append(d.hosts, h)
	}
	for _, d := range c.domains {
		sort.SliceStable(d.hosts, func(i, j int) bool {
			a, b := d.hosts[i], d.hosts[j]
			if a.SM() != b.SM() {
				return a.SM()
			}
			return NameLess(a.Name, b.Name)
		})
	}
	return c
}

// next is the compartment's next ramp step: the canary, a step (the
// last repeating) or the wave before times the factor, within
// max_unavailable.
func (c *ramper) next() Step {
	r, n := c.r, c.n
	st := Step{Index: n}
	switch {
	case n == 0:
		st.Size = r.Canary
		st.Rule = fmt.Sprintf("canary: %d %s", r.Canary, words.Plural(r.Canary, "host", "hosts"))
	case r.Ramp.Factor > 0:
		st.Size = int(math.Ceil(float64(c.prev) * r.Ramp.Factor))
		st.Rule = fmt.Sprintf("ramp step %d: %d × %g, rounded up = %d", n, c.prev, r.Ramp.Factor, st.Size)
	default:
		l := r.Ramp.Steps[min(n, len(r.Ramp.Steps))-1]
		st.Size = l.Of(c.pend)
		if l.Percent > 0 {
			st.Rule = fmt.Sprintf("ramp step %d: %s of %d pending %s = %d", n, l, c.pend, words.Plural(c.pend, "host", "hosts"), st.Size)
		} else {
			st.Rule = fmt.Sprintf("ramp step %d: %d %s", n, st.Size, words.Plural(st.Size, "host", "hosts"))
		}
		if n > len(r.Ramp.Steps) {
			st.Rule += " (the last step, repeated)"
		}
	}
	if st.Size > c.perWave {
		st.Size = c.perWave
		st.Rule += fmt.Sprintf(", cut to max_unavailable %d", c.perWave)
	}
	c.prev = st.Size
	c.n++
	return st
}

// fill adds up to size of the compartment's hosts to the wave, host by
// host from the domain with the most hosts left that is under
// max_per_domain in the wave (inWave: its hosts in the wave, of every
// compartment) and has a host whose fabric's subnet manager is not in
// it yet (smIn); st.Short says which limit held it back.
func (c *ramper) fill(wv *Wave, st *Step, size int, inWave map[string]int, smIn map[string]bool) int {
	want := min(size, c.left)
	got := 0
	blockedDomain, blockedSM := false, false
	for got < want {
		var best *rampDomain
		bestAt := -1
		for _, d := range c.domains {
			if len(d.hosts) == 0 {
				continue
			}
			if inWave[d.name] >= c.perDomain {
				blockedDomain = true
				continue
			}
			at := -1
			for i, h := range d.hosts {
				if !h.SM() || !smIn[h.Fabric] {
					at = i
					break
				}
			}
			if at < 0 {
				blockedSM = true
				continue
			}
			if best == nil || len(d.hosts) > len(best.hosts) || len(d.hosts) == len(best.hosts) && NameLess(d.name, best.name) {
				best, bestAt = d, at
			}
		}
		if best == nil {
			break
		}
		h := best.hosts[bestAt]
		best.hosts = append(best.hosts[:bestAt], best.hosts[bestAt+1:]...)
		inWave[best.name]++
		if h.SM() {
			smIn[h.Fabric] = true
		}
		wv.Hosts = append(wv.Hosts, h.Name)
		got++
		var why string
		if c.countOnly {
			why = st.Rule
		} else {
			why = fmt.Sprintf("%s; domain %s: at most %d of a domain per wave", st.Rule, h.Domain, c.r.MaxPerDomain)
		}
		if h.SM() {
			why += fmt.Sprintf("; subnet manager host, the only one of %s in this wave", fabricName(h.Fabric))
		}
		if h.Why != "" {
			why += "; pending: " + h.Why
		}
		wv.Reasons[h.Name] = why
	}
	c.left -= got
	if got < want {
		var why []string
		if blockedDomain {
			why = append(why, fmt.Sprintf("max_per_domain %d", c.perDomain))
		}
		if blockedSM {
			why = append(why, "one subnet manager host of a fabric per wave")
		}
		st.Short = fmt.Sprintf("%d of %d: %s left no more", got, want, strings.Join(why, " and "))
	}
	return got
}

// Explain is why one host is in its wave, line by line: its domain, its
// subnet manager pair, its compartment and its ramp step.
func (r *Rolled) Explain(inv *Inventory, wave int, host string) []string {
	if r.hostOf == nil {
		r.hostOf, r.waveOf, r.domains, r.sms = map[string]*Host{}, map[string]int{}, map[string][]string{}, map[string][]string{}
		for i, w := range r.Waves.Waves {
			for _, n := range w.Hosts {
				r.waveOf[n] = i
			}
		}
		for i := range inv.Hosts {
			g := &inv.Hosts[i]
			r.hostOf[g.Name] = g
			if _, ok := r.waveOf[g.Name]; ok && g.Domain != "" {
				r.domains[g.Domain] = append(r.domains[g.Domain], g.Name)
			}
			if g.SM() {
				r.sms[g.Fabric] = append(r.sms[g.Fabric], g.Name)
			}
		}
	}
	h := r.hostOf[host]
	if h == nil || wave < 0 || wave >= len(r.Waves.Waves) {
		return nil
	}
	waveOf := r.waveOf
	var lines []string
	if h.Domain == "" {
		lines = append(lines, "domain: none (the inventory names no domain: waves by count only)")
	} else {
		here, all := 0, len(r.domains[h.Domain])
		for _, n := range r.domains[h.Domain] {
			if waveOf[n] == wave {
				here++
			}
		}
		lines = append(lines, fmt.Sprintf("domain: %s, %d of its %d pending %s in this wave (at most %d)", h.Domain, here, all, words.Plural(all, "host", "hosts"), r.Waves.MaxPerDomain))
	}
	if !h.SM() {
		lines = append(lines, "SM pair: not a subnet manager host")
	} else {
		var others []string
		for _, n := range r.sms[h.Fabric] {
			if n == h.Name {
				continue
			}
			if w, ok := waveOf[n]; ok {
				others = append(others, fmt.Sprintf("%s (wave %d)", n, w+1))
			} else {
				others = append(others, n+" (in no wave)")
			}
		}
		if len(others) == 0 {
			lines = append(lines, fmt.Sprintf("SM pair: the only subnet manager host of %s", fabricName(h.Fabric)))
		} else {
			lines = append(lines, fmt.Sprintf("SM pair: subnet manager host of %s, never in a wave with its others: %s", fabricName(h.Fabric), strings.Join(others, ", ")))
		}
	}
	st := r.Steps[wave]
	if r.Policy.Compartments.Order == OrderParallel {
		mine := OtherHosts
		for _, g := range r.Policy.Compartments.Groups {
			if slices.Contains(h.Groups, g) {
				mine = g
			}
		}
		lines = append(lines, fmt.Sprintf("compartment: %s, side by side with the others (%s)", mine, strings.Join(r.Policy.Compartments.Groups, ", ")))
		lines = append(lines, "ramp: "+st.Rule+shortOf(st))
		return lines
	}
	switch st.Compartment {
	case "":
		lines = append(lines, "compartment: none (the policy names none)")
	case OtherHosts:
		lines = append(lines, fmt.Sprintf("compartment: %s, in none of the groups %s; rolled last", OtherHosts, strings.Join(r.Policy.Compartments.Groups, ", ")))
	default:
		lines = append(lines, fmt.Sprintf("compartment: %s (inventory group), %s of %d, each rolled before the next", st.Compartment,
			ordinal(indexOf(r.Policy.Compartments.Groups, st.Compartment)+1), len(r.Policy.Compartments.Groups)))
	}
	step := "ramp: " + st.Rule
	if st.Short != "" {
		step += "; this wave holds " + st.Short
	}
	lines = append(lines, step)
	return lines
}

func shortOf(st Step) string {
	if st.Short == "" {
		return ""
	}
	return "; this wave holds " + st.Short
}

func indexOf(list []string, s string) int {
	for i, e := range list {
		if e == s {
			return i
		}
	}
	return -1
}
