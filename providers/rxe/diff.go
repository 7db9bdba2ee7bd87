package rxe

import (
	"fmt"
	"sort"

	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Plan implements plan.TypedProvider.
func (p *Provider) Plan(req *plan.Request, obs *Observed, facts *plan.Facts) plan.Proposal {
	prop := diff(req, obs, facts)
	for i, r := range req.Spec.Rxe {
		prop.Managed = append(prop.Managed, plan.Managed{Address: Address(r.Name), Path: schema.Path("rxe", i)})
	}
	return prop
}

func diff(req *plan.Request, obs *Observed, facts *plan.Facts) plan.Proposal {
	var prop plan.Proposal
	if obs == nil {
		return prop
	}
	// What the spec wants of every link it names: its netdev, or "" for
	// absent.
	wantNetdev := map[string]string{}
	for _, r := range req.Spec.Rxe {
		if r.State == "absent" {
			wantNetdev[r.Name] = ""
		} else {
			wantNetdev[r.Name] = r.Netdev
		}
	}
	holder := map[string]string{} // netdev -> rxe link bound to it now
	for _, l := range obs.Links {
		if l.Software() {
			holder[l.Netdev] = l.Name
		}
	}
	var moduleDep []plan.Address
	if cause, ok := facts.ModuleLoad(Module); ok {
		moduleDep = []plan.Address{cause}
	}

	for i, r := range req.Spec.Rxe {
		p := schema.Path("rxe", i)
		addr := Address(r.Name)
		have, exists := obs.Links[r.Name]
		if exists && !have.Software() {
			prop.Errors = append(prop.Errors, req.Finding(p+".name", "%s is a hardware RDMA device, not a Soft-RoCE link; choose another name", r.Name))
			continue
		}
		if r.State == "absent" {
			if exists {
				prop.Changes = append(prop.Changes, &plan.Change{
					Address: addr, Action: plan.Delete, Activation: plan.Runtime, Source: req.Pos(p), Attributes: []plan.Attr{{Name: "netdev", Before: have.Netdev}},
					Payload: &payload{name: r.Name, was: have.Netdev, wasTaken: takers(wantNetdev, have.Netdev, r.Name)},
				})
			}
			continue
		}
		if exists && have.Netdev == r.Netdev {
			continue
		}
		nd, ok := obs.Netdevs[r.Netdev]
		if !ok {
			if reason, staged := facts.BootReason(); staged {
				prop.Deferred = append(prop.Deferred, plan.Deferred{Address: addr, Reason: fmt.Sprintf("netdev %s does not exist yet; %s", r.Netdev, reason), Source: req.Pos(p + ".netdev")})
				continue
			}
			prop.Errors = append(prop.Errors, req.Finding(p+".netdev", "no network interface %s on this host", r.Netdev))
			continue
		}
		if nd.Type == "ipoib" {
			prop.Errors = append(prop.Errors, req.Finding(p+".netdev", "%s is an IPoIB interface; Soft-RoCE needs an Ethernet netdev", r.Netdev))
			continue
		}
		if obs.NoRDMA != nil && moduleDep == nil {
			prop.Errors = append(prop.Errors, req.Finding(p, "cannot create Soft-RoCE link %s: %v", r.Name, obs.NoRDMA))
			continue
		}
		pl := &payload{name: r.Name, netdev: r.Netdev, deleteFirst: exists, was: have.Netdev, wasTaken: takers(wantNetdev, have.Netdev, r.Name)}
		if other, busy := holder[r.Netdev]; busy && other != r.Name {
			w, managed := wantNetdev[other]
			if !managed || w == r.Netdev {
				prop.Errors = append(prop.Errors, req.Finding(p+".netdev", "netdev %s already carries Soft-RoCE link %s (one per netdev); list %s with state: absent to remove it", r.Netdev, other, other))
				continue
			}
			pl.evict = []string{other}
		}
		c := &plan.Change{
			Address: addr, Action: plan.Create, Activation: plan.Runtime, Source: req.Pos(p), DependsOn: moduleDep, Payload: pl,
			Attributes: []plan.Attr{{Name: "netdev", Before: have.Netdev, After: r.Netdev}},
		}
		if exists {
			// Bound elsewhere: the kernel cannot move a link, so it is
			// deleted and created again (its rdma_cm settings start over).
			c.Action = plan.Update
		}
		facts.CreateDevice(r.Name, addr)
		prop.Changes = append(prop.Changes, c)
	}
	sort.SliceStable(prop.Changes, func(i, j int) bool { return prop.Changes[i].Address.Less(prop.Changes[j].Address) })
	return prop
}
