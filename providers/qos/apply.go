package qos

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Apply implements plan.Provider: it reads the netdev again, runs the
// writes that still differ in order, and reads it back. `dcb app replace`
// exits 0 even when it could not remove a replaced entry (mlx5 answers
// ENOENT for an entry its own replace already dropped), so only the read
// back proves a change.
//
// Equivalent to: dcb dcbx set dev X host cee ieee; dcb app replace dev X dscp-prio 26:3 ...;
// dcb ets set dev X ...; dcb pfc set dev X prio-pfc 0:off ... 3:on ...; ethtool -A X rx off tx off;
// echo 1 > /sys/class/net/X/ecn/roce_rp/enable/3
func (p *Provider) Apply(ctx context.Context, h *host.Host, c *plan.Change) error {
	pl, ok := c.Payload.(*payload)
	if !ok {
		return fmt.Errorf("%s: no qos payload", c.Address)
	}
	sem := make(chan struct{}, MaxReads)
	have, err := readPort(ctx, h, pl.netdev, pl.want.need(), sem)
	if err != nil {
		return err
	}
	if pl.before == nil {
		pl.before = have
	}
	cmp := compare(pl.want, have)
	if len(cmp.problems) > 0 {
		return errors.New(strings.Join(cmp.problems, "; "))
	}
	var notes []string
	for _, s := range cmp.steps {
		if s.file != "" {
			if err := h.FS.WriteAttr(s.file, []byte(s.value+"\n")); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
			continue
		}
		res, err := h.Run(ctx, s.args...)
		if err != nil {
			return err
		}
		if msg := strings.TrimSpace(string(res.Stderr)); msg != "" {
			notes = append(notes, fmt.Sprintf("%s: %s", s, msg))
		}
	}
	got, err := readPort(ctx, h, pl.netdev, pl.want.need(), sem)
	if err != nil {
		return fmt.Errorf("reading %s back: %w", pl.netdev, err)
	}
	if left := compare(pl.want, got); len(left.steps) > 0 || len(left.problems) > 0 {
		what := append(left.differs(), left.problems...)
		msg := fmt.Sprintf("%s after the writes: %s", pl.netdev, strings.Join(what, "; "))
		if len(notes) > 0 {
			msg += " (the tools said: " + strings.Join(notes, "; ") + ")"
		}
		return errors.New(msg)
	}
	return nil
}

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: the settings the change made go back
// to what the plan read (the APP table exactly as it was). A port the
// change took from firmware to host DCBX stays with the host: dcb cannot
// hand it back (see compare).
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, ok := c.Payload.(*payload)
	if !ok {
		return nil, fmt.Errorf("%s: no qos payload", c.Address)
	}
	if pl.before == nil {
		return nil, nil
	}
	b := *pl.before // a copy: the revert's want points into it
	w := want{}
	if pl.want.trust != "" || pl.want.app != nil {
		app := map[int]int{}
		for d, prios := range b.App {
			if len(prios) > 0 {
				app[d] = prios[0]
			}
		}
		w.app = &app
	}
	if pl.want.pfc != nil {
		w.pfc = &b.PFC
	}
	if pl.want.delay != nil {
		w.delay = &b.Delay
	}
	if pl.want.ets != nil {
		for i := range b.ETS.TSA {
			if b.ETS.TSA[i] != "ets" {
				b.ETS.BW[i] = 0 // dcb takes 0 for strict and vendor classes
			}
		}
		w.ets = &b.ETS
	}
	if pl.want.pause != nil {
		w.pause = &[2]bool{b.PauseRX, b.PauseTX}
	}
	if pl.want.ecn != nil {
		w.ecn = &[2][8]bool{b.ECNRP, b.ECNNP}
	}
	var attrs []plan.Attr
	for _, a := range plan.Reversed(c.Attributes) {
		if a.Name != "dcbx" { // stays with the host (see above)
			attrs = append(attrs, a)
		}
	}
	if len(attrs) == 0 {
		return nil, nil
	}
	return &plan.Change{Address: c.Address, Action: plan.Update, Activation: c.Activation, Provider: c.Provider, Attributes: attrs, Payload: &payload{netdev: pl.netdev, want: w}, Disrupts: c.Disrupts}, nil
}
