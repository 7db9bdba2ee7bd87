package plan

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/schema"
)

// expandMatches returns the spec the providers plan: each devices[]
// entry with match becomes an empty entry at its own index (so that its
// findings keep their path) and one entry per adapter function it
// selects, appended after the spec's entries, selecting it by PCI
// address, with the match entry's settings and positions. A spec
// without match is returned as it is.
//
// A match that selects nothing is a finding unless the entry is
// optional; an adapter selected by two entries (two matches, a match and
// an entry that names it, or two entries that name it differently: pci
// and name) is a finding naming both lines.
func expandMatches(spec *schema.Spec, inv *inventory.Inventory) (*schema.Spec, []schema.Finding) {
	has := false
	for i := range spec.Devices {
		has = has || spec.Devices[i].Match != nil
	}
	var out []schema.Finding
	finding := func(path, format string, args ...any) {
		out = append(out, schema.Finding{Path: path, Pos: spec.Src.Lookup(path), Message: fmt.Sprintf(format, args...)})
	}
	x := *spec
	x.Devices = make([]schema.Device, len(spec.Devices))
	aliases := map[string]string{}
	// by is the entry that selected each adapter first: its path.
	by := map[*inventory.Device]string{}
	for i := range spec.Devices {
		d := spec.Devices[i]
		if d.Match == nil {
			x.Devices[i] = d
			if kind, val := d.Selector(); kind != "" {
				if dev := inv.Find(kind, val); dev != nil {
					if prev, dup := by[dev]; dup {
						finding(schema.Path("devices", i, kind), "%s (%s) is already selected by %s at %s; one entry per adapter", dev.Name, dev.PCI, prev, spec.Src.Lookup(prev))
						continue
					}
					by[dev] = schema.Path("devices", i)
				}
			}
		}
	}
	if !has {
		return spec, out
	}
	for i := range spec.Devices {
		d := spec.Devices[i]
		if d.Match == nil {
			continue
		}
		path := schema.Path("devices", i)
		var picked []*inventory.Device
		for _, dev := range inv.Devices {
			if dev.PCI != "" && Matches(d.Match, dev) {
				picked = append(picked, dev)
			}
		}
		sort.Slice(picked, func(a, b int) bool { return picked[a].PCI < picked[b].PCI })
		if len(picked) == 0 && !d.Optional {
			finding(path+".match", "no adapter on this host matches %s (found: %s)", describeMatch(d.Match), describeAdapters(inv))
		}
		rails := railOrder(picked)
		for _, dev := range picked {
			if prev, dup := by[dev]; dup {
				finding(path+".match", "%s (%s) is already selected by %s at %s; one entry per adapter", dev.Name, dev.PCI, prev, spec.Src.Lookup(prev))
				continue
			}
			by[dev] = path
			c := d
			c.Match, c.Optional, c.PCI = nil, false, dev.PCI
			if d.Names != nil {
				c.Names = railNames(d.Names, rails[dev], dev, path, finding)
			}
			aliases[schema.Path("devices", len(x.Devices))] = path
			x.Devices = append(x.Devices, c)
		}
	}
	x.Src = spec.Src.WithAliases(aliases)
	out = append(out, sameNames(&x)...)
	return &x, out
}

// railOrder numbers the functions a match selects, from 0: by NUMA node
// (-1, a node the kernel does not know, first), then by PCI address, so
// that a spec's rail template gives a class of hosts the same names in
// the same places.
func railOrder(picked []*inventory.Device) map[*inventory.Device]int {
	order := append([]*inventory.Device(nil), picked...)
	sort.SliceStable(order, func(a, b int) bool {
		if order[a].NUMANode != order[b].NUMANode {
			return order[a].NUMANode < order[b].NUMANode
		}
		return order[a].PCI < order[b].PCI
	})
	rails := map[*inventory.Device]int{}
	for i, d := range order {
		rails[d] = i
	}
	return rails
}

// railNames is a match entry's names for one function: its rail
// templates with {rail} = first_rail + the function's rail, each checked
// as a name; nil (a finding) when neither is a name.
func railNames(t *schema.Names, rail int, dev *inventory.Device, path string, finding func(path, format string, args ...any)) *schema.Names {
	if t.FirstRail != nil {
		rail += *t.FirstRail
	}
	n := &schema.Names{}
	for _, x := range []struct {
		key   string
		tmpl  string
		to    *string
		check func(string) string
	}{{"rdma", t.RDMA, &n.RDMA, schema.CheckRDMAName}, {"netdev", t.Netdev, &n.Netdev, schema.CheckNetdevName}} {
		if x.tmpl == "" {
			continue
		}
		name := schema.Rail(x.tmpl, rail)
		if m := x.check(name); m != "" {
			finding(path+".names."+x.key, "rail %d (%s at %s): %s", rail, dev.Name, dev.PCI, m)
			continue
		}
		*x.to = name
	}
	if n.RDMA == "" && n.Netdev == "" {
		return nil
	}
	return n
}

// sameNames finds two entries of the expanded spec asking for one name
// (a rail template's name, or its name and an entry's literal one; two
// literal names are a load error already), naming both.
func sameNames(x *schema.Spec) []schema.Finding {
	var out []schema.Finding
	type who struct{ path, pci string }
	seen := map[string]who{}
	for i := range x.Devices {
		d := &x.Devices[i]
		if d.Names == nil {
			continue
		}
		path := schema.Path("devices", i) + ".names"
		pci := d.PCI
		if pci == "" {
			pci = d.NodeGUID
		}
		for _, k := range []struct{ key, name, what string }{{"rdma", d.Names.RDMA, "RDMA device"}, {"netdev", d.Names.Netdev, "netdev"}} {
			if k.name == "" {
				continue
			}
			p := path + "." + k.key
			if prev, dup := seen[k.key+"="+k.name]; dup {
				out = append(out, schema.Finding{Path: p, Pos: x.Src.Lookup(p), Message: fmt.Sprintf("%s name %s is asked for %s here and for %s by %s at %s: one name, one device", k.what, k.name, pci, prev.pci, prev.path, x.Src.Lookup(prev.path))})
				continue
			}
			seen[k.key+"="+k.name] = who{p, pci}
		}
	}
	return out
}

// Matches tells whether an adapter function has every value a match
// gives: part number, PSID and model (the kernel's hca_type), each
// compared exactly.
func Matches(m *schema.Match, d *inventory.Device) bool {
	return (m.PartNumber == "" || m.PartNumber == d.PartNumber) &&
		(m.PSID == "" || m.PSID == d.PSID) &&
		(m.Model == "" || m.Model == d.HCAType)
}

func describeMatch(m *schema.Match) string {
	var s []string
	if m.PartNumber != "" {
		s = append(s, "part_number "+m.PartNumber)
	}
	if m.PSID != "" {
		s = append(s, "psid "+m.PSID)
	}
	if m.Model != "" {
		s = append(s, "model "+m.Model)
	}
	return strings.Join(s, ", ")
}

// describeAdapters lists the host's adapter functions with what a match
// compares.
func describeAdapters(inv *inventory.Inventory) string {
	var s []string
	for _, d := range inv.Devices {
		if d.PCI == "" {
			continue
		}
		s = append(s, fmt.Sprintf("%s at %s: part_number %q, psid %q, model %q", d.Name, d.PCI, d.PartNumber, d.PSID, d.HCAType))
	}
	if len(s) == 0 {
		return "no PCI adapters"
	}
	sort.Strings(s)
	return strings.Join(s, "; ")
}
