package ipoib

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/ipoib/nmcli"
	"github.com/rdmaform/rdmaform/schema"
)

// Spec states of a connection.
const (
	StateUp     = "up"
	StateDown   = "down"
	StateAbsent = "absent"
)

// WantState is the state a spec entry asks for; up when not given.
func WantState(c *schema.IPoIB) string {
	if c.State == "" {
		return StateUp
	}
	return c.State
}

// Desired returns the NetworkManager profile a spec entry asks for,
// normalized (see nmcli.Profile.Normalized): a P_Key child is
// PARENT.XXXX with the full-membership bit set; state down is saved with
// autoconnect no so a reboot does not bring it up.
func Desired(c *schema.IPoIB) nmcli.Profile {
	p := nmcli.Profile{
		Name:          c.Name,
		InterfaceName: c.Parent,
		PKey:          nmcli.PKeyDefault,
		Mode:          nmcli.TransportMode(c.Mode),
		NoAutoconnect: WantState(c) == StateDown,
	}
	if c.Autoconnect != nil {
		p.NoAutoconnect = !*c.Autoconnect
	}
	if c.PKey != nil {
		p.Parent = c.Parent
		p.PKey = c.Key()
	}
	if c.MTU != nil {
		p.MTU = *c.MTU
	}
	if c.IPv4 != nil {
		p.IPv4 = nmcli.IPConfig{Addresses: c.IPv4.Addresses, Gateway: c.IPv4.Gateway, DNS: c.IPv4.DNS}
	}
	if c.IPv6 != nil {
		p.IPv6 = nmcli.IPConfig{Addresses: c.IPv6.Addresses, Gateway: c.IPv6.Gateway, DNS: c.IPv6.DNS}
	}
	return p.Normalized()
}

// op is what Apply does with a connection.
type op int

const (
	opCreate op = iota
	opUpdate
	opDelete
)

// payload is what Apply needs: the profile or its UUID and the steps.
type payload struct {
	Op       op
	Name     string
	UUID     string          // update, delete
	Profile  nmcli.Profile   // create
	Settings []nmcli.Setting // update: only what differs
	Up       bool            // create/update: activate (or re-activate) afterwards
	Down     bool            // update: deactivate afterwards
	// Was is the profile before an update or delete, for Revert; a
	// create records the UUID NetworkManager gave it in UUID.
	Was *nmcli.Profile
}

// attrName is the plan's name of an nmcli property: the spec's word
// where there is one, the property itself for ipv4.* and ipv6.*.
func attrName(prop string) string {
	switch prop {
	case "connection.interface-name":
		return "interface"
	case "connection.autoconnect":
		return "autoconnect"
	case "infiniband.transport-mode":
		return "mode"
	case "infiniband.mtu":
		return "mtu"
	case "infiniband.parent":
		return "parent"
	case "infiniband.p-key":
		return "pkey"
	}
	return prop
}

// attrValue is the plan's form of an nmcli property's value: nmcli's
// yes and no are the booleans true and false (one JSON type for every
// boolean attribute), anything else as nmcli has it.
func attrValue(prop, v string) string {
	if prop == "connection.autoconnect" {
		switch v {
		case "yes":
			return "true"
		case "no":
			return "false"
		}
	}
	return v
}

// managed reports whether the spec entry manages an nmcli property of an
// existing profile: mode, mtu, ipv4.* and ipv6.* only when the spec gives
// them; the interface, P_Key and autoconnect (from state) always.
func managed(c *schema.IPoIB, prop string) bool {
	switch {
	case prop == "infiniband.transport-mode":
		return c.Mode != ""
	case prop == "infiniband.mtu":
		return c.MTU != nil
	case strings.HasPrefix(prop, "ipv4."):
		return c.IPv4 != nil
	case strings.HasPrefix(prop, "ipv6."):
		return c.IPv6 != nil
	}
	return true
}

