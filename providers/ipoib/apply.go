package ipoib

import (
	"context"
	"errors"
	"fmt"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/ipoib/nmcli"
)

// Make implements plan.TypedProvider. See the package comment for what each
// step does on the machine; every NetworkManager failure is a *ConnError
// naming the connection, the step and NetworkManager's D-Bus error.
func (p *Provider) Make(ctx context.Context, h *host.Host, c *plan.Change, pl *payload) error {
	n, err := nm(h)
	if err != nil {
		return &ConnError{Name: pl.Name, UUID: pl.UUID, Step: stepOf(pl.Op), Err: err}
	}
	return pl.apply(ctx, n)
}

func stepOf(o op) Step {
	switch o {
	case opUpdate:
		return StepModify
	case opDelete:
		return StepDelete
	}
	return StepAdd
}

// apply carries out one connection's change through NetworkManager's
// D-Bus API:
//
//	create: AddConnection2(SETTINGS, TO_DISK); ActivateConnection
//	update: GetSettings, Update2(SETTINGS with the changed properties, TO_DISK); ActivateConnection or DeactivateConnection
//	delete: Delete
func (pl *payload) apply(ctx context.Context, n host.NetworkManager) error {
	fail := func(step Step, uuid string, err error) error {
		return &ConnError{Name: pl.Name, UUID: uuid, Step: step, Err: err}
	}
	switch pl.Op {
	case opCreate:
		s, err := newSettings(pl.Profile)
		if err != nil {
			return fail(StepAdd, "", err)
		}
		uuid, err := n.AddConnection(ctx, s)
		if err != nil {
			return fail(StepAdd, "", err)
		}
		pl.UUID = uuid // what a revert deletes
		if pl.Up {
			if err := n.ActivateConnection(ctx, uuid); err != nil {
				return fail(StepUp, uuid, err)
			}
		}
		return nil
	case opUpdate:
		if len(pl.Settings) > 0 {
			// Every value is checked before NetworkManager is asked, so
			// a bad one changes nothing.
			if err := setAll(host.NMSettings{}, pl.Settings); err != nil {
				return fail(StepModify, pl.UUID, err)
			}
			err := n.UpdateConnection(ctx, pl.UUID, func(s host.NMSettings) { _ = setAll(s, pl.Settings) })
			if err != nil {
				return fail(StepModify, pl.UUID, err)
			}
		}
		switch {
		case pl.Up:
			if err := n.ActivateConnection(ctx, pl.UUID); err != nil {
				return fail(StepUp, pl.UUID, err)
			}
		case pl.Down:
			if err := n.DeactivateConnection(ctx, pl.UUID); err != nil {
				return fail(StepDown, pl.UUID, err)
			}
		}
		return nil
	case opDelete:
		// A profile already gone is deleted: NetworkManager's checkpoint
		// rollback deletes the profiles an apply created, before
		// rdmaform's own revert gets to them.
		if err := n.DeleteConnection(ctx, pl.UUID); err != nil && !IsNoSuchConnection(err) {
			return fail(StepDelete, pl.UUID, err)
		}
		return nil
	}
	return fmt.Errorf("%s: unknown operation %d", Address(pl.Name), pl.Op)
}

// setAll sets the given properties from their plan forms.
func setAll(s host.NMSettings, settings []nmcli.Setting) error {
	var err error
	for _, set := range settings {
		err = errors.Join(err, setProperty(s, set.Name, set.Value))
	}
	return err
}
