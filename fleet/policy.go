package fleet

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// A rollout policy file: what `rdmaform waves --policy FILE` reads, and
// what the rollout role and the agent are to read later, so that the
// three compute the same waves from one file. A small YAML document:
//
//	version: 1
//	max_unavailable: 20%      # N hosts or P% of the inventory's
//	max_per_domain: 1
//	canary: 1                 # the first wave's hosts (needs ramp)
//	bake: 10m                 # a wait between waves; the finished hosts' probes run again
//	ramp:
//	  steps: [5%, 20%]        # later waves; the last step repeats
//	  # factor: 2             # or: each wave the one before times this
//	stop:
//	  failed_hosts: 3         # stop once 3 hosts failed, in all
//	  failed_percent: 10      # stop when more than 10% of a wave failed
//	compartments:
//	  order: sequential       # each compartment's waves before the next's (or parallel: side by side)
//	  groups: [gpu, storage]  # inventory groups, in this order
//
// Every key is optional; a file with none is the default policy (20%, 1
// of a domain, waves of equal size, no stop rule beyond the first failed
// host, no compartments).

// Bounds of a policy's numbers, each tested at the limit and one past.
const (
	MaxCanary    = MaxHosts       // canary: 1 to MaxHosts, and at most max_unavailable
	MaxRampSteps = 100            // ramp.steps: 1 to 100 entries
	MaxFactor    = 10             // ramp.factor: more than 1, at most 10
	MaxGroups    = 64             // compartments.groups: 1 to 64 names
	MaxBake      = 24 * time.Hour // bake: 0s to 24h, whole seconds
	maxGroupName = 255
)

// Ramp is how the waves after the canary grow: Steps (a size per wave,
// the last one repeating) or Factor (each wave Factor times the one
// before, rounded up). The zero Ramp is none: waves of equal size.
type Ramp struct {
	Steps  []Limit
	Factor float64
}

// On tells whether the policy asks for a ramp.
func (r Ramp) On() bool { return len(r.Steps) > 0 || r.Factor > 0 }

// Stop is the stop rules: the rollout stops once FailedHosts hosts have
// failed in all (0: the first failed host stops it, as without a rule),
// or when more than FailedPercent % of one wave's hosts failed (-1: no
// such rule).
type Stop struct {
	FailedHosts   int
	FailedPercent int
}

// Compartments are node classes, each an inventory group, rolled one
// after the other (Order "sequential") or side by side ("parallel").
type Compartments struct {
	Order  string
	Groups []string
}

// Rollout is a whole policy: the wave limits, the ramp, the stop rules
// and the compartments.
type Rollout struct {
	Policy
	Canary int // the first wave's hosts; 0 when there is no ramp
	Ramp   Ramp
	// Bake is the wait after a wave before the next starts, during which
	// the hosts that wave finished are probed again (0: none).
	Bake         time.Duration
	Stop         Stop
	Compartments Compartments
}

// DefaultRollout is the policy without a file: 20% of the hosts, 1 of a
// domain, no ramp, the first failed host stops the rollout.
func DefaultRollout() Rollout {
	return Rollout{Policy: Policy{MaxUnavailable: Limit{Percent: 20}, MaxPerDomain: 1}, Stop: Stop{FailedHosts: 1, FailedPercent: -1}}
}

// StopAfter tells whether the rollout stops after a wave of waveHosts
// hosts in which waveFailed failed, failed in all so far (this wave's
// included), and why.
func (s Stop) StopAfter(failed, waveFailed, waveHosts int) (bool, string) {
	k := max(s.FailedHosts, 1)
	if failed >= k {
		return true, fmt.Sprintf("%d failed %s: the policy stops at %d (stop.failed_hosts)", failed, plural(failed, "host", "hosts"), k)
	}
	if s.FailedPercent >= 0 && waveHosts > 0 && waveFailed*100 > s.FailedPercent*waveHosts {
		return true, fmt.Sprintf("%d of the wave's %d hosts failed, more than %d%% (stop.failed_percent)", waveFailed, waveHosts, s.FailedPercent)
	}
	return false, ""
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ReadPolicy reads a policy file (YAML); every error is file:line:col.
func ReadPolicy(file string, data []byte) (Rollout, error) {
	r := DefaultRollout()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return r, &Error{File: file, Msg: err.Error()}
	}
	if len(doc.Content) == 0 {
		return r, nil // an empty file: the default policy
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return r, at(file, root, "want a mapping (version, max_unavailable, max_per_domain, canary, bake, ramp, stop, compartments)")
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if seen[k.Value] {
			return r, at(file, k, "%s is given twice", k.Value)
		}
		seen[k.Value] = true
		var err *Error
		switch k.Value {
		case "version":
			if n, ok := intOf(v); !ok || n != 1 {
				err = at(file, v, "version: want 1, not %q", v.Value)
			}
		case "max_unavailable":
			l, e := ParseLimit(v.Value)
			if v.Kind != yaml.ScalarNode || e != nil {
				err = at(file, v, "max_unavailable: want a number of hosts (1 to %d) or a percentage (1%% to 100%%), not %q", MaxHosts, v.Value)
			}
			r.MaxUnavailable = l
		case "max_per_domain":
			r.MaxPerDomain, err = bounded(file, "max_per_domain", v, 1, MaxHosts)
		case "canary":
			r.Canary, err = bounded(file, "canary", v, 1, MaxCanary)
		case "bake":
			r.Bake, err = readBake(file, v)
		case "ramp":
			r.Ramp, err = readRamp(file, v)
		case "stop":
			r.Stop, err = readStop(file, v)
		case "compartments":
			r.Compartments, err = readCompartments(file, v)
		default:
			err = at(file, k, "unknown key %q (version, max_unavailable, max_per_domain, canary, bake, ramp, stop, compartments)", k.Value)
		}
		if err != nil {
			return r, err
		}
	}
	if r.Canary > 0 && !r.Ramp.On() {
		return r, at(file, mapGet(root, "canary"), "canary: a canary wave needs a ramp (ramp.steps or ramp.factor) for the waves after it")
	}
	if r.Ramp.On() && r.Canary == 0 {
		r.Canary = 1
	}
	return r, nil
}

