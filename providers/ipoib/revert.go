package ipoib

import (
	"fmt"

	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/ipoib/nmcli"
)

// activeIface names the interface an active profile runs on (the parent,
// or the P_Key child); nothing for an inactive profile, whose interface
// carries none of its addresses.
func activeIface(p nmcli.Profile) []string {
	if !p.Active {
		return nil
	}
	if p.Device != "" {
		return []string{p.Device}
	}
	if n := p.Normalized().InterfaceName; n != "" {
		return []string{n}
	}
	return nil
}

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter:
//
//   - a created profile is deleted (by the UUID NetworkManager gave it);
//   - a modified profile gets its old values of the properties the change
//     set, and its old state: a profile the change brought up goes down, a
//     re-activated one is re-activated with the old values, one taken down
//     comes up;
//   - a deleted profile is added again from its before-values, and
//     activated if it was active. NetworkManager gives it a new UUID.
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	rc := &plan.Change{Address: c.Address, Activation: c.Activation}
	switch pl.Op {
	case opCreate:
		if pl.UUID == "" {
			return nil, fmt.Errorf("%s: the created profile's UUID is not known", c.Address)
		}
		rc.Action = plan.Delete
		rc.Attributes = []plan.Attr{{Name: "uuid", Before: pl.UUID}}
		rc.Payload = &payload{Op: opDelete, Name: pl.Name, UUID: pl.UUID, Was: &pl.Profile}
		if pl.Up {
			rc.Disrupts = activeIface(nmcli.Profile{Active: true, InterfaceName: pl.Profile.InterfaceName, Parent: pl.Profile.Parent, PKey: pl.Profile.PKey})
		}
	case opUpdate:
		if pl.Was == nil {
			return nil, fmt.Errorf("%s: the profile before the change is not known", c.Address)
		}
		old := map[string]string{}
		for _, s := range nmcli.Settings(*pl.Was) {
			old[s.Name] = s.Value
		}
		back := &payload{Op: opUpdate, Name: pl.Name, UUID: pl.UUID}
		for _, s := range pl.Settings {
			back.Settings = append(back.Settings, nmcli.Setting{Name: s.Name, Value: old[s.Name]})
			rc.Attributes = append(rc.Attributes, plan.Attr{Name: attrName(s.Name), Before: s.Value, After: old[s.Name]})
		}
		switch {
		case pl.Up && !pl.Was.Active:
			back.Down = true
			rc.Attributes = append(rc.Attributes, plan.Attr{Name: "state", Before: StateUp, After: StateDown})
		case pl.Up:
			back.Up = true
			rc.Attributes = append(rc.Attributes, plan.Attr{Name: "state", Before: StateUp, After: "re-activate"})
		case pl.Down:
			back.Up = true
			rc.Attributes = append(rc.Attributes, plan.Attr{Name: "state", Before: StateDown, After: StateUp})
		}
		rc.Action = plan.Update
		rc.Payload = back
	case opDelete:
		if pl.Was == nil {
			return nil, fmt.Errorf("%s: the deleted profile is not known", c.Address)
		}
		was := pl.Was.Normalized()
		was.UUID, was.Active, was.Device = "", false, ""
		rc.Action = plan.Create
		state := StateDown
		if pl.Was.Active {
			state = StateUp
		}
		for _, s := range nmcli.Settings(was) {
			if s.Value != "" {
				rc.Attributes = append(rc.Attributes, plan.Attr{Name: attrName(s.Name), After: s.Value})
			}
		}
		rc.Attributes = append(rc.Attributes, plan.Attr{Name: "state", After: state})
		rc.Payload = &payload{Op: opCreate, Name: pl.Name, Profile: was, Up: pl.Was.Active}
	default:
		return nil, fmt.Errorf("%s: unknown operation %d", c.Address, pl.Op)
	}
	return rc, nil
}
