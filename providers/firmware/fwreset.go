package firmware

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/firmware/mlxfmt"
)

// The firmware reset tool of each configuration tool: one Python source,
// shipped as mstfwreset by mstflint and as mlxfwreset by MFT.
const (
	MLXFWReset = "mlxfwreset"
	MSTFWReset = "mstfwreset"
)

// ResetToolOf is the reset tool that comes with a configuration or
// burning tool: mlxfwreset with MFT's mlxconfig and flint, mstfwreset
// with mstflint's mstconfig and mstflint.
func ResetToolOf(tool string) string {
	if tool == MLXConfig || tool == Flint {
		return MLXFWReset
	}
	return MSTFWReset
}

// ResetObs is what the reset tool said of a card: the levels of its MFRL
// register, or why it could not say.
type ResetObs struct {
	Tool  string
	Dev   string
	Query mlxfmt.ResetQuery
	Err   error
}

// resetQueries runs the reset tool's query once per card (the functions
// of a card share their firmware and its reset). It is safe for
// concurrent use.
type resetQueries struct {
	mu    sync.Mutex
	cards map[string]*resetOnce
}

type resetOnce struct {
	once sync.Once
	obs  *ResetObs
}

// of returns the query of the card of pci, running it at most once.
func (r *resetQueries) of(ctx context.Context, h *host.Host, tools *ToolPicker, tool, pci string) *ResetObs {
	r.mu.Lock()
	if r.cards == nil {
		r.cards = map[string]*resetOnce{}
	}
	o := r.cards[slotOf(pci)]
	if o == nil {
		o = &resetOnce{}
		r.cards[slotOf(pci)] = o
	}
	r.mu.Unlock()
	o.once.Do(func() { o.obs = QueryReset(ctx, h, tools, tool, pci) })
	return o.obs
}

// QueryReset asks the reset tool which levels the adapter function at pci
// supports.
//
// Equivalent to: mstfwreset -d 0000:3b:00.0 query
func QueryReset(ctx context.Context, h *host.Host, tools *ToolPicker, tool, pci string) *ResetObs {
	o := &ResetObs{Tool: tool, Dev: pci}
	if err := tools.installed(ctx, h, tool); err != nil {
		o.Err = err
		return o
	}
	cmd := host.Cmd{Args: []string{tool, "-d", pci, "query"}}
	res, err := h.Runner.Run(ctx, cmd)
	out := res.Stdout
	var ee *host.ExitError
	if errors.As(err, &ee) {
		if ee.Code < 0 {
			o.Err = err
			return o
		}
		out = ee.Stdout
	}
	o.Query, o.Err = mlxfmt.ParseResetQuery(out)
	if o.Err == nil && err != nil {
		o.Err = err
	}
	if o.Err != nil {
		o.Err = fmt.Errorf("%s: %w", cmd, o.Err)
	}
	return o
}

// activationOf says how the values staged on a card can become current,
// from its reset query: a firmware reset at level 3 when the device and
// driver support it; else a reboot (level 4, or the query failed or the
// tool is missing: a reboot is the fallback that always exists); or a
// power cycle when the device reports no reset level at all, not even a
// warm reboot.
func activationOf(r *ResetObs) *plan.ActivateBy {
	if r == nil {
		return &plan.ActivateBy{By: plan.ByReboot, Why: "the firmware reset tool was not asked"}
	}
	if r.Err != nil {
		var te *mlxfmt.ResetToolError
		switch {
		case errors.As(r.Err, &te) && te.Kind == mlxfmt.ResetErrNoLevel:
			return &plan.ActivateBy{By: plan.ByPowerCycle, Why: fmt.Sprintf("%s -d %s query: -E- %s: neither a firmware reset nor a warm reboot reloads this adapter's firmware; power-cycle the host", r.Tool, r.Dev, te.Message)}
		case errors.Is(r.Err, host.ErrNotFound):
			return &plan.ActivateBy{By: plan.ByReboot, Why: fmt.Sprintf("%s is not installed (%s), so no firmware reset can be asked", r.Tool, resetPkgOf(r.Tool))}
		}
		return &plan.ActivateBy{By: plan.ByReboot, Why: fmt.Sprintf("the firmware reset tool could not tell the reset levels: %v", r.Err)}
	}
	if r.Query.Supports(mlxfmt.ResetLevelPCI) {
		l, _ := r.Query.Level(mlxfmt.ResetLevelPCI)
		return &plan.ActivateBy{By: plan.ByFWReset, Level: mlxfmt.ResetLevelPCI, Tool: r.Tool, Why: fmt.Sprintf("%s -d %s query: level %d (%s) is supported", r.Tool, r.Dev, l.Value, l.Description)}
	}
	if r.Query.Supports(mlxfmt.ResetLevelWarmBoot) {
		return &plan.ActivateBy{By: plan.ByReboot, Why: fmt.Sprintf("%s -d %s query: level %d (driver restart and PCI reset) is not supported; a warm reboot (level %d) reloads the firmware", r.Tool, r.Dev, mlxfmt.ResetLevelPCI, mlxfmt.ResetLevelWarmBoot)}
	}
	return &plan.ActivateBy{By: plan.ByPowerCycle, Why: fmt.Sprintf("%s -d %s query: neither level %d nor a warm reboot (level %d) is supported; power-cycle the host", r.Tool, r.Dev, mlxfmt.ResetLevelPCI, mlxfmt.ResetLevelWarmBoot)}
}

func resetPkgOf(tool string) string {
	if tool == MLXFWReset {
		return "it comes with NVIDIA MFT"
	}
	return "package mstflint"
}

// Activation says how the values staged on the card of pci can become
// current: the reset tool's query of the card (see activationOf). tool
// is the configuration tool that read the card.
//
// Equivalent to: mstfwreset -d 0000:3b:00.0 query
func Activation(ctx context.Context, h *host.Host, tools *ToolPicker, tool, pci string) *plan.ActivateBy {
	return activationOf(QueryReset(ctx, h, tools, ResetToolOf(tool), pci))
}
