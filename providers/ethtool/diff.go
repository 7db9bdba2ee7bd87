package ethtool

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Plan implements plan.TypedProvider.
func (p *Provider) Plan(req *plan.Request, obs *Observed, _ *plan.Facts) plan.Proposal {
	var prop plan.Proposal
	for _, t := range targets(req) {
		prop.Managed = append(prop.Managed, plan.Managed{Address: Address(t.name), Path: t.path})
		planOne(req, obs, t, &prop)
	}
	return prop
}

// wanted are the values a spec block sets, by the tool's field names.
func wanted(e *schema.Ethtool) (rings, channels map[string]int) {
	set := func(m map[string]int, k string, v *int) map[string]int {
		if v == nil {
			return m
		}
		if m == nil {
			m = map[string]int{}
		}
		m[k] = *v
		return m
	}
	if r := e.Rings; r != nil {
		rings = set(rings, "rx", r.RX)
		rings = set(rings, "tx", r.TX)
	}
	if c := e.Channels; c != nil {
		channels = set(channels, "combined", c.Combined)
		channels = set(channels, "rx", c.RX)
		channels = set(channels, "tx", c.TX)
	}
	return rings, channels
}

func planOne(req *plan.Request, obs *Observed, t target, prop *plan.Proposal) {
	addr := Address(t.name)
	if obs == nil {
		prop.Errors = append(prop.Errors, req.Unreadable(t.path, "rings and channels of %s were not read", t.name))
		return
	}
	if e, ok := obs.Errs[t.name]; ok {
		prop.Errors = append(prop.Errors, req.Unreadable(t.path, "reading %s: %s", t.name, e))
		return
	}
	ifc := obs.Ifaces[t.name]
	if ifc == nil {
		prop.Deferred = append(prop.Deferred, plan.Deferred{Address: addr, Source: req.Pos(t.path),
			Reason: fmt.Sprintf("netdev %s does not exist yet; its rings and channels are planned once it does", t.name)})
		return
	}
	rings, channels := wanted(t.e)
	var attrs []plan.Attr
	var problems []string
	for _, part := range []struct {
		name, flag string
		want       map[string]int
		have       *Params
		no         string
	}{{"rings", "-g", rings, ifc.Rings, ifc.NoRings}, {"channels", "-l", channels, ifc.Channels, ifc.NoChannels}} {
		if part.want == nil {
			continue
		}
		if part.have == nil {
			problems = append(problems, fmt.Sprintf("the driver of %s has no %s to set: `ethtool %s %s` answered %q", t.name, part.name, part.flag, t.name, part.no))
			continue
		}
		for _, k := range sortedKeys(part.want) {
			v := part.want[k]
			max, ok := part.have.Max[k]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s.%s: the driver of %s has no %s %s (`ethtool %s %s` shows n/a)", part.name, k, t.name, k, part.name, part.flag, t.name))
			case v > max:
				problems = append(problems, fmt.Sprintf("%s.%s: %d is above the driver's maximum %d for %s (`ethtool %s %s`, Pre-set maximums)", part.name, k, v, max, t.name, part.flag, t.name))
			case part.have.Cur[k] != v:
				attrs = append(attrs, plan.Attr{Name: part.name + "." + k, Before: strconv.Itoa(part.have.Cur[k]), After: strconv.Itoa(v)})
			}
		}
	}
	if channels != nil && ifc.Channels != nil {
		// The kernel refuses counts that leave no channel to receive or
		// none to send (net/ethtool/channels.c: "requested channel counts
		// would result in no RX or TX channel").
		n := after(ifc.Channels.Cur, channels)
		for _, dir := range []string{"rx", "tx"} {
			if n["combined"]+n[dir] == 0 {
				problems = append(problems, fmt.Sprintf("channels: %s would have no channel left for %s (combined and %s both 0; the kernel refuses it)", t.name, dir, dir))
				break
			}
		}
	}
	if len(problems) > 0 {
		prop.Errors = append(prop.Errors, req.Finding(t.path, "%s", strings.Join(problems, "; ")))
		return
	}
	if len(attrs) == 0 {
		return
	}
	prop.Changes = append(prop.Changes, &plan.Change{Address: addr, Action: plan.Update, Activation: plan.Runtime,
		Source: req.Pos(t.path), Attributes: attrs, Disrupts: []string{t.name},
		Payload: &payload{netdev: t.name, rings: rings, channels: channels, before: ifc}})
}

// after is the channel counts after the change: the current values with
// the wanted ones put over them.
func after(cur, want map[string]int) map[string]int {
	n := map[string]int{}
	for _, k := range []string{"combined", "rx", "tx"} {
		v, ok := want[k]
		if !ok {
			v = cur[k]
		}
		n[k] = v
	}
	return n
}

func sortedKeys(m map[string]int) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
