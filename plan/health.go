package plan

import (
	"context"

	"github.com/rdmaform/rdmaform/host"
)

// HealthChecker is a provider whose resources have health checks of
// their own beyond drift (the qos provider's lossless path): audit runs
// them after the plan, on the host as it is, and reports each as a check.
// Ask for it with Optional.
type HealthChecker interface {
	Health(ctx context.Context, h *host.Host, res *Result) []Health
}

// Health is one health check of one resource.
type Health struct {
	Address Address
	// Path is the spec path the check is about.
	Path string
	// Check names the check in reports and waivers.
	Check string
	// Fail: the check failed; Warning: it passed with a remark that
	// cannot be proven either way (the Message).
	Fail, Warning bool
	Message       string
}
