package netdev

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Plan implements plan.TypedProvider.
func (p *Provider) Plan(req *plan.Request, obs *Observed, facts *plan.Facts) plan.Proposal {
	prop := diff(req, obs, facts)
	for i, it := range req.Spec.Interfaces {
		prop.Managed = append(prop.Managed, plan.Managed{Address: Address(it.Name), Path: schema.Path("interfaces", i)})
	}
	return prop
}

func diff(req *plan.Request, obs *Observed, facts *plan.Facts) plan.Proposal {
	var prop plan.Proposal
	if obs == nil {
		return prop
	}
	// ib_ipoib loaded by this plan makes the IPoIB netdevs.
	ipoibLoad, ipoibLoaded := facts.ModuleLoad(IPoIBModule)
	// mlx4 port types this plan switches make the netdevs of the new link
	// layer.
	switched := nowCauses(facts)
	for i, it := range req.Spec.Interfaces {
		path := schema.Path("interfaces", i)
		want, pos, bad := wantAddrs(it.Addresses)
		if bad {
			continue // validation reported it
		}
		ifc, ok := obs.Ifaces[it.Name]
		if !ok {
			switch {
			case ipoibLoaded && hasIBPort(req):
				// ib_ipoib is loaded by this plan and makes the IPoIB
				// netdevs: set everything once it has.
				prop.Changes = append(prop.Changes, missingChange(req, it, path, want, nil, ipoibLoad))
			case len(switched) > 0:
				// A port this plan switches at once (an mlx4 port type)
				// gets the netdev of its new link layer: set everything
				// once the switch has made it.
				prop.Changes = append(prop.Changes, missingChange(req, it, path, want, nil, switched...))
			default:
				if reason, staged := facts.BootReason(); staged {
					prop.Deferred = append(prop.Deferred, plan.Deferred{Address: Address(it.Name),
						Reason: fmt.Sprintf("netdev %s does not exist yet; %s", it.Name, reason), Source: req.Pos(path + ".name")})
					continue
				}
				prop.Errors = append(prop.Errors, req.Finding(path+".name", "no network interface %s on this host", it.Name))
			}
			continue
		}
		if dev, port := req.Inv.PortOfNetdev(it.Name); dev != nil && dev.PCI != "" {
			if cause, anew := facts.DeviceCreated(dev.Name); anew {
				// The card is registered anew in this plan (an mlx4 port
				// type): its netdevs come back with the driver's MTU and
				// no addresses, so everything is set after that.
				if l, ok := facts.LinkNow(dev.PCI, port.Num); ok && l.To != port.LinkLayer {
					prop.Errors = append(prop.Errors, req.Finding(path+".name", "%s is the %s netdev of port %d of %s, which becomes %s in this plan (%s); it goes away", it.Name, port.LinkLayer, port.Num, dev.Name, l.To, l.Cause))
					continue
				}
				prop.Changes = append(prop.Changes, missingChange(req, it, path, want, beforeOf(ifc), cause))
				continue
			}
		}
		pl := &payload{name: it.Name, before: beforeOf(ifc)}
		var attrs []plan.Attr
		if it.State != "" {
			up := it.State == "up"
			if up != ifc.Link.AdminUp {
				pl.up = &up
				attrs = append(attrs, plan.Attr{Name: "state", Before: stateWord(ifc.Link.AdminUp), After: it.State})
			}
		}
		if it.MTU != nil && *it.MTU != ifc.Link.MTU {
			pl.mtu = it.MTU
			attrs = append(attrs, plan.Attr{Name: "mtu", Before: strconv.Itoa(ifc.Link.MTU), After: strconv.Itoa(*it.MTU)})
		}
		if it.Addresses != nil {
			a, findings := diffAddrs(req, path, it.Name, want, pos, ifc.Addrs)
			prop.Errors = append(prop.Errors, findings...)
			if len(findings) > 0 {
				continue
			}
			if a != nil {
				pl.addrs, pl.manageAddrs = want, true
				attrs = append(attrs, *a)
			}
		}
		if len(attrs) == 0 {
			continue
		}
		prop.Changes = append(prop.Changes, &plan.Change{
			Address: Address(it.Name), Action: plan.Update, Activation: plan.Runtime, Source: req.Pos(path), Attributes: attrs, Payload: pl, Disrupts: disrupts(pl),
		})
	}
	return prop
}

