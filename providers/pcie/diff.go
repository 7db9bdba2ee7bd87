package pcie

import (
	"strconv"

	"github.com/rdmaform/rdmaform/plan"
)

// Plan implements plan.TypedProvider.
func (p *Provider) Plan(req *plan.Request, obs *Observed, _ *plan.Facts) plan.Proposal {
	var prop plan.Proposal
	for _, t := range targets(req) {
		if t.pci == "" {
			prop.Errors = append(prop.Errors, req.Finding(t.path, "%s has no PCI function (a Soft-RoCE device?): pcie needs one", t.dev))
			continue
		}
		prop.Managed = append(prop.Managed, plan.Managed{Address: Address(t.pci), Path: t.path})
		if obs == nil {
			prop.Errors = append(prop.Errors, req.Unreadable(t.path, "the config space of %s was not read", t.pci))
			continue
		}
		if e, ok := obs.Errs[t.pci]; ok {
			prop.Errors = append(prop.Errors, req.Finding(t.path, "reading the PCI Express capability of %s: %s", t.pci, e))
			continue
		}
		f := obs.Funcs[t.pci]
		want := *req.Spec.Devices[t.index].PCIe.MaxReadRequest
		have := f.MaxReadRequest()
		if have == want {
			continue
		}
		before := "reserved encoding " + strconv.Itoa(int(f.DevCtl>>12)&7)
		if have != 0 {
			before = strconv.Itoa(have)
		}
		prop.Changes = append(prop.Changes, &plan.Change{Address: Address(t.pci), Action: plan.Update, Activation: plan.Runtime,
			Source: req.Pos(t.path), Attributes: []plan.Attr{{Name: "max_read_request", Before: before, After: strconv.Itoa(want)}},
			Payload: &payload{pci: t.pci, want: want, before: have}})
	}
	return prop
}
