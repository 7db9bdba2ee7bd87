package crosscheck

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/schema"
)

// DefaultFabric is the fabric of a subnet manager whose spec names none.
const DefaultFabric = "default"

// fabricOf is the fabric a subnet manager serves.
func fabricOf(sm *schema.SubnetManager) string {
	if sm.Fabric == "" {
		return DefaultFabric
	}
	return sm.Fabric
}

// subnetManagers checks the subnet managers of each fabric together:
// exactly one of the highest priority (a tie goes to the lowest port
// GUID, which no spec says: a warning, as the issue asks), and the same partitions on each (a standby
// that takes over programs its own).
func (l *linter) subnetManagers() {
	byFabric := map[string][]*Host{}
	for _, h := range l.hosts {
		if sm := h.Spec.SubnetManager; sm != nil {
			byFabric[fabricOf(sm)] = append(byFabric[fabricOf(sm)], h)
		}
	}
	fabrics := make([]string, 0, len(byFabric))
	for f := range byFabric {
		fabrics = append(fabrics, f)
	}
	sort.Strings(fabrics)
	for _, f := range fabrics {
		hs := byFabric[f]
		if len(hs) < 2 {
			continue
		}
		prio := func(h *Host) int {
			if p := h.Spec.SubnetManager.Priority; p != nil {
				return *p
			}
			return 0 // opensm's default sm_priority
		}
		top := slices.MaxFunc(hs, func(a, b *Host) int { return prio(a) - prio(b) })
		var tied []string
		for _, h := range hs {
			if prio(h) == prio(top) {
				tied = append(tied, h.Name)
			}
		}
		if len(tied) > 1 {
			for _, h := range hs {
				if prio(h) == prio(top) {
					l.warn(h, pathIf2(h.Spec.SubnetManager.Priority != nil, "$.subnet_manager", ".priority"), "subnet managers %s of fabric %s share the highest priority %d: the lowest port GUID becomes master, which no spec says; give the intended master a higher priority",
						strings.Join(tied, ", "), f, prio(top))
				}
			}
		}
		ref := top
		for _, h := range hs {
			if h == ref {
				continue
			}
			if d := partitionsDiffer(ref.Spec.SubnetManager, h.Spec.SubnetManager); d != "" {
				l.add(h, "$.subnet_manager.partitions", "the partitions of %s differ from those of %s, the master of fabric %s (%s): when this standby takes over it programs its own; give both the same partitions",
					h.Name, ref.Name, f, d)
			}
		}
	}
	l.partitionsOfIPoIB(byFabric)
}

func pathIf2(ok bool, base, suffix string) string {
	if ok {
		return base + suffix
	}
	return base
}

// partitionsDiffer says how two subnet managers' partitions differ, ""
// when they are the same (by P_Key: name, flags and members).
func partitionsDiffer(a, b *schema.SubnetManager) string {
	key := func(sm *schema.SubnetManager) map[int]string {
		m := map[int]string{}
		for i := range sm.Partitions {
			p := &sm.Partitions[i]
			var ms []string
			for _, x := range p.Members {
				ms = append(ms, strings.ToLower(x.GUID)+"="+x.Membership)
			}
			sort.Strings(ms)
			m[p.PartitionKey()] = fmt.Sprintf("%s %v %s %s", p.Name, p.IPoIB != nil, p.DefaultMembership, strings.Join(ms, ","))
		}
		return m
	}
	ka, kb := key(a), key(b)
	var d []string
	for k, v := range ka {
		if w, ok := kb[k]; !ok {
			d = append(d, fmt.Sprintf("0x%04x missing", k))
		} else if w != v {
			d = append(d, fmt.Sprintf("0x%04x differs", k))
		}
	}
	for k := range kb {
		if _, ok := ka[k]; !ok {
			d = append(d, fmt.Sprintf("0x%04x extra", k))
		}
	}
	sort.Strings(d)
	return strings.Join(d, ", ")
}

// partitionsOfIPoIB checks each IPoIB P_Key against the partitions of the
// fabric's subnet manager (when the specs describe one fabric): the
// partition exists, and a member can talk (a limited member needs a full
// member). Membership given by port GUID cannot be matched to a host's
// spec, so only all and all_cas decide what a host is.
func (l *linter) partitionsOfIPoIB(byFabric map[string][]*Host) {
	if len(byFabric) != 1 {
		return // which fabric an IPoIB host is on, its spec does not say
	}
	var sms []*Host
	for _, hs := range byFabric {
		sms = hs
	}
	sm := sms[0]
	for _, h := range sms {
		if p := h.Spec.SubnetManager.Priority; p != nil && (sm.Spec.SubnetManager.Priority == nil || *p > *sm.Spec.SubnetManager.Priority) {
			sm = h
		}
	}
	parts := map[int]*schema.Partition{}
	for i := range sm.Spec.SubnetManager.Partitions {
		p := &sm.Spec.SubnetManager.Partitions[i]
		parts[p.PartitionKey()] = p
	}
	for _, h := range l.hosts {
		for i := range h.Spec.IPoIB {
			c := &h.Spec.IPoIB[i]
			if c.PKey == nil || c.State == "absent" {
				continue
			}
			path := schema.Path("ipoib", i) + ".pkey"
			k := c.Partition() & 0x7fff
			p, ok := parts[k]
			if !ok {
				l.add(h, path, "partition 0x%04x of IPoIB connection %s is not in the partitions of subnet manager %s (at %s): the port will not have the P_Key and the interface stays down",
					k, c.Name, sm.Name, sm.pos("$.subnet_manager"))
				continue
			}
			anyFull, casFull, byGUID := memberships(p)
			switch {
			case byGUID:
				// a member by GUID may be this host
			case !anyFull:
				l.add(h, path, "partition 0x%04x (%s) has no full member in subnet manager %s's spec: limited members cannot talk to each other", k, p.Name, sm.Name)
			case c.Membership != "limited" && !casFull && h != sm:
				l.add(h, path, "IPoIB connection %s asks full membership of 0x%04x, but subnet manager %s makes only its own port a full member of %s: use membership: limited, or make this host a full member",
					c.Name, k, sm.Name, p.Name)
			}
		}
	}
}

// memberships: whether some member is full (or both), whether every
// channel adapter is (all or all_cas full), and whether some member is a
// port GUID (whose host no spec names).
func memberships(p *schema.Partition) (anyFull, casFull, byGUID bool) {
	for _, m := range p.Members {
		ms := m.Membership
		if ms == "" {
			ms = p.DefaultMembership
		}
		g := strings.ToLower(m.GUID)
		if !slices.Contains(schema.SMKeywords, g) {
			byGUID = true
		}
		if ms != "full" && ms != "both" {
			continue
		}
		if g != "all_switches" && g != "all_routers" {
			anyFull = true
		}
		if g == "all" || g == "all_cas" {
			casFull = true
		}
	}
	return anyFull, casFull, byGUID
}