// diff is the pure comparison of the spec with the observation.
func diff(req *plan.Request, obs *Observed, facts *plan.Facts) plan.Proposal {
	var prop plan.Proposal
	byName := map[string][]nmcli.Profile{}
	for _, p := range obs.Profiles {
		byName[p.Name] = append(byName[p.Name], p)
	}
	specNames := map[string]bool{}
	for _, c := range req.Spec.IPoIB {
		specNames[c.Name] = true
	}
	for i := range req.Spec.IPoIB {
		c := &req.Spec.IPoIB[i]
		path := schema.Path("ipoib", i)
		addr := Address(c.Name)
		have := byName[c.Name]
		if len(have) > 1 {
			var uuids []string
			for _, p := range have {
				uuids = append(uuids, p.UUID)
			}
			prop.Errors = append(prop.Errors, req.Finding(path+".name",
				"%d NetworkManager connections are named %q (uuid %s); rdmaform manages one connection per name: delete the extra ones with nmcli connection delete uuid UUID",
				len(have), c.Name, strings.Join(uuids, ", ")))
			continue
		}
		var cur *nmcli.Profile
		if len(have) == 1 {
			cur = &have[0]
		}
		state := WantState(c)
		if state == StateAbsent {
			if cur != nil {
				prop.Changes = append(prop.Changes, &plan.Change{
					Address: addr, Action: plan.Delete, Activation: plan.Now, Source: req.Pos(path),
					Attributes: []plan.Attr{{Name: "uuid", Before: cur.UUID}},
					Payload:    &payload{Op: opDelete, Name: c.Name, UUID: cur.UUID, Was: cur},
					Disrupts:   activeIface(*cur),
				})
			}
			continue
		}
		errs, def := checkHost(req, obs, facts, c, path)
		if def != nil {
			prop.Deferred = append(prop.Deferred, *def)
			continue
		}
		want := Desired(c)
		if other := activeOn(obs.Profiles, want.InterfaceName, specNames); other != nil && state == StateUp {
			errs = append(errs, req.Finding(path,
				"connection %q (uuid %s), which the spec does not manage, is active on %s; activating %q would take the interface from it: delete or deactivate it, or list it in the spec with state: absent",
				other.Name, other.UUID, want.InterfaceName, c.Name))
		}
		if len(errs) > 0 {
			prop.Errors = append(prop.Errors, errs...)
			continue
		}
		if cur == nil {
			prop.Changes = append(prop.Changes, createChange(req, c, path, want))
			continue
		}
		if ch := updateChange(req, c, path, want, *cur); ch != nil {
			prop.Changes = append(prop.Changes, ch)
		}
	}
	return prop
}

// createChange adds the profile (and activates it for state up).
func createChange(req *plan.Request, c *schema.IPoIB, path string, want nmcli.Profile) *plan.Change {
	var attrs []plan.Attr
	for _, s := range nmcli.Settings(want) {
		if s.Value == "" || (s.Name == "connection.autoconnect" && s.Value == "yes") || (s.Name == "infiniband.p-key" && s.Value == "default") {
			continue
		}
		attrs = append(attrs, plan.Attr{Name: attrName(s.Name), After: attrValue(s.Name, s.Value)})
	}
	state := WantState(c)
	attrs = append(attrs, plan.Attr{Name: "state", After: state})
	return &plan.Change{
		Address: Address(c.Name), Action: plan.Create, Activation: plan.Now, Source: req.Pos(path), Attributes: attrs,
		Payload: &payload{Op: opCreate, Name: c.Name, Profile: want, Up: state == StateUp},
	}
}

// updateChange modifies what differs and brings the connection to its
// state; nil when nothing differs.
func updateChange(req *plan.Request, c *schema.IPoIB, path string, want, have nmcli.Profile) *plan.Change {
	before := map[string]string{}
	for _, s := range nmcli.Settings(have) {
		before[s.Name] = s.Value
	}
	var settings []nmcli.Setting
	var attrs []plan.Attr
	reconfigure := false
	for _, s := range nmcli.Changed(want, have) {
		if !managed(c, s.Name) {
			continue
		}
		settings = append(settings, s)
		attrs = append(attrs, plan.Attr{Name: attrName(s.Name), Before: attrValue(s.Name, before[s.Name]), After: attrValue(s.Name, s.Value)})
		if s.Name != "connection.autoconnect" {
			reconfigure = true
		}
	}
	was := have
	pl := &payload{Op: opUpdate, Name: c.Name, UUID: have.UUID, Settings: settings, Was: &was}
	switch state := WantState(c); {
	case state == StateUp && !have.Active:
		pl.Up = true
		attrs = append(attrs, plan.Attr{Name: "state", Before: StateDown, After: StateUp})
	case state == StateUp && reconfigure:
		pl.Up = true
		attrs = append(attrs, plan.Attr{Name: "state", Before: StateUp, After: "re-activate"})
	case state == StateDown && have.Active:
		pl.Down = true
		attrs = append(attrs, plan.Attr{Name: "state", Before: StateUp, After: StateDown})
	}
	if len(attrs) == 0 {
		return nil
	}
	var disrupts []string
	if pl.Down || (pl.Up && have.Active) {
		// Taken down, or re-activated with new settings (addresses, MTU,
		// mode): its traffic stops for a moment and addresses may change.
		disrupts = activeIface(have)
	}
	return &plan.Change{
		Address: Address(c.Name), Action: plan.Update, Activation: plan.Now, Source: req.Pos(path), Attributes: attrs, Payload: pl, Disrupts: disrupts,
	}
}

