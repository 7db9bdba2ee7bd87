package firmware

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/firmware/mlxfmt"
)

// SetError is a set the tool refused, naming the parameter and its spec
// line when the tool's message names one.
type SetError struct {
	Address plan.Address
	Param   string
	Source  *plan.Source
	Cmd     host.Cmd
	Tool    *mlxfmt.ToolError
	Err     error
}

func (e *SetError) Error() string {
	var b strings.Builder
	if e.Source != nil && e.Source.Line > 0 {
		fmt.Fprintf(&b, "%s: ", e.Source)
	}
	if e.Param != "" {
		fmt.Fprintf(&b, "%s: ", e.Param)
	}
	if e.Tool != nil {
		fmt.Fprintf(&b, "%s: -E- %s", e.Cmd, e.Tool.Message)
		return b.String()
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *SetError) Unwrap() error {
	if e.Tool != nil {
		return e.Tool
	}
	return e.Err
}

// Make implements plan.TypedProvider: every changed parameter of the adapter
// in one set (one flash write), then the Debian reboot marker.
//
// Equivalent to: mlxconfig -d 0000:81:00.0 -y set LINK_TYPE_P1=ETH SRIOV_EN=True
// and: echo '*** System restart required ***' > /run/reboot-required; echo rdmaform >> /run/reboot-required.pkgs
func (p *Provider) Make(ctx context.Context, h *host.Host, c *plan.Change, pl *payload) error {
	if pl.burn != nil {
		return makeBurn(ctx, h, c, pl)
	}
	if len(pl.sets) == 0 {
		return nil
	}
	// Gentle: an interrupt never tears a flash write (SIGTERM after the
	// grace period, never SIGKILL; Ctrl-C does not reach it).
	cmd := host.Cmd{Args: append([]string{pl.tool, "-d", pl.dev, "-y", "set"}, pl.sets...), Gentle: true}
	res, err := h.Runner.Run(ctx, cmd)
	if err != nil {
		se := &SetError{Address: c.Address, Cmd: cmd, Err: err}
		var ee *host.ExitError
		if errors.As(err, &ee) {
			if te := mlxfmt.ParseError(ee.Stdout); te != nil {
				se.Tool = te
				se.Param = paramOf(pl, te)
				se.Source = pl.source[se.Param]
			}
		}
		return se
	}
	return recordAndMark(h, res.Stdout, pl)
}

// recordAndMark records what a set staged in the staged ledger
// (recordStaged) and keeps the reboot marker true to it: rdmaform is
// listed when a value waits for a reboot, and taken off when the set only
// staged values back to what runs (Revert's) and the ledger holds nothing
// else.
func recordAndMark(h *host.Host, out []byte, pls ...*payload) error {
	waits, left, err := recordStaged(h, out, pls...)
	switch {
	case err != nil:
		return err
	case waits:
		return MarkRebootRequired(h)
	case left == 0:
		return ClearRebootMarker(h)
	}
	return nil
}

// ParallelKey implements plan.Parallel: sets on different adapters run at
// once, one tool process each; the functions of one adapter (0000:3b:00.0
// and .1 share its firmware configuration) go to ApplyBatch together.
func (p *Provider) ParallelKey(c *plan.Change) string {
	pl, err := plan.PayloadOf[*payload](c)
	if err != nil {
		return ""
	}
	key := pl.pci
	if i := strings.LastIndexByte(key, '.'); i > 0 {
		key = key[:i]
	}
	return key
}

// ApplyBatch implements plan.Batcher for the changes of one adapter (its
// PCI functions in the spec): one set through the first change's function
// carries the others' parameters too when all of them are card-wide (see
// CardWide) and none is set twice, so an adapter costs one flash write and
// one tool run. A change that cannot join is set on its own afterwards. If
// the joint set fails, each of its changes is set on its own, one after
// another, so that each gets its own outcome and the tool's own message.
//
// Equivalent to: mlxconfig -d 0000:81:00.0 -y set LINK_TYPE_P1=ETH SRIOV_EN=True LINK_TYPE_P2=ETH
// (LINK_TYPE_P2 written in the spec under 0000:81:00.1)
func (p *Provider) ApplyBatch(ctx context.Context, h *host.Host, cs []*plan.Change) []error {
	errs := make([]error, len(cs))
	joint, alone, pls := jointSets(cs)
	if len(joint) > 1 {
		first := pls[joint[0]]
		args := []string{first.tool, "-d", first.dev, "-y", "set"}
		for _, i := range joint {
			args = append(args, pls[i].sets...)
		}
		res, err := h.Runner.Run(ctx, host.Cmd{Args: args, Gentle: true})
		switch {
		case err == nil:
			var staged []*payload
			for _, i := range joint {
				staged = append(staged, pls[i])
			}
			err = recordAndMark(h, res.Stdout, staged...)
			for _, i := range joint {
				errs[i] = err
			}
		case ctx.Err() != nil:
			for _, i := range joint {
				errs[i] = &SetError{Address: cs[i].Address, Cmd: host.Cmd{Args: args}, Err: err}
			}
		default:
			alone = append(joint, alone...)
		}
	} else {
		alone = append(joint, alone...)
	}
	sort.Ints(alone)
	for _, i := range alone {
		if pls[i] == nil {
			_, errs[i] = plan.PayloadOf[*payload](cs[i])
			continue
		}
		errs[i] = p.Make(ctx, h, cs[i], pls[i])
	}
	return errs
}

// jointSets splits one adapter's changes into those one set can carry
// (the first change with sets, and every later one with sets of the same
// tool whose parameters are all card-wide and not set by another of the
// joint) and those to set on their own; pls are the changes' payloads.
func jointSets(cs []*plan.Change) (joint, alone []int, pls []*payload) {
	var first *payload
	names := map[string]bool{}
	pls = make([]*payload, len(cs))
	for i, c := range cs {
		pl, err := plan.PayloadOf[*payload](c)
		pls[i] = pl
		if err != nil || len(pl.sets) == 0 {
			alone = append(alone, i)
			continue
		}
		if first == nil {
			first = pl
			joint = append(joint, i)
			for _, s := range pl.sets {
				names[setName(s)] = true
			}
			continue
		}
		fits := pl.tool == first.tool
		for _, s := range pl.sets {
			n := setName(s)
			fits = fits && CardWide(n) && !names[n]
		}
		if !fits {
			alone = append(alone, i)
			continue
		}
		for _, s := range pl.sets {
			names[setName(s)] = true
		}
		joint = append(joint, i)
	}
	return joint, alone, pls
}

func setName(s string) string {
	name, _, _ := strings.Cut(s, "=")
	return name
}

// paramOf finds which of a set's parameters a tool error is about.
func paramOf(pl *payload, te *mlxfmt.ToolError) string {
	for _, s := range pl.sets {
		name, val, _ := strings.Cut(s, "=")
		switch {
		case te.Param != "" && strings.EqualFold(te.Param, name):
			return name
		case te.Kind == mlxfmt.ErrUnknownValue && te.Value == val:
			return name
		}
	}
	if len(pl.sets) == 1 {
		name, _, _ := strings.Cut(pl.sets[0], "=")
		return name
	}
	return ""
}
