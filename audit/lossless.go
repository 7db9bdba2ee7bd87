package audit

import (
	"context"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// healthChecks are the providers' own health checks (plan.HealthChecker:
// the qos provider's lossless path), run after the plan on the host as it
// is. A check that passes with a remark keeps the remark in its message
// and in the report's warnings.
func healthChecks(ctx context.Context, h *host.Host, res *plan.Result, providers []plan.Provider) ([]Result, []string) {
	var out []Result
	var warn []string
	for _, pr := range providers {
		hc, ok := plan.Optional[plan.HealthChecker](pr)
		if !ok {
			continue
		}
		for _, c := range hc.Health(ctx, h, res) {
			r := Result{Resource: c.Address.String(), Check: c.Check, Source: res.Request.Pos(c.Path), Message: c.Message}
			switch {
			case c.Fail:
				r.Status = Fail
			case c.Warning:
				r.Message = "warning: " + c.Message
				warn = append(warn, r.Resource+": "+c.Message)
			}
			out = append(out, r)
		}
	}
	return out, warn
}
