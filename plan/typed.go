package plan

import (
	"context"
	"fmt"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/schema"
)

// Observation is what a provider's Discover returned, as the provider's
// own type: the one place an observation is asserted, so a provider's Diff
// starts from its type. It is the zero value when Discover had nothing.
func Observation[O any](observed any) O {
	o, _ := observed.(O)
	return o
}

// PayloadOf is a change's payload as the provider's own type: the one
// place a payload is asserted. A change with another provider's payload,
// or none, is an error naming the change.
func PayloadOf[P any](c *Change) (P, error) {
	p, ok := c.Payload.(P)
	if !ok {
		return p, fmt.Errorf("%s: its payload is %T, not the %T provider %q made", c.Address, c.Payload, p, c.Provider)
	}
	return p, nil
}

// TypedProvider is the shape every provider has: its observation O and
// payload P are its own types. Adapt makes a Provider of it, and the
// adapter does the assertions (Observation, PayloadOf) once for all.
type TypedProvider[O, P any] interface {
	Name() string
	// Observe reads what the provider manages for this spec (its zero O
	// when the spec has nothing for it). It must leave no trace.
	Observe(ctx context.Context, h *host.Host, req *Request) (O, error)
	// Plan compares the spec with the observation (pure).
	Plan(req *Request, obs O, facts *Facts) Proposal
	// Make carries out one change this provider planned.
	Make(ctx context.Context, h *host.Host, c *Change, p P) error
}

// Adapt is the Provider of a typed provider. Its optional interfaces
// (Reverter, Capturer, Parallel, Batcher) are the typed provider's own:
// ask for them with Optional.
func Adapt[O, P any](t TypedProvider[O, P]) Provider { return &adapter[O, P]{t: t} }

type adapter[O, P any] struct{ t TypedProvider[O, P] }

func (a *adapter[O, P]) Name() string { return a.t.Name() }

func (a *adapter[O, P]) Discover(ctx context.Context, h *host.Host, req *Request) (any, error) {
	return a.t.Observe(ctx, h, req)
}

func (a *adapter[O, P]) Diff(req *Request, observed any, facts *Facts) Proposal {
	return a.t.Plan(req, Observation[O](observed), facts)
}

func (a *adapter[O, P]) Apply(ctx context.Context, h *host.Host, c *Change) error {
	p, err := PayloadOf[P](c)
	if err != nil {
		return err
	}
	return a.t.Make(ctx, h, c, p)
}

func (a *adapter[O, P]) typed() any { return a.t }

// TypedCapturer is a typed provider that describes what the host has in
// spec form, for `rdmaform show`: CaptureFrom adds the provider's part to
// spec, whose Devices already hold one entry per inventory device (in
// inventory order, selected by PCI address, or by name for software
// devices) with its ports. It is a pure function of what Observe read
// with the full scope (Request.Full), so show reads the host once, in the
// same code as plan. What it writes must plan nothing when applied to the
// same host.
type TypedCapturer[O any] interface {
	CaptureFrom(obs O, req *Request, spec *schema.Spec, o CaptureOptions) error
}

// capture is a TypedCapturer's part of show: a full-scope Observe, then
// CaptureFrom with the same request. A provider without one adds nothing.
func (a *adapter[O, P]) capture(ctx context.Context, h *host.Host, req *Request, spec *schema.Spec, o CaptureOptions) error {
	c, ok := a.t.(TypedCapturer[O])
	if !ok {
		return nil
	}
	full := *req
	full.Full, full.Capture = true, o
	obs, err := a.t.Observe(ctx, h, &full)
	if err != nil {
		return err
	}
	return c.CaptureFrom(obs, &full, spec, o)
}

// Optional returns a provider's optional interface T (Reverter, Parallel,
// Batcher): the provider's own, or the typed provider's behind an adapter.
func Optional[T any](pr Provider) (T, bool) {
	if u, ok := pr.(interface{ typed() any }); ok {
		t, ok := u.typed().(T)
		return t, ok
	}
	t, ok := pr.(T)
	return t, ok
}
