package acs

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// unread is the offset of a capability not read (no observation).
const unread = -1

// want is what the spec asks of one bridge: the bits of mask set to
// value's, from the spec path path.
type want struct {
	mask, value uint16
	path        string
	explicit    bool
}

// Plan implements plan.TypedProvider. peer_to_peer asks every bridge on
// the device's paths to the GPUs below its host bridge to have P2P
// Request Redirect, Completion Redirect and Egress Control off (a bridge
// without the ACS capability redirects nothing and is left out); an
// explicit control value of acs.bridges wins over it on its bridge. Two
// devices asking one bridge for different values is a finding.
func (p *Provider) Plan(req *plan.Request, obs *Observed, _ *plan.Facts) plan.Proposal {
	var prop plan.Proposal
	wants := map[string]want{}
	put := func(b string, w want) {
		prev, ok := wants[b]
		switch {
		case !ok || (w.explicit && !prev.explicit):
			wants[b] = w
		case prev.explicit && !w.explicit:
		case prev.mask != w.mask || prev.value != w.value:
			prop.Errors = append(prop.Errors, req.Finding(w.path, "bridge %s is also given ACS Control %s at %s", b, describeWant(prev), prev.path))
		}
	}
	capOf := func(path, b string) (Cap, bool) {
		if obs == nil {
			// Nothing was read: the bridge is declared all the same (what
			// the spec asks of it does not depend on it), nothing planned.
			prop.Errors = append(prop.Errors, req.Unreadable(path, "the config space of bridge %s was not read", b))
			return Cap{Offset: unread}, true
		}
		if e, ok := obs.Errs[b]; ok {
			prop.Errors = append(prop.Errors, req.Finding(path, "reading the ACS capability of bridge %s: %s", b, e))
			return Cap{}, false
		}
		return obs.Bridges[b], true
	}
	for i, sd := range req.Spec.Devices {
		if sd.ACS == nil {
			continue
		}
		path := specPath(i)
		d := req.Devices[i]
		if d == nil && sd.PCIeOnly() {
			// A PCI function that is no RDMA device: Observe read its path.
			pci := schema.NormalizePCI(sd.PCI)
			switch {
			case obs == nil:
				prop.Errors = append(prop.Errors, req.Unreadable(path, "the path of %s was not read", pci))
			case obs.Errs[pci] != "":
				prop.Errors = append(prop.Errors, req.Finding(path, "%s", obs.Errs[pci]))
			default:
				d = obs.Funcs[pci]
			}
		}
		if d == nil {
			continue // the engine reports a device that is not there
		}
		if d.PCI == "" {
			prop.Errors = append(prop.Errors, req.Finding(path, "%s has no PCI function (a Soft-RoCE device?): acs needs one", d.Name))
			continue
		}
		if sd.ACS.PeerToPeer != nil && *sd.ACS.PeerToPeer {
			pp := path + ".peer_to_peer"
			near, far := peerPaths(d)
			if len(near) == 0 {
				prop.Errors = append(prop.Errors, req.Finding(pp, "no GPU below the host bridge of %s (%s): peer-to-peer to it leaves the PCI hierarchy, where no bridge's ACS decides it", d.PCI, farText(far)))
			}
			for _, a := range near {
				for _, b := range a.Bridges {
					if c, ok := capOf(pp, b); ok && c.Offset != 0 {
						put(b, want{mask: P2PMask, path: pp})
					}
				}
			}
		}
		allowed := onPaths(d)
		for j, eb := range sd.ACS.Bridges {
			bp := fmt.Sprintf("%s.bridges[%d]", path, j)
			b := schema.NormalizePCI(eb.PCI)
			if !contains(allowed, b) {
				prop.Errors = append(prop.Errors, req.Finding(bp+".pci", "%s is no bridge above %s or between it and a GPU below its host bridge (those are: %s)", b, d.PCI, listOr(allowed)))
				continue
			}
			c, ok := capOf(bp, b)
			if !ok {
				continue
			}
			v := uint16(*eb.Control)
			switch {
			case c.Offset == unread:
			case c.Offset == 0:
				prop.Errors = append(prop.Errors, req.Finding(bp+".pci", "bridge %s has no ACS capability", b))
				continue
			case v&^c.Bits != 0:
				prop.Errors = append(prop.Errors, req.Finding(bp+".control", "%s sets bits bridge %s lacks: its ACS Capability is %s", Describe(v), b, Describe(c.Bits)))
				continue
			}
			put(b, want{mask: 0xffff, value: v, path: bp + ".control", explicit: true})
		}
	}
	var bridges []string
	for b := range wants {
		bridges = append(bridges, b)
	}
	sort.Strings(bridges)
	// At boot the kernel sets ACS again (pci_enable_acs); the boot unit
	// sets it back. Linux 6.11's pci=config_acs= could set it at boot
	// instead: the kernel command line is not rdmaform's yet.
	boot := "kernel's ACS (persistence: none)"
	if req.Spec.Persistence == "boot-unit" {
		boot = "boot unit"
	}
	for _, b := range bridges {
		w := wants[b]
		prop.Managed = append(prop.Managed, plan.Managed{Address: Address(b), Path: w.path})
		if obs == nil {
			continue
		}
		c := obs.Bridges[b]
		to := c.Control&^w.mask | w.value&w.mask
		if to == c.Control {
			continue
		}
		prop.Changes = append(prop.Changes, &plan.Change{Address: Address(b), Action: plan.Update, Activation: plan.Runtime,
			Source: req.Pos(w.path), Attributes: []plan.Attr{
				{Name: "acs_control", Before: Describe(c.Control), After: Describe(to)},
				{Name: "at_boot", Before: "kernel's ACS", After: boot},
			},
			Payload: &payload{bridge: b, mask: w.mask, value: w.value, before: c.Control}})
	}
	return prop
}

func describeWant(w want) string {
	if w.mask == P2PMask && w.value == 0 {
		return "with peer_to_peer"
	}
	return Describe(w.value)
}

func farText(far []inventory.Affinity) string {
	if len(far) == 0 {
		return "the host has no GPU"
	}
	var s []string
	for _, a := range far {
		s = append(s, a.GPU+" "+a.Relation.String())
	}
	return strings.Join(s, ", ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func listOr(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, " ")
}
