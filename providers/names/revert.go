package names

import (
	"github.com/rdmaform/rdmaform/plan"
)

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: the old name again, or the old rules
// file (none: removed).
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	back := &payload{rdma: pl.rdma, netdev: pl.netdev, old: pl.name, name: pl.old, up: pl.up,
		file: pl.file, rules: pl.before, before: pl.rules}
	action := plan.Update
	if pl.file && pl.before == nil {
		action = plan.Delete
	}
	rc := &plan.Change{Address: c.Address, Action: action, Activation: c.Activation, Attributes: plan.Reversed(c.Attributes), Payload: back}
	if pl.netdev && pl.up {
		rc.Disrupts = []string{pl.name, pl.old}
	}
	return rc, nil
}

// JournalBefore is the name a rename replaced, for the rollback
// journal's spec (show captures no names): the device's key (PCI or node
// GUID), whether the name is the RDMA device's, and the old name; ok
// false for another change.
func JournalBefore(c *plan.Change) (key string, rdma bool, name string, ok bool) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil || pl.file {
		return "", false, "", false
	}
	return c.Address.Key, pl.rdma, pl.old, true
}

// Renamed is a rename's old and new name and whether it is an RDMA
// device's, for the rollback journal: it records what a later stage
// changed under the name it has before the apply. ok false for another
// change.
func Renamed(c *plan.Change) (old, name string, rdma, ok bool) {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil || pl.file {
		return "", "", false, false
	}
	return pl.old, pl.name, pl.rdma, true
}
