package fleet

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/internal/words"
)

// Limit is --max-unavailable: N hosts, or P percent of the inventory's
// hosts (rounded down, at least 1).
type Limit struct {
	N       int
	Percent int // 1..100 when the limit is a percentage, else 0
}

// ErrLimit is what every bad limit is (errors.Is).
var ErrLimit = errors.New("bad limit")

// MaxHosts is the most hosts --max-unavailable N and --max-per-domain K
// may name: the rollout role checks the same bound
// (ansible/roles/rollout/tasks/main.yml).
const MaxHosts = 100000

// ParseLimit reads N (1 to MaxHosts) or P% (1% to 100%), digits only.
func ParseLimit(s string) (Limit, error) {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		n, ok := digits(p)
		if !ok || n < 1 || n > 100 {
			return Limit{}, fmt.Errorf("%w: %q: a percentage is 1%% to 100%%", ErrLimit, s)
		}
		return Limit{Percent: n}, nil
	}
	n, ok := digits(s)
	if !ok || n < 1 || n > MaxHosts {
		return Limit{}, fmt.Errorf("%w: %q: want a number of hosts (1 to %d) or a percentage (1%% to 100%%)", ErrLimit, s, MaxHosts)
	}
	return Limit{N: n}, nil
}

// digits reads a number of at most 7 decimal digits (no sign, no space),
// as the rollout role's check does.
func digits(s string) (int, bool) {
	if s == "" || len(s) > 7 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

func (l Limit) String() string {
	if l.Percent > 0 {
		return strconv.Itoa(l.Percent) + "%"
	}
	return strconv.Itoa(l.N)
}

// Of is the number of hosts per wave the limit allows in an inventory
// of total hosts.
func (l Limit) Of(total int) int {
	if l.Percent == 0 {
		return l.N
	}
	return max(1, total*l.Percent/100)
}

// Policy is what a wave may hold.
type Policy struct {
	MaxUnavailable Limit
	// MaxPerDomain is the most hosts of one failure domain in one wave
	// (1 or more).
	MaxPerDomain int
}

// Wave is hosts rolled at once, each with the reason it is in this wave.
type Wave struct {
	Hosts   []string
	Reasons map[string]string
}

// LeftOut is a host no wave holds, and why.
type LeftOut struct {
	Host, Reason string
}

// Waves is a rollout's plan.
type Waves struct {
	Hosts   int // in the inventory
	Pending int // in a wave
	// PerWave is MaxUnavailable in hosts; MaxPerDomain as given.
	PerWave, MaxPerDomain int
	// CountOnly: the inventory names no domain, so only PerWave and the
	// subnet manager hosts shape the waves.
	CountOnly bool
	// Bound says what set the number of waves.
	Bound   string
	Waves   []Wave
	LeftOut []LeftOut
}

// Plan cuts the inventory's pending hosts (Pending yes or unknown) into
// waves: at most PerWave hosts and MaxPerDomain hosts of one domain in
// each, never two subnet manager hosts of one fabric together. The
// result depends only on the hosts and the policy, not on their order.
//
// It takes the fewest waves L the limits allow (the most of
// ceil(hosts/PerWave), ceil(domain's hosts/MaxPerDomain) for each domain,
// the subnet manager hosts of each fabric), lines the hosts up domain by
// domain (largest first, each domain's subnet manager hosts first, then
// by name) and deals them round robin into the L waves: a domain's hosts
// are consecutive, so no wave gets more than ceil(n/L) of them. Two
// subnet manager hosts of a fabric dealt into one wave are parted by
// swapping one with a host of its own domain in another wave (sizes and
// domain counts stay); when no swap parts them, it takes one wave more.
func Plan(inv *Inventory, p Policy) (*Waves, error) {
	if p.MaxPerDomain < 1 || p.MaxPerDomain > MaxHosts {
		return nil, fmt.Errorf("%w: --max-per-domain %d: want 1 to %d", ErrLimit, p.MaxPerDomain, MaxHosts)
	}
	if (p.MaxUnavailable.N < 1 || p.MaxUnavailable.N > MaxHosts) && (p.MaxUnavailable.Percent < 1 || p.MaxUnavailable.Percent > 100) {
		return nil, fmt.Errorf("%w: --max-unavailable %s: want 1 to %d hosts, or 1%% to 100%%", ErrLimit, p.MaxUnavailable, MaxHosts)
	}
	w := &Waves{Hosts: len(inv.Hosts), PerWave: p.MaxUnavailable.Of(len(inv.Hosts)), MaxPerDomain: p.MaxPerDomain}

	var pending []*Host
	var named, unnamed []string
	hosts := make([]*Host, len(inv.Hosts))
	for i := range inv.Hosts {
		hosts[i] = &inv.Hosts[i]
	}
	sort.Slice(hosts, func(i, j int) bool { return NameLess(hosts[i].Name, hosts[j].Name) })
	for _, h := range hosts {
		if h.Domain == "" {
			unnamed = append(unnamed, h.Name)
		} else {
			named = append(named, h.Name)
		}
		if h.Pending == PendingNo {
			why := h.Why
			if why == "" {
				why = "nothing pending"
			}
			w.LeftOut = append(w.LeftOut, LeftOut{Host: h.Name, Reason: why})
			continue
		}
		pending = append(pending, h)
	}
	if len(named) > 0 && len(unnamed) > 0 {
		return nil, fmt.Errorf("%w: %d %s no domain (%s) while %d %s one: give every host a domain, or none for waves by count only",
			ErrInventory, len(unnamed), words.Plural(len(unnamed), "host has", "hosts have"), list(unnamed), len(named), words.Plural(len(named), "has", "have"))
	}
	w.CountOnly = len(named) == 0
	w.Pending = len(pending)
	if len(pending) == 0 {
		return w, nil
	}

	// The domains, largest first; without domains, one line of hosts
	// whose subnet manager hosts come first, fabric by fabric.
	type domain struct {
		name  string
		hosts []*Host
	}
	byName := map[string]*domain{}
	var domains []*domain
	sms := map[string]int{}
	for _, h := range pending {
		key := h.Domain
		d := byName[key]
		if d == nil {
			d = &domain{name: key}
			byName[key] = d
			domains = append(domains, d)
		}
		d.hosts = append(d.hosts, h)
		if h.SM() {
			sms[h.Fabric]++
		}
	}
	sort.SliceStable(domains, func(i, j int) bool {
		a, b := domains[i], domains[j]
		if len(a.hosts) != len(b.hosts) {
			return len(a.hosts) > len(b.hosts)
		}
		return NameLess(a.name, b.name)
	})
	var line []*Host
	for _, d := range domains {
		sort.SliceStable(d.hosts, func(i, j int) bool {
			a, b := d.hosts[i], d.hosts[j]
			if a.SM() != b.SM() {
				return a.SM()
			}
			if a.SM() && a.Fabric != b.Fabric {
				return NameLess(a.Fabric, b.Fabric)
			}
			return NameLess(a.Name, b.Name)
		})
		line = append(line, d.hosts...)
	}

	// The fewest waves the limits allow, and which limit that is.
	L := ceilDiv(len(pending), w.PerWave)
	w.Bound = fmt.Sprintf("%d pending %s, at most %d per wave", len(pending), words.Plural(len(pending), "host", "hosts"), w.PerWave)
	if !w.CountOnly {
		for _, d := range domains { // largest first: the first one binds
			if n := ceilDiv(len(d.hosts), p.MaxPerDomain); n > L {
				L = n
				w.Bound = fmt.Sprintf("domain %s has %d pending %s, at most %d of a domain per wave", d.name, len(d.hosts), words.Plural(len(d.hosts), "host", "hosts"), p.MaxPerDomain)
			}
		}
	}
	fabrics := make([]string, 0, len(sms))
	for f := range sms {
		fabrics = append(fabrics, f)
	}
	sort.Slice(fabrics, func(i, j int) bool { return NameLess(fabrics[i], fabrics[j]) })
	for _, f := range fabrics {
		if sms[f] > L {
			L = sms[f]
			w.Bound = fmt.Sprintf("%s has %d subnet manager hosts, never two in one wave", fabricName(f), sms[f])
		}
	}

	var wave []int // line index -> wave
	for ; ; L++ {
		wave = deal(len(line), L)
		if part(line, wave) {
			break
		}
		w.Bound = "subnet manager hosts that no swap within their domains could part"
	}

	// The waves, each host with its reason.
	w.Waves = make([]Wave, L)
	for i := range w.Waves {
		w.Waves[i].Reasons = map[string]string{}
	}
	index := map[*Host]int{}
	for i, h := range line {
		index[h] = i
	}
	for _, d := range domains {
		for i, h := range d.hosts {
			var why string
			if w.CountOnly {
				why = fmt.Sprintf("%s of %d pending hosts, dealt in turn into %d waves of at most %d (no domains in the inventory)", ordinal(i+1), len(d.hosts), L, w.PerWave)
			} else {
				why = fmt.Sprintf("domain %s: %s of its %d pending %s, at most %d of a domain per wave", d.name, ordinal(i+1), len(d.hosts), words.Plural(len(d.hosts), "host", "hosts"), p.MaxPerDomain)
			}
			if h.SM() {
				why += fmt.Sprintf("; subnet manager host, the only one of %s in this wave", fabricName(h.Fabric))
			}
			if h.Why != "" {
				why += "; pending: " + h.Why
			}
			wv := &w.Waves[wave[index[h]]]
			wv.Hosts = append(wv.Hosts, h.Name)
			wv.Reasons[h.Name] = why
		}
	}
	for i := range w.Waves {
		sort.Slice(w.Waves[i].Hosts, func(a, b int) bool { return NameLess(w.Waves[i].Hosts[a], w.Waves[i].Hosts[b]) })
	}
	return w, nil
}

// deal gives line position i the wave i mod L.
func deal(n, L int) []int {
	wave := make([]int, n)
	for i := range wave {
		wave[i] = i % L
	}
	return wave
}

// part moves subnet manager hosts of one fabric out of each other's
// waves, each by a swap with a host of its own domain that runs no
// subnet manager (the swap keeps every wave's size and domain counts):
// the later of two that met moves, else the earlier one. False when
// neither can.
func part(line []*Host, wave []int) bool {
	used := map[string]map[int]int{} // fabric -> wave -> line index of its SM there
	for i, h := range line {
		if !h.SM() {
			continue
		}
		u := used[h.Fabric]
		if u == nil {
			u = map[int]int{}
			used[h.Fabric] = u
		}
		k, met := u[wave[i]]
		switch {
		case !met:
		case swap(line, wave, i, u):
		case swap(line, wave, k, u):
			delete(u, wave[i])
			u[wave[k]] = k
		default:
			return false
		}
		u[wave[i]] = i
	}
	return true
}

// swap moves line[i] to a wave without a subnet manager host of its
// fabric (u) by swapping it with a host of its domain that runs none.
func swap(line []*Host, wave []int, i int, u map[int]int) bool {
	for j, g := range line {
		if _, taken := u[wave[j]]; taken || g.Domain != line[i].Domain || g.SM() {
			continue
		}
		wave[i], wave[j] = wave[j], wave[i]
		return true
	}
	return false
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func fabricName(f string) string {
	if f == "" {
		return "the fabric"
	}
	return "fabric " + f
}

// list names up to 5 hosts, then how many more.
func list(names []string) string {
	if len(names) <= 5 {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:5], ", ") + fmt.Sprintf(" and %d more", len(names)-5)
}
