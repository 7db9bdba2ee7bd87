package netdev

import (
	"net/netip"
	"strconv"

	"github.com/rdmaform/rdmaform/plan"
)

// before is what a netdev had when the plan was made: the values Revert
// puts back.
type before struct {
	up  bool
	mtu int
	// addrs are the static global addresses (not dynamic, not
	// link-local), sorted; nil when the spec leaves addresses alone.
	addrs []netip.Prefix
}

// beforeOf records what an existing netdev has.
func beforeOf(ifc *Iface) *before {
	b := &before{up: ifc.Link.AdminUp, mtu: ifc.Link.MTU}
	for _, a := range ifc.Addrs {
		if a.Global && !a.Dynamic {
			b.addrs = append(b.addrs, a.Prefix)
		}
	}
	sortPrefixes(b.addrs)
	return b
}

// disrupts names the netdev when the change cuts its traffic or takes an
// address away: taking it down, or removing (or replacing) a static
// address. Adding an address, bringing it up and an MTU change leave
// existing connections alone.
func disrupts(pl *payload) []string {
	if pl.before == nil {
		return nil
	}
	switch {
	case pl.up != nil && !*pl.up && pl.before.up:
		return []string{pl.name} // taken down
	case pl.mtu != nil && *pl.mtu != pl.before.mtu:
		// A new MTU on the path an operator comes in by can stall the
		// session (a larger one than the network carries, or a smaller
		// one than its peers send).
		return []string{pl.name}
	case pl.manageAddrs:
		// Re-addressed: an address it had goes away. Adding one leaves
		// the operator's path alone.
		keep := map[netip.Prefix]bool{}
		for _, p := range pl.addrs {
			keep[p] = true
		}
		for _, p := range pl.before.addrs {
			if !keep[p] {
				return []string{pl.name}
			}
		}
	}
	return nil
}

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: it puts back the state, MTU and static
// addresses the change replaced. A netdev the plan made appear (through a
// module load) has nothing to put back: it goes with the module. One its
// card's re-registration made anew gets its old values back after the
// undo of what re-registered it (the undo depends on the same changes).
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	if pl.before == nil {
		return nil, nil
	}
	b := pl.before
	back := &payload{name: pl.name}
	// The reverse change's own before-values are what the change set, so
	// reverting a revert gives the change again.
	after := &before{up: b.up, mtu: b.mtu, addrs: pl.addrs}
	var attrs []plan.Attr
	if pl.up != nil {
		up := b.up
		back.up = &up
		after.up = *pl.up
		attrs = append(attrs, plan.Attr{Name: "state", Before: stateWord(*pl.up), After: stateWord(b.up)})
	}
	if pl.mtu != nil {
		mtu := b.mtu
		back.mtu = &mtu
		after.mtu = *pl.mtu
		attrs = append(attrs, plan.Attr{Name: "mtu", Before: strconv.Itoa(*pl.mtu), After: strconv.Itoa(b.mtu)})
	}
	if pl.manageAddrs {
		back.addrs, back.manageAddrs = append([]netip.Prefix(nil), b.addrs...), true
		attrs = append(attrs, plan.Attr{Name: "addresses", Before: joinPrefixes(pl.addrs), After: joinPrefixes(b.addrs)})
	}
	back.before = after
	rc := &plan.Change{Address: c.Address, Action: plan.Update, Activation: c.Activation, Attributes: attrs, Payload: back, Disrupts: disrupts(back)}
	if pl.appears {
		// A netdev its card's re-registration made anew: undoing the
		// port type registers the card again, so the old values go back
		// after that undo, once the netdev is there again.
		back.appears = true
		rc.DependsOn = c.DependsOn
	}
	return rc, nil
}
