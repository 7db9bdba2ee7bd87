package host

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// TimeoutEnv caps the timeout of every external command rdmaform runs
// (mlxconfig, nmcli, modprobe, ...), as a Go duration: 2s, 500ms. It is
// for tests of hung tools and for hosts where a stuck tool must fail fast;
// unset, each command keeps its own timeout (DefaultTimeout, or longer
// where a tool needs it, such as nmcli connection up).
const TimeoutEnv = "RDMAFORM_COMMAND_TIMEOUT"

// TimeoutFromEnv reads TimeoutEnv from environ; 0 when it is not set.
func TimeoutFromEnv(environ []string) (time.Duration, error) {
	for _, kv := range environ {
		v, ok := strings.CutPrefix(kv, TimeoutEnv+"=")
		if !ok || v == "" {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("%s=%q: want a positive duration such as 2s", TimeoutEnv, v)
		}
		return d, nil
	}
	return 0, nil
}

// CapTimeout returns a runner that runs every command through r with a
// timeout of at most max; max <= 0 returns r itself.
func CapTimeout(r Runner, max time.Duration) Runner {
	if max <= 0 {
		return r
	}
	return &cappedRunner{r: r, max: max}
}

type cappedRunner struct {
	r   Runner
	max time.Duration
}

// Run implements Runner.
func (c *cappedRunner) Run(ctx context.Context, cmd Cmd) (Result, error) {
	if cmd.EffectiveTimeout() > c.max {
		cmd.Timeout = c.max
	}
	return c.r.Run(ctx, cmd)
}

// LookPath implements Looker when the wrapped runner does.
func (c *cappedRunner) LookPath(name string) (string, error) {
	if l, ok := c.r.(Looker); ok {
		return l.LookPath(name)
	}
	return "", fmt.Errorf("%s: cannot look up without running", name)
}

// CapNM returns a NetworkManager door whose every call ends after at most
// max (TimeoutEnv); max <= 0 returns n itself.
func CapNM(n NetworkManager, max time.Duration) NetworkManager {
	if max <= 0 || n == nil {
		return n
	}
	return &cappedNM{n: n, max: max}
}

type cappedNM struct {
	n   NetworkManager
	max time.Duration
}

// call runs f with the capped deadline; a call that ran out of it says
// after how long.
func (c *cappedNM) call(ctx context.Context, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, c.max)
	defer cancel()
	err := f(ctx)
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%w after %s", err, c.max)
	}
	return err
}

func (c *cappedNM) Connections(ctx context.Context) (out []NMConnection, err error) {
	err = c.call(ctx, func(ctx context.Context) error { out, err = c.n.Connections(ctx); return err })
	return out, err
}

func (c *cappedNM) AddConnection(ctx context.Context, s NMSettings) (id string, err error) {
	err = c.call(ctx, func(ctx context.Context) error { id, err = c.n.AddConnection(ctx, s); return err })
	return id, err
}

func (c *cappedNM) UpdateConnection(ctx context.Context, id string, edit func(NMSettings)) error {
	return c.call(ctx, func(ctx context.Context) error { return c.n.UpdateConnection(ctx, id, edit) })
}

func (c *cappedNM) DeleteConnection(ctx context.Context, id string) error {
	return c.call(ctx, func(ctx context.Context) error { return c.n.DeleteConnection(ctx, id) })
}

func (c *cappedNM) ActivateConnection(ctx context.Context, id string) error {
	return c.call(ctx, func(ctx context.Context) error { return c.n.ActivateConnection(ctx, id) })
}

func (c *cappedNM) DeactivateConnection(ctx context.Context, id string) error {
	return c.call(ctx, func(ctx context.Context) error { return c.n.DeactivateConnection(ctx, id) })
}
