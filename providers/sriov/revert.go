package sriov

import (
	"strconv"

	"github.com/rdmaform/rdmaform/plan"
)

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: the PF gets back the count and
// autoprobe setting it had (0 first when VFs are enabled, as any change).
// The VFs come back new: settings made on them outside rdmaform are gone.
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	if vp, err := plan.PayloadOf[*vfPayload](c); err == nil {
		return revertVF(c, vp), nil
	}
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return nil, err
	}
	back := &payload{pci: pl.pci, want: pl.before.NumVFs, before: PF{TotalVFs: pl.before.TotalVFs, NumVFs: pl.want, Autoprobe: pl.before.Autoprobe}}
	var attrs []plan.Attr
	if pl.autoprobe != nil {
		was := pl.before.Autoprobe
		back.autoprobe = &was
		back.before.Autoprobe = *pl.autoprobe
		attrs = append(attrs, plan.Attr{Name: "drivers_autoprobe", Before: strconv.FormatBool(*pl.autoprobe), After: strconv.FormatBool(was)})
	}
	if len(pl.writes) > 0 {
		if pl.want != 0 {
			back.writes = append(back.writes, 0)
		}
		if pl.before.NumVFs != 0 {
			back.writes = append(back.writes, pl.before.NumVFs)
		}
		attrs = append(attrs, plan.Attr{Name: "num_vfs", Before: strconv.Itoa(pl.want), After: strconv.Itoa(pl.before.NumVFs)})
	}
	if len(attrs) == 0 {
		return nil, nil
	}
	return &plan.Change{Address: c.Address, Action: plan.Update, Activation: c.Activation, Attributes: attrs, Payload: back, Disrupts: c.Disrupts}, nil
}

// revertVF puts back what a VF change replaced. A VF the change's plan
// created goes with the count's revert, so nothing is left to undo.
func revertVF(c *plan.Change, pl *vfPayload) *plan.Change {
	if pl.created {
		return nil
	}
	back := &vfPayload{pci: pl.pci, netdev: pl.netdev, vf: pl.vf, rebind: pl.rebind}
	b := pl.before
	if pl.cfg.NodeGUID != "" {
		back.cfg.NodeGUID = b.NodeGUID
	}
	if pl.cfg.PortGUID != "" {
		back.cfg.PortGUID = b.PortGUID
	}
	if pl.cfg.MAC != "" {
		back.cfg.MAC = b.MAC
	}
	if pl.cfg.Trust != nil {
		v := b.Trust
		back.cfg.Trust = &v
	}
	if pl.cfg.Spoofchk != nil {
		v := b.Spoofchk
		back.cfg.Spoofchk = &v
	}
	if pl.cfg.State != "" {
		back.cfg.State = b.State
	}
	return &plan.Change{Address: c.Address, Action: plan.Update, Activation: c.Activation, Attributes: plan.Reversed(c.Attributes), Payload: back, Disrupts: c.Disrupts}
}
