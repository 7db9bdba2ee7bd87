package agent

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// A lowered maxUnavailable. Take's names are the lock: of two agents
// racing for slot i, one creates (or updates) it and the other is
// refused. That holds while every held slot is one of the first n names.
// When the config's maxUnavailable is lowered from m to n while slots are
// held, a slot past the first n names may still be held (its node goes
// on activating), and two agents that both read the held count before
// the other took a slot could then each take a different free name below
// n: one more node activating than n allows.
//
// So a taken slot is confirmed: the agent lists the config's slots again
// after taking one, and when n or more other nodes hold an unmarked slot,
// it gives its own back and waits. Of any two agents that take a slot at
// once, the one whose take the API server ordered second lists after the
// other's take, and sees it: whatever the names, no set of more than n
// nodes all keep their slots. (Both may give theirs back; each tries again
// at its next reconcile.) A slot marked failed is not counted: its node
// is not activating.

// confirm keeps l, just taken for this node, only if fewer than n other
// nodes hold an unmarked slot of the config; otherwise it releases l and
// returns nil.
func (s *Slots) confirm(ctx context.Context, config string, n int, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	ls, err := s.List(ctx, config)
	if err != nil {
		// The slot is held but unconfirmed: give it back.
		if rerr := s.Release(ctx, l); rerr != nil {
			return nil, fmt.Errorf("%w (and releasing slot %s: %v)", err, l.Name, rerr)
		}
		return nil, err
	}
	others := 0
	for i := range ls {
		if h := holder(&ls[i]); h != "" && h != s.Holder && ls[i].Annotations[AnnotationFailed] == "" {
			others++
		}
	}
	if others < n {
		return l, nil
	}
	return nil, s.Release(ctx, l)
}
