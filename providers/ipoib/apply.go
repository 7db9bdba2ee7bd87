package ipoib

import (
	"context"
	"fmt"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/ipoib/nmcli"
)

// Make implements plan.TypedProvider. See the package comment for what each
// step does on the machine; every nmcli failure is a *ConnError naming the
// connection, the step, the command and NetworkManager's message.
func (p *Provider) Make(ctx context.Context, h *host.Host, c *plan.Change, pl *payload) error {
	return pl.apply(ctx, client(h))
}

// apply carries out one connection's change:
//
//	create: nmcli connection add type infiniband con-name NAME ...; nmcli connection up uuid U
//	update: nmcli connection modify uuid U PROP VALUE ...; nmcli connection up|down uuid U
//	delete: nmcli connection delete uuid U
func (pl *payload) apply(ctx context.Context, cl *nmcli.Client) error {
	fail := func(step Step, uuid string, err error) error {
		return &ConnError{Name: pl.Name, UUID: uuid, Step: step, Err: err}
	}
	switch pl.Op {
	case opCreate:
		uuid, err := cl.Add(ctx, pl.Profile)
		if err != nil {
			return fail(StepAdd, "", err)
		}
		pl.UUID = uuid // what a revert deletes
		if pl.Up {
			if err := cl.Up(ctx, uuid); err != nil {
				return fail(StepUp, uuid, err)
			}
		}
		return nil
	case opUpdate:
		if err := cl.Modify(ctx, pl.UUID, pl.Settings); err != nil {
			return fail(StepModify, pl.UUID, err)
		}
		switch {
		case pl.Up:
			if err := cl.Up(ctx, pl.UUID); err != nil {
				return fail(StepUp, pl.UUID, err)
			}
		case pl.Down:
			if err := cl.Down(ctx, pl.UUID); err != nil {
				return fail(StepDown, pl.UUID, err)
			}
		}
		return nil
	case opDelete:
		// A profile already gone is deleted: NetworkManager's checkpoint
		// rollback deletes the profiles an apply created, before
		// rdmaform's own revert gets to them.
		if err := cl.Delete(ctx, pl.UUID); err != nil && !nmcli.IsNoSuchConnection(err) {
			return fail(StepDelete, pl.UUID, err)
		}
		return nil
	}
	return fmt.Errorf("%s: unknown operation %d", Address(pl.Name), pl.Op)
}
