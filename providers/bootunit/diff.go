package bootunit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"

	"github.com/rdmaform/rdmaform/plan"
)

// Plan implements plan.TypedProvider.
func (p *Provider) Plan(req *plan.Request, obs *Observed, _ *plan.Facts) plan.Proposal {
	prop := diff(req, obs, p.binary())
	if req.Spec.Persistence != "" {
		prop.Managed = []plan.Managed{{Address: Address, Path: "$.persistence"}}
	}
	return prop
}

// digest names file contents in the plan: short enough to read, long
// enough that two versions never look alike.
func digest(b []byte) string {
	if b == nil {
		return ""
	}
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:6])
}

func diff(req *plan.Request, obs *Observed, binary string) plan.Proposal {
	var prop plan.Proposal
	if obs == nil {
		return prop
	}
	src := req.Pos("$.persistence")
	switch req.Spec.Persistence {
	case "boot-unit":
		if !obs.Binary {
			prop.Errors = append(prop.Errors, req.Finding("$.persistence", "the boot unit would run %s, which does not exist on this host: install rdmaform there (the package or make install) or set persistence: none", binary))
			return prop
		}
		want := UnitFile(binary)
		spec := req.Spec.Src.Data
		if spec == nil {
			prop.Errors = append(prop.Errors, req.Finding("$.persistence", "the spec's bytes are not known, so there is nothing to copy to %s", SpecPath))
			return prop
		}
		var attrs []plan.Attr
		if !bytes.Equal(obs.Unit, want) {
			attrs = append(attrs, plan.Attr{Name: "unit_file", Before: digest(obs.Unit), After: digest(want)})
		}
		if !bytes.Equal(obs.Spec, spec) {
			attrs = append(attrs, plan.Attr{Name: "boot_spec", Before: digest(obs.Spec), After: digest(spec)})
		}
		if !obs.Enabled {
			attrs = append(attrs, plan.Attr{Name: "enabled", Before: "false", After: "true"})
		}
		if len(attrs) == 0 {
			return prop
		}
		action := plan.Update
		if obs.Unit == nil {
			action = plan.Create
		}
		prop.Changes = append(prop.Changes, &plan.Change{Address: Address, Action: action, Activation: plan.Now,
			Source: src, Attributes: attrs,
			Payload: &payload{unit: want, spec: spec, relink: obs.Link != "" && !obs.Enabled, before: obs}})
	case "none":
		if obs.Unit != nil && !bytes.HasPrefix(obs.Unit, []byte(Marker+"\n")) {
			prop.Errors = append(prop.Errors, req.Finding("$.persistence", "%s was not written by rdmaform (no %q first line); persistence: none leaves it alone: remove it by hand if it is rdmaform's", UnitPath, "# Written by rdmaform"))
			return prop
		}
		var attrs []plan.Attr
		if obs.Unit != nil {
			attrs = append(attrs, plan.Attr{Name: "unit_file", Before: digest(obs.Unit)})
		}
		if obs.Spec != nil {
			attrs = append(attrs, plan.Attr{Name: "boot_spec", Before: digest(obs.Spec)})
		}
		if obs.Link != "" {
			attrs = append(attrs, plan.Attr{Name: "enabled", Before: "true", After: "false"})
		}
		if len(attrs) == 0 {
			return prop
		}
		prop.Changes = append(prop.Changes, &plan.Change{Address: Address, Action: plan.Delete, Activation: plan.Now,
			Source: src, Attributes: attrs, Payload: &payload{remove: true, before: obs}})
	}
	return prop
}
