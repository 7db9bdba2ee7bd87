package memlock

import (
	"bytes"
	"strconv"

	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Plan implements plan.TypedProvider: the logins' file when its content
// is not what the spec gives; a unit's drop-in when its content, or the
// limits the manager reports, differ. A unit that runs is restarted.
func (p *Provider) Plan(req *plan.Request, obs *Observed, _ *plan.Facts) plan.Proposal {
	var prop plan.Proposal
	if l := req.Spec.Limits; l != nil {
		prop.Managed = append(prop.Managed, plan.Managed{Address: Logins, Path: "$.limits"})
	}
	for i, s := range req.Spec.Services {
		if s.Limits != nil && schema.CheckUnitName(s.Name) == "" {
			prop.Managed = append(prop.Managed, plan.Managed{Address: Address(schema.UnitName(s.Name)), Path: schema.Path("services", i, "limits")})
		}
	}
	if len(prop.Managed) == 0 {
		return prop
	}
	if obs == nil {
		prop.Errors = append(prop.Errors, req.Unreadable("$", "the memlock limits were not read"))
		return prop
	}
	if l := req.Spec.Limits; l != nil {
		if want, err := schema.ParseMemlock(l.Memlock); err == nil {
			content := renderLimits(want)
			if !bytes.Equal(content, obs.Limits) {
				before := "(absent)"
				if obs.Limits != nil {
					before = "(edited)"
					if v, ok := loginsLimit(obs.Limits); ok {
						before = Human(v)
					}
				}
				prop.Changes = append(prop.Changes, &plan.Change{Address: Logins, Action: plan.Update, Activation: plan.Now,
					Source: req.Pos("$.limits.memlock"), Attributes: []plan.Attr{{Name: "memlock", Before: before, After: Human(want)}},
					Payload: &payload{file: LimitsFile, content: content, before: obs.Limits}})
			}
		}
	}
	for i, s := range req.Spec.Services {
		if s.Limits == nil || schema.CheckUnitName(s.Name) != "" {
			continue
		}
		path := schema.Path("services", i, "limits")
		want, err := schema.ParseMemlock(s.Limits.Memlock)
		if err != nil {
			continue // validation reported it
		}
		u := schema.UnitName(s.Name)
		if obs.NoSystemd {
			prop.Errors = append(prop.Errors, req.Unreadable(path, "no systemd runs on this host (no /run/systemd/system): a unit's limits cannot be set"))
			continue
		}
		have := obs.Units[u]
		if have == nil {
			continue
		}
		content := renderDropIn(want)
		if obs.Offline {
			if !bytes.Equal(content, have.DropIn) {
				prop.Changes = append(prop.Changes, &plan.Change{Address: Address(u), Action: plan.Update, Activation: plan.Now,
					Source: req.Pos(path), Attributes: []plan.Attr{{Name: "drop_in", Before: state(have.DropIn), After: DropInPath(u)}},
					Payload: &payload{file: DropInPath(u), content: content, before: have.DropIn, unit: u, offline: true}})
			}
			continue
		}
		if have.State.LoadState != "loaded" {
			prop.Errors = append(prop.Errors, req.Finding(schema.Path("services", i, "name"), "unit %s is not loaded (LoadState=%s): install the package that provides it", u, orNone(have.State.LoadState)))
			continue
		}
		fileOK := bytes.Equal(content, have.DropIn)
		loadedOK := have.Soft == want && have.Hard == want
		processOK := have.Process == nil || have.Process[0] == want && have.Process[1] == want
		if fileOK && loadedOK && processOK {
			continue
		}
		var attrs []plan.Attr
		if !loadedOK || !fileOK {
			attrs = append(attrs, plan.Attr{Name: "LimitMEMLOCK", Before: pair(have.Soft, have.Hard), After: Human(want)})
		}
		if !fileOK {
			attrs = append(attrs, plan.Attr{Name: "drop_in", Before: state(have.DropIn), After: DropInPath(u)})
		}
		if !processOK {
			attrs = append(attrs, plan.Attr{Name: "main_process", Before: pair(have.Process[0], have.Process[1]), After: Human(want)})
		}
		restart := have.State.Active()
		if restart {
			attrs = append(attrs, plan.Attr{Name: "restart", Before: "", After: strconv.FormatBool(true)})
		}
		prop.Changes = append(prop.Changes, &plan.Change{Address: Address(u), Action: plan.Update, Activation: plan.Now,
			Source: req.Pos(path), Attributes: attrs,
			Payload: &payload{file: DropInPath(u), content: content, before: have.DropIn, unit: u, want: want, restart: restart}})
	}
	return prop
}

func pair(soft, hard uint64) string {
	if soft == hard {
		return Human(hard)
	}
	return Human(soft) + ":" + Human(hard)
}

func state(b []byte) string {
	if b == nil {
		return "(absent)"
	}
	return "(edited)"
}

func orNone(s string) string {
	if s == "" {
		return "not-found"
	}
	return s
}
