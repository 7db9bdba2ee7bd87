package qos

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Make implements plan.TypedProvider: it reads the netdev again, runs the
// writes that still differ in order, and reads it back. `dcb app replace`
// exits 0 even when it could not remove a replaced entry (mlx5 answers
// ENOENT for an entry its own replace already dropped), so only the read
// back proves a change.
//
// Equivalent to: dcb dcbx set dev X host cee ieee; dcb app replace dev X dscp-prio 26:3 ...;
// dcb ets set dev X ...; dcb pfc set dev X prio-pfc 0:off ... 3:on ...; ethtool -A X rx off tx off;
// echo 1 > /sys/class/net/X/ecn/roce_rp/enable/3; echo 48 > /sys/class/net/X/ecn/roce_np/cnp_dscp
func (p *Provider) Make(ctx context.Context, h *host.Host, c *plan.Change, pl *payload) error {
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
