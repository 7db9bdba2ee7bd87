package rdmacm

import (
	"sort"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
)

// Plan implements plan.TypedProvider.
func (p *Provider) Plan(req *plan.Request, obs *Observed, facts *plan.Facts) plan.Proposal {
	if obs == nil {
		obs = &Observed{} // nothing read: every value is planned
	}
	prop := diff(req, obs, facts)
	for _, t := range targets(req) {
		prop.Managed = append(prop.Managed, plan.Managed{Address: Address(t.dev, t.port), Path: t.specPath})
	}
	return prop
}

// createAfter is the settings of a port whose RDMA device this plan makes
// anew (cause: an rxe link, an mlx4 port type): every value the spec gives
// is set once the device is there.
func createAfter(req *plan.Request, t target, addr, cause plan.Address, pl *payload) *plan.Change {
	c := &plan.Change{Address: addr, Action: plan.Create, Activation: plan.Runtime, Source: req.Pos(t.specPath), DependsOn: []plan.Address{cause}, Payload: pl}
	if t.mode != "" {
		c.Attributes = append(c.Attributes, plan.Attr{Name: "mode", After: t.mode})
	}
	if t.tos != nil {
		c.Attributes = append(c.Attributes, plan.Attr{Name: "tos", After: strconv.Itoa(*t.tos)})
	}
	return c
}

