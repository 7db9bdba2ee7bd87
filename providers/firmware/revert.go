package firmware

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/firmware/mlxfmt"
)

// linkNetdevs names the netdevs a LINK_TYPE_Pn change takes away at the
// next boot: the port it sets comes up with the other link layer, and its
// netdevs (ib0, or the Ethernet netdev) are gone. Other parameters, and a
// LINK_TYPE value that keeps the link layer, disrupt nothing.
func linkNetdevs(req *plan.Request, dev *inventory.Device, name, value string, have mlxfmt.Param) []string {
	m := linkTypeRE.FindStringSubmatch(name)
	if m == nil || dev == nil {
		return nil
	}
	ll, now := linklayer.OfLinkType(value), linklayer.OfLinkType(have.Current.String())
	if have.Current.Kind == mlxfmt.KindAbsent {
		now = linklayer.OfLinkType(have.NextBoot.String())
	}
	if ll == "" || ll == now {
		return nil // the port boots with the link layer it runs now
	}
	n, _ := strconv.Atoi(m[1])
	fn, port := AffectedPort(dev.PCI, n, dev)
	for _, d := range req.Inv.Devices {
		if d.PCI == fn && d.Port(port) != nil {
			return append([]string(nil), d.Port(port).Netdevs...)
		}
	}
	return nil
}

// sortedSet sorts names and drops duplicates; nil stays nil.
func sortedSet(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	sort.Strings(in)
	out := in[:1]
	for _, s := range in[1:] {
		if s != out[len(out)-1] {
			out = append(out, s)
		}
	}
	return out
}

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: it stages the Next Boot values the
// change replaced, the before-values of its attributes, in one set. It
// only matters before a reboot: once the host booted with the new values
// they are current, and putting the old ones back is another change and
// another reboot. Confirm mode reaches it only with --allow-firmware.
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	if pl.burn != nil {
		return nil, fmt.Errorf("%s: a burned firmware image cannot be taken back (burn the previous image to go back)", c.Address)
	}
	back := &payload{tool: pl.tool, dev: pl.dev, pci: pl.pci, paths: pl.paths, source: pl.source, was: map[string]string{}, values: map[string]string{}, current: pl.current}
	for _, set := range pl.sets {
		name, now, _ := strings.Cut(set, "=")
		was, ok := pl.was[name]
		if !ok {
			return nil, fmt.Errorf("%s: no value recorded that %s replaced", c.Address, name)
		}
		arg, err := mlxfmt.SetArg(was)
		if err != nil {
			return nil, fmt.Errorf("%s: cannot stage %s back to %q: %w", c.Address, name, was, err)
		}
		back.sets = append(back.sets, name+"="+arg)
		back.was[name] = now
		back.values[name] = was // for the ledger: what the set stages
	}
	if len(back.sets) == 0 {
		return nil, nil
	}
	return &plan.Change{Address: c.Address, Action: plan.Update, Activation: c.Activation, Attributes: plan.Reversed(c.Attributes), Payload: back, Disrupts: c.Disrupts}, nil
}
