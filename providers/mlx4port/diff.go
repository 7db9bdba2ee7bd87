package mlx4port

import (
	"sort"

	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
)

// Plan implements plan.TypedProvider. It publishes each port type it writes
// that changes the type the port runs as a link-layer change that happens
// now, and the card's RDMA device as made anew by the first such change:
// mlx4_core then unregisters every interface of the card and registers
// them again (mlx4_change_port_types), so the netdevs of both ports come
// back with the driver's defaults and the RDMA device with the kernel's
// rdma_cm defaults. A setting that keeps the running type (auto on the
// type it detected, ib on an InfiniBand port) changes neither.
func (p *Provider) Plan(req *plan.Request, obs *Observed, facts *plan.Facts) plan.Proposal {
	if obs == nil {
		obs = &Observed{}
	}
	prop := diff(req, obs)
	for _, t := range targets(req) {
		if t.pci != "" {
			prop.Managed = append(prop.Managed, plan.Managed{Address: Address(t.pci, t.port), Path: t.specPath})
		}
	}
	anew := map[string]bool{}
	for _, c := range prop.Changes {
		pl, err := plan.PayloadOf[*payload](c)
		if err != nil || facts == nil || effective(pl.want, State{Effective: pl.wasEff}) == pl.wasEff {
			continue
		}
		facts.ChangeLink(plan.LinkChange{Device: pl.pci, Port: pl.port, To: linklayer.OfMlx4Type(pl.want), When: plan.Runtime,
			Cause: c.Address, Setting: "type=" + pl.want})
		if !anew[pl.dev] {
			anew[pl.dev] = true
			facts.CreateDevice(pl.dev, c.Address)
		}
	}
	return prop
}

// effective is the type a port has after a setting: auto keeps what the
// port detected.
func effective(setting string, have State) string {
	if setting == "auto" {
		return have.Effective
	}
	return setting
}

func diff(req *plan.Request, obs *Observed) plan.Proposal {
	var prop plan.Proposal
	ts := targets(req)
	want := map[string]string{}
	for _, t := range ts {
		want[key(t.pci, t.port)] = t.want
	}
	var changes []*plan.Change
	for _, t := range ts {
		if t.pci == "" {
			prop.Errors = append(prop.Errors, req.Finding(t.specPath, "%s is not a PCI adapter; port types are for mlx4 (ConnectX-3) ports", t.dev))
			continue
		}
		have, ok := obs.Ports[key(t.pci, t.port)]
		if !ok {
			prop.Errors = append(prop.Errors, req.Finding(t.specPath, "%s has no %s: type applies to mlx4 (ConnectX-3) ports only; on ConnectX-4 and later set firmware LINK_TYPE_P%d", t.dev, File(t.pci, t.port), t.card))
			continue
		}
		// mlx4_core refuses port 1 Ethernet with port 2 InfiniBand.
		p1 := effectiveAfter(t.pci, 1, want, obs)
		p2 := effectiveAfter(t.pci, 2, want, obs)
		if p1 == "eth" && p2 == "ib" {
			prop.Errors = append(prop.Errors, req.Finding(t.specPath, "%s would have port 1 eth and port 2 ib, which mlx4_core refuses; make port 2 eth too", t.dev))
			continue
		}
		if have.Setting == t.want {
			continue
		}
		other, otherWas, otherWasEff := want[key(t.pci, 3-t.port)], "", ""
		if o, ok := obs.Ports[key(t.pci, 3-t.port)]; ok {
			otherWas, otherWasEff = o.Setting, o.Effective
			if o.Setting == other {
				other = ""
			}
		}
		if other == "" {
			otherWas, otherWasEff = "", ""
		}
		changes = append(changes, &plan.Change{Address: Address(t.pci, t.port), Action: plan.Update, Activation: plan.Runtime,
			Source:     req.Pos(t.specPath),
			Attributes: []plan.Attr{{Name: "type", Before: describe(have), After: t.want}},
			Disrupts:   portNetdevs(req, t.dev, t.port, have, t.want),
			Payload: &payload{pci: t.pci, dev: t.dev, port: t.port, want: t.want, other: other,
				was: have.Setting, otherWas: otherWas, wasEff: have.Effective, otherWasEff: otherWasEff}})
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Address.Less(changes[j].Address) })
	prop.Changes = changes
	return prop
}

func effectiveAfter(pci string, port int, want map[string]string, obs *Observed) string {
	have, ok := obs.Ports[key(pci, port)]
	if !ok {
		return ""
	}
	if w, ok := want[key(pci, port)]; ok {
		return effective(w, have)
	}
	return have.Effective
}

func describe(s State) string {
	if s.Setting == "auto" {
		if s.Effective == "" {
			return "auto (not detected)"
		}
		return "auto (" + s.Effective + ")"
	}
	return s.Setting
}
