package rxe

import (
	"sort"

	"github.com/rdmaform/rdmaform/plan"
)

// takers lists the spec's links, other than name, that the plan binds to
// netdev: after the plan they hold the netdev name had, so a revert of
// name's change must free it first.
func takers(wantNetdev map[string]string, netdev, name string) []string {
	if netdev == "" {
		return nil
	}
	var out []string
	for l, nd := range wantNetdev {
		if l != name && nd == netdev {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: a link the change created is deleted,
// a deleted one is created again on its netdev, a moved one goes back.
// Reverts run last change first, so a link this plan bound to the old
// netdev may still hold it: it is deleted first (its own revert then finds
// it gone). rdma_cm settings of a link made again start from the kernel's
// defaults, as they did for the change itself.
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	back := &payload{name: pl.name, was: pl.netdev}
	rc := &plan.Change{Address: c.Address, Activation: c.Activation, Payload: back}
	switch {
	case pl.was == "" && pl.netdev == "":
		return nil, nil
	case pl.was == "":
		rc.Action = plan.Delete
		rc.Attributes = []plan.Attr{{Name: "netdev", Before: pl.netdev}}
	case pl.netdev == "":
		back.netdev, back.evict = pl.was, pl.wasTaken
		rc.Action = plan.Create
		rc.Attributes = []plan.Attr{{Name: "netdev", After: pl.was}}
	default:
		back.netdev, back.evict, back.deleteFirst = pl.was, pl.wasTaken, true
		rc.Action = plan.Update
		rc.Attributes = []plan.Attr{{Name: "netdev", Before: pl.netdev, After: pl.was}}
	}
	return rc, nil
}