// activeOn returns a profile the spec does not name that is active on
// the interface, or nil.
func activeOn(ps []nmcli.Profile, ifname string, specNames map[string]bool) *nmcli.Profile {
	for i := range ps {
		if ps[i].Active && ps[i].Device == ifname && !specNames[ps[i].Name] {
			return &ps[i]
		}
	}
	return nil
}

// IB MTUs an InfiniBand port can run (the IB MTU enumeration).
var ibMTUs = []int{256, 512, 1024, 2048, 4096}

// DatagramLimit is the largest datagram-mode IPoIB MTU a port allows, as
// far as the host shows it: the port's active IB MTU is not in sysfs, but
// the kernel sets a datagram IPoIB interface's MTU to the IB MTU of its
// broadcast group minus the 4-byte IPoIB header, so the smallest IB MTU
// that fits the interface's MTU + 4 is the fabric's. Returns 0 (unknown)
// when the interface runs connected mode or an active profile set its MTU
// (then the MTU is an administrator's choice, not the fabric's).
func DatagramLimit(l inventory.Netdev, ps []nmcli.Profile) (limit, ibMTU int) {
	if l.Type != inventory.ARPHRDInfiniband || l.Mode != string(nmcli.Datagram) || l.MTU <= 0 {
		return 0, 0
	}
	for _, p := range ps {
		if p.Active && p.Device == l.Name && p.MTU > 0 {
			return 0, 0
		}
	}
	for _, m := range ibMTUs {
		if l.MTU+4 <= m {
			return m - 4, m
		}
	}
	return 0, 0
}

// stagedIB returns a staged firmware change that makes a port InfiniBand
// at the next boot, the first by device name and port.
func stagedIB(inv *inventory.Inventory, facts *plan.Facts) (plan.LinkChange, bool) {
	if inv == nil || facts == nil {
		return plan.LinkChange{}, false
	}
	for _, d := range inv.Devices {
		if d.PCI == "" {
			continue
		}
		for _, p := range d.Ports {
			if s, ok := facts.LinkAtBoot(d.PCI, p.Num); ok && s.To == linklayer.InfiniBand && p.LinkLayer != linklayer.InfiniBand {
				return s, true
			}
		}
	}
	return plan.LinkChange{}, false
}