func diff(req *plan.Request, obs *Observed, facts *plan.Facts) plan.Proposal {
	var prop plan.Proposal
	for _, t := range targets(req) {
		addr := Address(t.dev, t.port)
		dev := req.Inv.Device(t.dev)
		pl := &payload{dev: t.dev, port: t.port, mode: KernelMode(t.mode), tos: t.tos}
		// A device the plan (re)creates (an rxe link made or moved to
		// another netdev, a ConnectX-3 registered anew by a port type)
		// starts with the kernel's defaults: everything is set after it,
		// whatever the old device had.
		anewBy, created := facts.DeviceCreated(t.dev)
		if created && (dev == nil || dev.PCI == "") {
			dev = nil // a Soft-RoCE link made anew
		}
		if dev == nil {
			// A device this plan creates (rxe): everything is set after it.
			if !created {
				// The missing device is already a finding: the engine's (no
				// such device) or the rxe entry's (why it cannot be made).
				continue
			}
			if t.port != 1 {
				prop.Errors = append(prop.Errors, req.Finding(t.specPath, "%s is a Soft-RoCE device with one port; there is no port %d", t.dev, t.port))
				continue
			}
			if t.mode == "v1" {
				// rdma_rxe makes RoCE v2 GIDs only; the kernel refuses v1.
				prop.Errors = append(prop.Errors, req.Finding(t.specPath+".mode", "%s is a Soft-RoCE device: its GIDs are RoCE v2 only, so the kernel refuses RoCE v1 as its default; use mode: v2", t.dev))
				continue
			}
			prop.Changes = append(prop.Changes, createAfter(req, t, addr, anewBy, pl))
			continue
		}
		port := dev.Port(t.port)
		if port == nil {
			prop.Errors = append(prop.Errors, req.Finding(t.specPath, "%s has no port %d (ports: %s)", t.dev, t.port, portList(dev)))
			continue
		}
		if t.mode == "v2" && dev.HCAType == inventory.ConnectX3 {
			// The seeds: RoCE v2 is the default from RHEL 7.5 on every
			// adapter but the ConnectX-3 that is not a Pro, which has
			// RoCE v1 only (its GIDs say so too).
			prop.Errors = append(prop.Errors, req.Finding(t.specPath+".mode", "%s is a ConnectX-3 (%s, PCI device 0x1003), not a ConnectX-3 Pro: it has RoCE v1 only, which is also its default; use mode: v1 (and v1 on the clients that connect to it)", t.dev, dev.HCAType))
			continue
		}
		// An mlx4 port type written in this plan changes the link layer now;
		// the port's RDMA device comes back with the kernel's defaults.
		if mc, ok := facts.LinkNow(dev.PCI, t.port); ok {
			if mc.To != linklayer.Ethernet {
				prop.Errors = append(prop.Errors, req.Finding(t.specPath, "port %d of %s becomes InfiniBand in this plan (%s); RoCE settings need an Ethernet port", t.port, t.dev, mc.Cause))
				continue
			}
			if port.LinkLayer != linklayer.Ethernet {
				prop.Changes = append(prop.Changes, createAfter(req, t, addr, mc.Cause, pl))
				continue
			}
		}
		if created && port.LinkLayer == linklayer.Ethernet {
			// The card is registered anew (an mlx4 port type changes on
			// its other port): this port's defaults are the kernel's
			// again, so everything is set after the change; what it has
			// now is kept for Revert.
			if have, ok := obs.Ports[key(t.dev, t.port)]; ok {
				pl.before = &have
			}
			pl.reregistered = true
			prop.Changes = append(prop.Changes, createAfter(req, t, addr, anewBy, pl))
			continue
		}
		if staged, ok := facts.LinkAtBoot(dev.PCI, t.port); ok {
			if staged.To == linklayer.Ethernet && port.LinkLayer != linklayer.Ethernet {
				prop.Deferred = append(prop.Deferred, plan.Deferred{Address: addr, Reason: staged.Reason(), Source: req.Pos(t.specPath)})
				continue
			}
			if staged.To != linklayer.Ethernet {
				prop.Errors = append(prop.Errors, req.Finding(t.specPath, "port %d of %s becomes %s at the next boot (%s); RoCE settings need an Ethernet port", t.port, t.dev, staged.To, staged.Setting))
				continue
			}
		}
		if port.LinkLayer != linklayer.Ethernet {
			prop.Errors = append(prop.Errors, req.Finding(t.specPath, "port %d of %s has link layer %s; RoCE settings need an Ethernet port (a VPI adapter switches with firmware LINK_TYPE_P%d: ETH)", t.port, t.dev, port.LinkLayer, dev.CardPort(t.port)))
			continue
		}
		if t.mode != "" && len(port.GIDs) > 0 && !port.Supports(KernelMode(t.mode)) {
			// The kernel takes a default RoCE mode only when the port has a
			// GID of that type (EINVAL otherwise): say so at plan time.
			prop.Errors = append(prop.Errors, req.Finding(t.specPath+".mode", "port %d of %s has no %s GID (its GID types: %s), so the kernel refuses RoCE %s as its default", t.port, t.dev, KernelMode(t.mode), gidTypes(port), t.mode))
			continue
		}
		if obs.NotLoaded {
			// Nothing to read until rdma_cm is loaded: every managed value is
			// set by apply, which loads it first.
			c := &plan.Change{Address: addr, Action: plan.Update, Activation: plan.Runtime, Source: req.Pos(t.specPath), Payload: pl}
			if t.mode != "" {
				c.Attributes = append(c.Attributes, plan.Attr{Name: "mode", Before: notLoaded, After: t.mode})
			}
			if t.tos != nil {
				c.Attributes = append(c.Attributes, plan.Attr{Name: "tos", Before: notLoaded, After: strconv.Itoa(*t.tos)})
			}
			prop.Changes = append(prop.Changes, c)
			continue
		}
		have, ok := obs.Ports[key(t.dev, t.port)]
		if !ok {
			prop.Errors = append(prop.Errors, req.Finding(t.specPath, "configfs shows no port %d for %s", t.port, t.dev))
			continue
		}
		var attrs []plan.Attr
		if t.mode != "" && KernelMode(t.mode) != have.Mode {
			attrs = append(attrs, plan.Attr{Name: "mode", Before: SpecMode(have.Mode), After: t.mode})
		}
		if t.tos != nil && *t.tos != have.Tos {
			attrs = append(attrs, plan.Attr{Name: "tos", Before: strconv.Itoa(have.Tos), After: strconv.Itoa(*t.tos)})
		}
		if len(attrs) == 0 {
			continue
		}
		was := have
		pl.before = &was
		prop.Changes = append(prop.Changes, &plan.Change{Address: addr, Action: plan.Update, Activation: plan.Runtime,
			Source: req.Pos(t.specPath), Attributes: attrs, Payload: pl})
	}
	return prop
}

// gidTypes lists the GID types of a port's table, e.g. "RoCE v2".
func gidTypes(p *inventory.Port) string {
	seen := map[string]bool{}
	var out []string
	for _, g := range p.GIDs {
		if !seen[g.Type] {
			seen[g.Type] = true
			out = append(out, g.Type)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func portList(d *inventory.Device) string {
	var s []string
	for _, p := range d.Ports {
		s = append(s, strconv.Itoa(p.Num))
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