// nowCauses are the changes of this plan that switch a port's link layer
// at once, each making the netdev of the new link layer.
func nowCauses(facts *plan.Facts) []plan.Address {
	var out []plan.Address
	seen := map[plan.Address]bool{}
	for _, l := range facts.LinkChanges() {
		if l.When == plan.Runtime && !l.Staged && !seen[l.Cause] {
			seen[l.Cause] = true
			out = append(out, l.Cause)
		}
	}
	return out
}

// missingChange sets every managed attribute of a netdev that the changes
// at causes make appear, or make anew (a module load, a port type), once
// it has; was is what the netdev had before, for Revert (nil when it had
// none).
func missingChange(req *plan.Request, it schema.Interface, path string, want []netip.Prefix, was *before, causes ...plan.Address) *plan.Change {
	pl := &payload{name: it.Name, appears: true, before: was}
	var attrs []plan.Attr
	if it.State != "" {
		up := it.State == "up"
		pl.up = &up
		attrs = append(attrs, plan.Attr{Name: "state", After: it.State})
	}
	if it.MTU != nil {
		pl.mtu = it.MTU
		attrs = append(attrs, plan.Attr{Name: "mtu", After: strconv.Itoa(*it.MTU)})
	}
	if it.Addresses != nil {
		pl.addrs, pl.manageAddrs = want, true
		attrs = append(attrs, plan.Attr{Name: "addresses", After: joinPrefixes(want)})
	}
	return &plan.Change{
		Address: Address(it.Name), Action: plan.Update, Activation: plan.Runtime, Source: req.Pos(path), Attributes: attrs, Payload: pl,
		DependsOn: causes,
	}
}

func hasIBPort(req *plan.Request) bool {
	for _, d := range req.Inv.Devices {
		for _, p := range d.Ports {
			if p.LinkLayer == linklayer.InfiniBand {
				return true
			}
		}
	}
	return false
}

func stateWord(up bool) string {
	if up {
		return "up"
	}
	return "down"
}

// wantAddrs parses the spec's addresses, sorted, with each one's index in
// the spec; bad is true when one does not parse (a validation finding
// already).
func wantAddrs(in []string) (out []netip.Prefix, pos map[netip.Prefix]int, bad bool) {
	pos = map[netip.Prefix]int{}
	for j, a := range in {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			return nil, nil, true
		}
		out = append(out, p)
		pos[p] = j
	}
	sortPrefixes(out)
	return out, pos, false
}

// diffAddrs compares the wanted static addresses with what the netdev
// has. Link-local, host-scope and dynamic (DHCP, SLAAC, kernel-made)
// addresses are never removed; flags (tentative, ...) do not matter. It
// returns the addresses attribute when they differ, nil when they match.
func diffAddrs(req *plan.Request, path, name string, want []netip.Prefix, pos map[netip.Prefix]int, have []host.Addr) (*plan.Attr, []schema.Finding) {
	var findings []schema.Finding
	static := map[netip.Prefix]bool{}
	dynamic := map[netip.Prefix]bool{}
	for _, a := range have {
		switch {
		case a.Dynamic:
			dynamic[a.Prefix] = true
		case a.Global:
			static[a.Prefix] = true
		}
	}
	wanted := map[netip.Prefix]bool{}
	differ := false
	for _, p := range want {
		wanted[p] = true
		if dynamic[p] && !static[p] {
			findings = append(findings, req.Finding(fmt.Sprintf("%s.addresses[%d]", path, pos[p]),
				"%s is on %s as a dynamic address (DHCP or SLAAC); rdmaform does not take over addresses the kernel or a DHCP client owns", p, name))
			continue
		}
		if !static[p] {
			differ = true
		}
	}
	var before []netip.Prefix
	for p := range static {
		before = append(before, p)
		if !wanted[p] {
			differ = true
		}
	}
	if !differ || len(findings) > 0 {
		return nil, findings
	}
	sortPrefixes(before)
	return &plan.Attr{Name: "addresses", Before: joinPrefixes(before), After: joinPrefixes(want)}, nil
}

// sortPrefixes orders IPv4 before IPv6, then by address and length.
func sortPrefixes(ps []netip.Prefix) {
	sort.Slice(ps, func(i, j int) bool {
		if c := ps[i].Addr().Compare(ps[j].Addr()); c != 0 {
			return c < 0
		}
		return ps[i].Bits() < ps[j].Bits()
	})
}

func joinPrefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}
