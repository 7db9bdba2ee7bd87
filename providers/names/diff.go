package names

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Plan implements plan.TypedProvider.
func (p *Provider) Plan(req *plan.Request, obs *Observed, _ *plan.Facts) plan.Proposal {
	var prop plan.Proposal
	if obs == nil {
		return prop
	}
	var rules []rule
	complete := true
	asked := map[*inventory.Device]string{}
	for i := range req.Spec.Devices {
		n := req.Spec.Devices[i].Names
		d := req.Devices[i]
		if n == nil {
			continue
		}
		base := schema.Path("devices", i) + ".names"
		if d == nil {
			complete = false
			continue
		}
		if prev, dup := asked[d]; dup {
			prop.Errors = append(prop.Errors, req.Finding(base, "device %s is also named by %s: give its names once", d.Name, prev))
			complete = false
			continue
		}
		asked[d] = base
		key := d.PCI
		if key == "" {
			key = d.NodeGUID
		}
		if n.RDMA != "" {
			prop.Managed = append(prop.Managed, plan.Managed{Address: plan.Addr(KindRDMA, key), Path: base + ".rdma"})
			if d.PCI != "" {
				rules = append(rules, rdmaRule(d.PCI, n.RDMA))
				if !obs.RdmaRename {
					prop.Errors = append(prop.Errors, req.Finding(base+".rdma", "rdma-core's udev helper rdma_rename (%s) is missing, so the name would not survive a reboot: install rdma-core", strings.Join(RdmaRename, " or ")))
				}
			}
			if d.Name != n.RDMA {
				if other := req.Inv.Find("name", n.RDMA); other != nil {
					prop.Errors = append(prop.Errors, req.Finding(base+".rdma", "RDMA device name %s is held by another device (%s): rename that one first, in an apply of its own", n.RDMA, describe(other)))
				} else {
					prop.Changes = append(prop.Changes, &plan.Change{Address: plan.Addr(KindRDMA, key), Action: plan.Update, Activation: plan.Runtime,
						Source: req.Pos(base + ".rdma"), Attributes: []plan.Attr{{Name: "name", Before: d.Name, After: n.RDMA}},
						Payload: &payload{rdma: true, old: d.Name, name: n.RDMA}})
				}
			}
		}
		if n.Netdev == "" {
			continue
		}
		prop.Managed = append(prop.Managed, plan.Managed{Address: plan.Addr(KindNetdev, key), Path: base + ".netdev"})
		nd, cands, ok := own(obs.Netdevs[i])
		if !ok {
			complete = false
			if len(cands) == 0 {
				prop.Errors = append(prop.Errors, req.Finding(base+".netdev", "device %s has no netdev to name", d.Name))
			} else {
				prop.Errors = append(prop.Errors, req.Finding(base+".netdev", "device %s has %d netdevs (%s): names.netdev needs a PCI function with one", d.Name, len(cands), strings.Join(cands, ", ")))
			}
			continue
		}
		if d.PCI == "" && nd.MAC == "" {
			// Without a PCI function the rule matches the netdev by its
			// MAC: none read (or not one the kernel could print) is no rule.
			complete = false
			prop.Errors = append(prop.Errors, req.Finding(base+".netdev", "netdev %s has no MAC address rdmaform can read (/sys/class/net/%s/address), which its udev rule matches", nd.Name, nd.Name))
			continue
		}
		rules = append(rules, netdevRule(d.PCI, nd, n.Netdev))
		if nd.Name == n.Netdev {
			continue
		}
		if obs.All[n.Netdev] {
			prop.Errors = append(prop.Errors, req.Finding(base+".netdev", "netdev name %s is held by another netdev: rename that one first, in an apply of its own", n.Netdev))
			continue
		}
		attrs := []plan.Attr{{Name: "name", Before: nd.Name, After: n.Netdev}}
		c := &plan.Change{Address: plan.Addr(KindNetdev, key), Action: plan.Update, Activation: plan.Runtime,
			Source: req.Pos(base + ".netdev"), Payload: &payload{netdev: true, old: nd.Name, name: n.Netdev, up: nd.Up}}
		if nd.Up {
			// The kernel renames only a netdev that is down (EBUSY). Both
			// names: the guard follows a management netdev to its new one.
			attrs = append(attrs, plan.Attr{Name: "link", Before: "up", After: "down while renamed, then up"})
			c.Disrupts = []string{nd.Name, n.Netdev}
		}
		c.Attributes = attrs
		prop.Changes = append(prop.Changes, c)
	}
	if len(asked) == 0 && complete {
		return prop
	}
	prop.Managed = append(prop.Managed, plan.Managed{Address: RulesAddress, Path: "$.devices"})
	if !complete {
		return prop // the rules of a spec the host cannot resolve would be partial
	}
	want := renderRules(rules)
	if err := checkRules(want); err != nil {
		prop.Errors = append(prop.Errors, req.Finding("$.devices", "%v", err))
		return prop
	}
	if !bytes.Equal(obs.Rules, want) {
		action := plan.Update
		if obs.Rules == nil {
			action = plan.Create
		}
		prop.Changes = append(prop.Changes, &plan.Change{Address: RulesAddress, Action: action, Activation: plan.Now,
			Source: req.Pos("$.devices"), Attributes: []plan.Attr{{Name: "rules", Before: digest(obs.Rules), After: digest(want)}},
			Payload: &payload{file: true, rules: want, before: obs.Rules}})
	}
	return prop
}

func describe(d *inventory.Device) string {
	if d.PCI != "" {
		return "at " + d.PCI
	}
	return "node GUID " + d.NodeGUID
}

// digest names the rules in the plan: their line count and first bytes
// of their hash would say less than the lines; the count is what a person
// checks.
func digest(b []byte) string {
	if b == nil {
		return ""
	}
	return fmt.Sprintf("%d rules", bytes.Count(b, []byte("\nACTION==")))
}

var _ plan.TypedRenamer[*Observed] = (*Provider)(nil)

// Renames implements plan.TypedRenamer: the renames this plan makes, so
// that the later stages plan under the new names in the same apply.
func (p *Provider) Renames(req *plan.Request, obs *Observed) plan.Renames {
	rn := plan.Renames{RDMA: map[string]string{}, Netdev: map[string]string{}}
	for _, c := range p.Plan(req, obs, plan.NewFacts()).Changes {
		pl, err := plan.PayloadOf[*payload](c)
		switch {
		case err != nil || pl.file:
		case pl.rdma:
			rn.RDMA[pl.old] = pl.name
		default:
			rn.Netdev[pl.old] = pl.name
		}
	}
	return rn
}
