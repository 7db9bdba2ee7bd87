package modules

import (
	"github.com/rdmaform/rdmaform/schema"

	"github.com/rdmaform/rdmaform/plan"
)

// Plan implements plan.TypedProvider. It publishes each module a change loads
// or keeps loaded, for the stages that need it (rxe, IPoIB netdevs).
func (p *Provider) Plan(req *plan.Request, obs *Observed, facts *plan.Facts) plan.Proposal {
	prop := diff(req, obs)
	for i, m := range req.Spec.Modules {
		prop.Managed = append(prop.Managed, plan.Managed{Address: Address(m), Path: schema.Path("modules", i)})
	}
	for _, c := range prop.Changes {
		if pl, err := plan.PayloadOf[*payload](c); err == nil && c.Action != plan.Delete && facts != nil {
			facts.LoadModule(pl.name, c.Address)
		}
	}
	return prop
}

func diff(req *plan.Request, obs *Observed) plan.Proposal {
	var prop plan.Proposal
	if req.Spec.Modules == nil || obs == nil {
		return prop
	}
	want := map[string]bool{}
	for i, m := range req.Spec.Modules {
		n := Normalize(m)
		if want[n] {
			continue // validation reported the duplicate
		}
		want[n] = true
		src := req.Pos(schema.Path("modules", i))
		loaded := obs.Loaded[n] || obs.Builtin[n]
		if obs.NoModules && !loaded {
			prop.Errors = append(prop.Errors, req.Finding(schema.Path("modules", i),
				"this kernel cannot load modules (no %s) and %s is not built in", ProcModules, n))
			continue
		}
		listed := obs.Listed[n]
		var attrs []plan.Attr
		if !loaded {
			attrs = append(attrs, plan.Attr{Name: attrLoaded, Before: no, After: yes})
		}
		if !listed {
			attrs = append(attrs, plan.Attr{Name: attrAtBoot, Before: no, After: yes})
		}
		if len(attrs) == 0 {
			continue
		}
		action := plan.Update
		if !loaded {
			action = plan.Create
		}
		prop.Changes = append(prop.Changes, &plan.Change{
			Address: Address(n), Action: action, Activation: plan.Now, Source: src, Attributes: attrs, Payload: &payload{name: n, load: !loaded, listed: true},
		})
	}
	// Modules the file lists that the spec no longer names leave the file;
	// they stay loaded (unloading under running RDMA users is never safe).
	for _, n := range sortedKeys(obs.Listed) {
		if want[n] {
			continue
		}
		prop.Changes = append(prop.Changes, &plan.Change{
			Address: Address(n), Action: plan.Delete, Activation: plan.Now, Source: req.Pos("$.modules"),
			Attributes: []plan.Attr{{Name: attrAtBoot, Before: yes, After: no}},
			Payload:    &payload{name: n, listed: false},
		})
	}
	return prop
}
