package services

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Plan implements plan.TypedProvider.
func (p *Provider) Plan(req *plan.Request, obs *Observed, facts *plan.Facts) plan.Proposal {
	prop := diff(req, obs, facts)
	for i, sv := range req.Spec.Services {
		if !statesOf(sv) {
			continue
		}
		prop.Managed = append(prop.Managed, plan.Managed{Address: Address(schema.UnitName(sv.Name)), Path: schema.Path("services", i)})
	}
	return prop
}

func diff(req *plan.Request, obs *Observed, facts *plan.Facts) plan.Proposal {
	var prop plan.Proposal
	if len(unitsOf(req)) == 0 || obs == nil {
		return prop
	}
	if obs.NoSystemd {
		prop.Errors = append(prop.Errors, req.Unreadable("$.services", "%v", ErrNoSystemd))
		return prop
	}
	for i, s := range req.Spec.Services {
		if !statesOf(s) {
			continue
		}
		path := schema.Path("services", i)
		u := schema.UnitName(s.Name)
		have, ok := obs.Units[u]
		if !ok {
			continue // an invalid name; validation reported it
		}
		switch have.LoadState {
		case "loaded":
		case "not-found", "":
			prop.Errors = append(prop.Errors, req.Finding(path+".name", "unit %s does not exist on this host (LoadState=not-found): install the package that provides it", u))
			continue
		case "masked":
			prop.Errors = append(prop.Errors, req.Finding(path+".name", "unit %s is masked; rdmaform does not unmask units (systemctl unmask %s)", u, u))
			continue
		default:
			prop.Errors = append(prop.Errors, req.Finding(path+".name", "unit %s failed to load (LoadState=%s; see systemctl status %s)", u, have.LoadState, u))
			continue
		}
		if s.Active != nil && *s.Active && isOpenSM(u) {
			if reason, wait := subnetManagerCheck(req.Inv, facts); reason != "" {
				if wait {
					prop.Deferred = append(prop.Deferred, plan.Deferred{Address: Address(u), Reason: reason, Source: req.Pos(path)})
				} else {
					prop.Errors = append(prop.Errors, req.Finding(path+".active", "%s", reason))
				}
				continue
			}
		}
		pl := &payload{unit: u}
		var attrs []plan.Attr
		if s.Enabled != nil {
			if !have.Toggleable() {
				prop.Errors = append(prop.Errors, req.Finding(path+".enabled", "unit %s cannot be enabled or disabled (UnitFileState=%s): it has no [Install] section or is not a unit file of its own", u, have.UnitFileState))
				continue
			}
			if *s.Enabled != have.Enabled() {
				pl.enable = s.Enabled
				attrs = append(attrs, plan.Attr{Name: "enabled", Before: strconv.FormatBool(have.Enabled()), After: strconv.FormatBool(*s.Enabled)})
			}
		}
		if s.Active != nil && *s.Active != have.Active() {
			pl.start = s.Active
			attrs = append(attrs, plan.Attr{Name: "active", Before: strconv.FormatBool(have.Active()), After: strconv.FormatBool(*s.Active)})
		}
		if len(attrs) == 0 {
			continue
		}
		prop.Changes = append(prop.Changes, &plan.Change{Address: Address(u), Action: plan.Update, Activation: plan.Now,
			Source: req.Pos(path), Attributes: attrs, Payload: pl})
	}
	return prop
}

// isOpenSM reports whether a unit runs the OpenSM subnet manager
// (opensm.service, or an instance such as opensm@mlx5_0.service).
func isOpenSM(unit string) bool {
	base := strings.TrimSuffix(unit, ".service")
	return base == "opensm" || strings.HasPrefix(base, "opensm@")
}

// subnetManagerCheck says why a subnet manager cannot run here: no port
// of the host is InfiniBand now. When firmware staged for the next boot
// turns a port to InfiniBand, the start waits for that reboot (deferred).
func subnetManagerCheck(inv *inventory.Inventory, facts *plan.Facts) (reason string, deferred bool) {
	var staged []string
	for _, d := range inv.Devices {
		for _, p := range d.Ports {
			if p.LinkLayer == linklayer.InfiniBand {
				return "", false
			}
			if s, ok := facts.LinkAtBoot(d.PCI, p.Num); ok && s.To == linklayer.InfiniBand {
				staged = append(staged, s.Reason())
			}
		}
	}
	if len(staged) > 0 {
		return staged[0], true
	}
	return "opensm is a subnet manager for InfiniBand fabrics, and this host has no InfiniBand port (" + linkLayers(inv) + ")", false
}

func linkLayers(inv *inventory.Inventory) string {
	var s []string
	for _, d := range inv.Devices {
		for _, p := range d.Ports {
			s = append(s, fmt.Sprintf("%s/%d: %s", d.Name, p.Num, p.LinkLayer))
		}
	}
	if len(s) == 0 {
		return "no RDMA devices"
	}
	return strings.Join(s, ", ")
}
