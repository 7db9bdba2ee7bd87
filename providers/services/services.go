// Package services manages systemd units the RDMA stack needs (opensm,
// ibacm, srp_daemon, ...): whether each is enabled at boot and whether it
// runs now, through the service manager's D-Bus API. Both last: an
// enabled unit stays enabled, and a started unit keeps running, so the
// changes are effective now and persistent (activation "now"); a unit
// that is only started and not enabled is stopped by the next boot.
package services

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Provider is the services provider.
type Provider struct{}

var _ plan.TypedProvider[*Observed, *payload] = (*Provider)(nil)

// New is the provider as plan.Build and apply take it.
func New() plan.Provider { return plan.Adapt[*Observed, *payload](&Provider{}) }

// Name implements plan.Provider.
func (*Provider) Name() string { return "services" }

// Kind is the kind of this provider's addresses.
const Kind = "service"

// Address is the plan address of one unit.
func Address(unit string) plan.Address { return plan.Addr(Kind, unit) }

// ErrNoSystemd is the discovery error of a host where no systemd runs.
var ErrNoSystemd = errors.New("no systemd runs on this host (no /run/systemd/system): services cannot be managed")

// Observed is what the service manager says of the spec's units.
type Observed struct {
	// NoSystemd: the host has no service manager.
	NoSystemd bool
	// Units maps a unit name (with its suffix) to its state.
	Units map[string]host.UnitState
}

// Observe implements plan.TypedProvider: it reads each unit the spec names,
// or for show (Request.Full) CaptureUnits and the units show is asked for.
//
// Equivalent to: systemctl show -p LoadState,ActiveState,UnitFileState UNIT...
func (p *Provider) Observe(ctx context.Context, h *host.Host, req *plan.Request) (*Observed, error) {
	units := unitsOf(req)
	if len(units) == 0 {
		return nil, nil
	}
	if h.Systemd == nil {
		return &Observed{NoSystemd: true}, nil
	}
	obs := &Observed{Units: map[string]host.UnitState{}}
	for _, u := range units {
		st, err := h.Systemd.Unit(ctx, u)
		if err != nil {
			return nil, fmt.Errorf("unit %s: %w", u, err)
		}
		obs.Units[u] = st
	}
	return obs, nil
}

// unitsOf lists the units to read, in order: the valid names the spec
// gives, or for show CaptureUnits and the extra units asked for.
func unitsOf(req *plan.Request) []string {
	if req.Full {
		units := slices.Clone(CaptureUnits)
		for _, u := range req.Capture.Units {
			if !slices.Contains(units, u) {
				units = append(units, u)
			}
		}
		return units
	}
	var units []string
	for _, s := range req.Spec.Services {
		if !statesOf(s) {
			continue // limits only: the memlock provider's
		}
		if schema.CheckUnitName(s.Name) == "" { // else validation reported it; never ask about it
			units = append(units, schema.UnitName(s.Name))
		}
	}
	return units
}

// statesOf reports whether a spec entry asks for a unit's state (enabled
// or active), what this provider manages.
func statesOf(s schema.Service) bool { return s.Enabled != nil || s.Active != nil }

// payload is what Apply does to one unit; nil fields are left alone.
type payload struct {
	unit   string
	enable *bool
	start  *bool
}