// intOf reads a plain decimal integer scalar.
func intOf(v *yaml.Node) (int, bool) {
	if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!str") {
		return 0, false
	}
	return digits(v.Value)
}

func bounded(file, key string, v *yaml.Node, lo, hi int) (int, *Error) {
	n, ok := intOf(v)
	if !ok || n < lo || n > hi {
		return 0, at(file, v, "%s: want a whole number from %d to %d, not %q", key, lo, hi, v.Value)
	}
	return n, nil
}

// readBake reads a Go duration in whole seconds, 0s to MaxBake.
func readBake(file string, v *yaml.Node) (time.Duration, *Error) {
	d, err := time.ParseDuration(v.Value)
	if v.Kind != yaml.ScalarNode || v.Tag != "!!str" || err != nil || d < 0 || d > MaxBake || d%time.Second != 0 {
		return 0, at(file, v, "bake: want a duration in whole seconds from 0s to 24h (90s, 10m, 1h30m), not %q", v.Value)
	}
	return d, nil
}

func readRamp(file string, v *yaml.Node) (Ramp, *Error) {
	var r Ramp
	if v.Kind != yaml.MappingNode {
		return r, at(file, v, "ramp: want a mapping with steps or factor")
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, e := v.Content[i], v.Content[i+1]
		switch k.Value {
		case "steps":
			if e.Kind != yaml.SequenceNode || len(e.Content) == 0 || len(e.Content) > MaxRampSteps {
				return r, at(file, e, "ramp.steps: want a list of 1 to %d sizes (N hosts or P%%)", MaxRampSteps)
			}
			for j, s := range e.Content {
				l, err := ParseLimit(s.Value)
				if s.Kind != yaml.ScalarNode || err != nil {
					return r, at(file, s, "ramp.steps[%d]: want a number of hosts (1 to %d) or a percentage (1%% to 100%%), not %q", j, MaxHosts, s.Value)
				}
				r.Steps = append(r.Steps, l)
			}
		case "factor":
			f, err := strconv.ParseFloat(e.Value, 64)
			if e.Kind != yaml.ScalarNode || err != nil || math.IsNaN(f) || f <= 1 || f > MaxFactor || strings.ContainsAny(e.Value, "eExXpP_") {
				return r, at(file, e, "ramp.factor: want a number more than 1 and at most %d (2, 1.5), not %q", MaxFactor, e.Value)
			}
			r.Factor = f
		default:
			return r, at(file, k, "ramp: unknown key %q (steps, factor)", k.Value)
		}
	}
	if len(r.Steps) > 0 && r.Factor > 0 {
		return r, at(file, v, "ramp: steps or factor, not both")
	}
	if !r.On() {
		return r, at(file, v, "ramp: want steps or factor")
	}
	return r, nil
}

func readStop(file string, v *yaml.Node) (Stop, *Error) {
	s := Stop{FailedHosts: 1, FailedPercent: -1}
	if v.Kind != yaml.MappingNode {
		return s, at(file, v, "stop: want a mapping with failed_hosts, failed_percent")
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, e := v.Content[i], v.Content[i+1]
		var err *Error
		switch k.Value {
		case "failed_hosts":
			s.FailedHosts, err = bounded(file, "stop.failed_hosts", e, 1, MaxHosts)
		case "failed_percent":
			s.FailedPercent, err = bounded(file, "stop.failed_percent", e, 0, 99)
		default:
			err = at(file, k, "stop: unknown key %q (failed_hosts, failed_percent)", k.Value)
		}
		if err != nil {
			return s, err
		}
	}
	return s, nil
}

func readCompartments(file string, v *yaml.Node) (Compartments, *Error) {
	c := Compartments{Order: OrderSequential}
	if v.Kind != yaml.MappingNode {
		return c, at(file, v, "compartments: want a mapping with groups (and order)")
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, e := v.Content[i], v.Content[i+1]
		switch k.Value {
		case "order":
			if e.Kind != yaml.ScalarNode || (e.Value != OrderSequential && e.Value != OrderParallel) {
				return c, at(file, e, "compartments.order: want sequential (each compartment's waves before the next's) or parallel (side by side), not %q", e.Value)
			}
			c.Order = e.Value
		case "groups":
			if e.Kind != yaml.SequenceNode || len(e.Content) == 0 || len(e.Content) > MaxGroups {
				return c, at(file, e, "compartments.groups: want a list of 1 to %d inventory groups", MaxGroups)
			}
			seen := map[string]bool{}
			for j, g := range e.Content {
				if g.Kind != yaml.ScalarNode || !groupName(g.Value) {
					return c, at(file, g, "compartments.groups[%d]: %q is not an inventory group name (letters, digits, _ and -, at most %d)", j, g.Value, maxGroupName)
				}
				if seen[g.Value] {
					return c, at(file, g, "compartments.groups[%d]: %s is named twice", j, g.Value)
				}
				seen[g.Value] = true
				c.Groups = append(c.Groups, g.Value)
			}
		default:
			return c, at(file, k, "compartments: unknown key %q (order, groups)", k.Value)
		}
	}
	if len(c.Groups) == 0 {
		return c, at(file, v, "compartments: want groups")
	}
	return c, nil
}

// groupName is an Ansible group name: letters, digits, _ and -.
func groupName(s string) bool {
	if s == "" || len(s) > maxGroupName {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}