// ibNetdevs lists the netdevs on InfiniBand ports, sorted, for messages.
func ibNetdevs(inv *inventory.Inventory) string {
	var out []string
	if inv != nil {
		for _, d := range inv.Devices {
			for _, p := range d.Ports {
				if p.LinkLayer == linklayer.InfiniBand {
					out = append(out, p.Netdevs...)
				}
			}
		}
	}
	if len(out) == 0 {
		return "none"
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// checkHost returns the host-dependent findings of one entry, or the
// reason it waits for a reboot.
func checkHost(req *plan.Request, obs *Observed, facts *plan.Facts, c *schema.IPoIB, path string) ([]schema.Finding, *plan.Deferred) {
	deferred := func(s plan.LinkChange) *plan.Deferred {
		return &plan.Deferred{Address: Address(c.Name), Reason: s.Reason(), Source: req.Pos(path)}
	}
	link, exists := obs.Links[c.Parent]
	if !exists {
		if s, ok := stagedIB(req.Inv, facts); ok {
			return nil, deferred(s)
		}
		return []schema.Finding{req.Finding(path+".parent", "netdev %s does not exist (IPoIB netdevs on this host: %s)", c.Parent, ibNetdevs(req.Inv))}, nil
	}
	dev, port := req.Inv.PortOfNetdev(c.Parent)
	if port != nil {
		staged, isStaged := plan.LinkChange{}, false
		if dev.PCI != "" && facts != nil {
			staged, isStaged = facts.LinkAtBoot(dev.PCI, port.Num)
		}
		if port.LinkLayer != linklayer.InfiniBand {
			if isStaged && staged.To == linklayer.InfiniBand {
				return nil, deferred(staged)
			}
			return []schema.Finding{req.Finding(path+".parent",
				"%s is on port %d of %s, whose link layer is %s; IPoIB needs an InfiniBand port (a VPI adapter switches with firmware LINK_TYPE_P%d: IB)",
				c.Parent, port.Num, dev.Name, port.LinkLayer, dev.CardPort(port.Num))}, nil
		}
		if isStaged && staged.To != linklayer.InfiniBand {
			return []schema.Finding{req.Finding(path+".parent",
				"port %d of %s becomes %s at the next boot (%s); %s and this connection would lose their port",
				port.Num, dev.Name, staged.To, staged.Setting, c.Parent)}, nil
		}
	}
	if link.Type != inventory.ARPHRDInfiniband {
		return []schema.Finding{req.Finding(path+".parent", "%s is not an IPoIB interface (sysfs type %d, not 32)", c.Parent, link.Type)}, nil
	}
	var errs []schema.Finding
	mode := c.Mode
	if mode == "" {
		mode = string(nmcli.Datagram)
	}
	if mode == string(nmcli.Connected) && link.Enhanced() {
		errs = append(errs, req.Finding(path+".mode",
			"%s runs enhanced IPoIB (hardware address flags 0x%02x, no connected-mode bit): ConnectX-4 and later run IPoIB in datagram mode only; use mode: datagram",
			c.Parent, link.Flags))
	}
	if c.MTU != nil {
		switch {
		case mode == string(nmcli.Connected) && *c.MTU > nmcli.MaxMTU:
			errs = append(errs, req.Finding(path+".mtu", "connected-mode MTU %d is above %d, the IPoIB maximum", *c.MTU, nmcli.MaxMTU))
		case mode == string(nmcli.Datagram):
			if lim, ib := DatagramLimit(link, obs.Profiles); lim > 0 && *c.MTU > lim {
				where := ""
				if port != nil {
					where = fmt.Sprintf(" of port %d of %s", port.Num, dev.Name)
				}
				// Offer connected mode only where the plan takes it: enhanced
				// IPoIB (ConnectX-4 and later) has none (the mode check above).
				way := ", or mode: connected"
				if link.Enhanced() {
					way = fmt.Sprintf(" (%s runs enhanced IPoIB: ConnectX-4 and later have no connected mode)", c.Parent)
				}
				errs = append(errs, req.Finding(path+".mtu",
					"datagram MTU %d is above the IB MTU%s - 4 = %d (%s runs datagram mode with MTU %d, so the fabric's IB MTU is %d); use mtu: %d or less%s",
					*c.MTU, where, lim, c.Parent, link.MTU, ib, lim, way))
			}
		}
	}
	if c.PKey != nil && port != nil {
		want := c.Partition()
		table, ok := obs.PKeys[portKey(dev.Name, port.Num)]
		switch {
		case ok && !inventory.HasPKey(table, want):
			errs = append(errs, req.Finding(path+".pkey",
				"P_Key 0x%04x is not in the P_Key table of port %d of %s (%s): the subnet manager has not made this port a member of the partition",
				want, port.Num, dev.Name, inventory.FormatPKeys(table)))
		case ok && c.Membership != "limited" && !inventory.FullMemberOf(table, want):
			// The port is a limited member whatever the interface says:
			// it would not reach the other limited members.
			errs = append(errs, req.Finding(path+".pkey",
				"the subnet manager made port %d of %s only a limited member of partition 0x%04x (its P_Key table: %s): it talks only to full members. Add membership: limited (pkey: 0x%04x) to say so, or make the port a full member in the subnet manager's partitions",
				port.Num, dev.Name, want, inventory.FormatPKeys(table), want&^0x8000))
		}
	}
	return errs, nil
}

// Plan implements plan.TypedProvider.
func (p *Provider) Plan(req *plan.Request, obs *Observed, facts *plan.Facts) plan.Proposal {
	if obs == nil {
		obs = &Observed{}
	}
	prop := diff(req, obs, facts)
	for i, c := range req.Spec.IPoIB {
		prop.Managed = append(prop.Managed, plan.Managed{Address: Address(c.Name), Path: schema.Path("ipoib", i)})
	}
	return prop
}
