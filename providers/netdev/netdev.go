// Package netdev manages plain network interfaces through netlink: the
// administrative state, the MTU and the set of static global addresses of
// netdevs NetworkManager does not own. Everything it sets lives in the
// kernel until the next boot (runtime settings).
package netdev

import (
	"context"
	"errors"
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

// IPoIBModule creates IPoIB netdevs (ib0) when it loads.
const IPoIBModule = "ib_ipoib"

// Provider is the netlink interfaces provider.
type Provider struct{}

var _ plan.Provider = (*Provider)(nil)

// Name implements plan.Provider.
func (*Provider) Name() string { return "netdev" }

// Kind is the kind of this provider's addresses.
const Kind = "interface"

// Address is the plan address of an interface.
func Address(name string) string { return plan.Addr(Kind, name) }

// Iface is one existing netdev as netlink shows it.
type Iface struct {
	Link host.Link
	// Addrs is every address; nil when the spec leaves addresses alone.
	Addrs []host.Addr
}

// Observed maps each spec interface that exists to what netlink says; a
// missing netdev has no entry.
type Observed struct {
	Ifaces map[string]*Iface
}

// Discover implements plan.Provider: one link lookup per spec interface,
// and its address list when the spec manages addresses.
//
// Equivalent to: ip link show NAME; ip addr show dev NAME
func (p *Provider) Discover(_ context.Context, h *host.Host, req *plan.Request) (any, error) {
	if len(req.Spec.Interfaces) == 0 {
		return nil, nil
	}
	obs := &Observed{Ifaces: map[string]*Iface{}}
	for _, it := range req.Spec.Interfaces {
		l, err := h.Net.LinkByName(it.Name)
		if errors.Is(err, host.ErrLinkNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("ip link show %s: %w", it.Name, err)
		}
		ifc := &Iface{Link: l}
		if it.Addresses != nil {
			as, err := h.Net.AddrList(it.Name)
			if err != nil {
				return nil, fmt.Errorf("ip addr show dev %s: %w", it.Name, err)
			}
			ifc.Addrs = as
		}
		obs.Ifaces[it.Name] = ifc
	}
	return obs, nil
}

// payload is what Apply needs; nil fields are left alone.
type payload struct {
	name string
	up   *bool
	mtu  *int
	// addrs is the full set of static global addresses, when managed.
	addrs []netip.Prefix
	// manageAddrs is set when the addresses change.
	manageAddrs bool
	// before is what the netdev had, for Revert; nil for a netdev this
	// plan makes appear (a module load).
	before *before
}

// Diff implements plan.Provider.
func (p *Provider) Diff(req *plan.Request, observed any, facts *plan.Facts) plan.Proposal {
	obs, _ := observed.(*Observed)
	prop := diff(req, obs, facts)
	for i, it := range req.Spec.Interfaces {
		prop.Managed = append(prop.Managed, plan.Managed{Address: Address(it.Name), Path: fmt.Sprintf("$.interfaces[%d]", i)})
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
	for i, it := range req.Spec.Interfaces {
		path := fmt.Sprintf("$.interfaces[%d]", i)
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
				prop.Changes = append(prop.Changes, missingChange(req, it, path, want, ipoibLoad))
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

// missingChange sets every managed attribute of a netdev a planned module
// load creates.
func missingChange(req *plan.Request, it schema.Interface, path string, want []netip.Prefix, cause string) *plan.Change {
	pl := &payload{name: it.Name}
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
		DependsOn: []string{cause},
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

// Apply implements plan.Provider. A link going down goes down first; one
// going up comes up last, after its MTU and addresses are set. Addresses:
// static global ones not wanted are removed, then wanted ones missing are
// added (re-read in between: removing a primary IPv4 address can take its
// secondaries with it).
//
// Equivalent to: ip link set NAME down; ip link set NAME mtu N;
// ip addr del P dev NAME ...; ip addr add P dev NAME ...; ip link set NAME up
func (p *Provider) Apply(_ context.Context, h *host.Host, c *plan.Change) error {
	pl, ok := c.Payload.(*payload)
	if !ok {
		return fmt.Errorf("%s: no interface payload", c.Address)
	}
	if _, err := h.Net.LinkByName(pl.name); err != nil {
		return fmt.Errorf("interface %s: %w", pl.name, err)
	}
	if pl.up != nil && !*pl.up {
		if err := h.Net.LinkSetUp(pl.name, false); err != nil {
			return fmt.Errorf("ip link set %s down: %w", pl.name, err)
		}
	}
	if pl.mtu != nil {
		if err := h.Net.LinkSetMTU(pl.name, *pl.mtu); err != nil {
			return fmt.Errorf("ip link set %s mtu %d: %w", pl.name, *pl.mtu, err)
		}
	}
	if pl.manageAddrs {
		if err := setAddrs(h, pl.name, pl.addrs); err != nil {
			return err
		}
	}
	if pl.up != nil && *pl.up {
		if err := h.Net.LinkSetUp(pl.name, true); err != nil {
			return fmt.Errorf("ip link set %s up: %w", pl.name, err)
		}
	}
	return nil
}

// setAddrs makes want the set of static global addresses of a netdev.
func setAddrs(h *host.Host, name string, want []netip.Prefix) error {
	wanted := map[netip.Prefix]bool{}
	for _, p := range want {
		wanted[p] = true
	}
	have, err := h.Net.AddrList(name)
	if err != nil {
		return fmt.Errorf("ip addr show dev %s: %w", name, err)
	}
	var del []netip.Prefix
	for _, a := range have {
		if a.Global && !a.Dynamic && !wanted[a.Prefix] {
			del = append(del, a.Prefix)
		}
	}
	sortPrefixes(del)
	for _, p := range del {
		if err := h.Net.AddrDel(name, p); err != nil {
			return fmt.Errorf("ip addr del %s dev %s: %w", p, name, err)
		}
	}
	have, err = h.Net.AddrList(name)
	if err != nil {
		return fmt.Errorf("ip addr show dev %s: %w", name, err)
	}
	present := map[netip.Prefix]bool{}
	for _, a := range have {
		present[a.Prefix] = true
	}
	for _, p := range want {
		if present[p] {
			continue
		}
		if err := h.Net.AddrAdd(name, p); err != nil {
			return fmt.Errorf("ip addr add %s dev %s: %w", p, name, err)
		}
	}
	return nil
}
