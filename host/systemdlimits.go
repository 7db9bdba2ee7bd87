package host

import (
	"context"
	"fmt"
)

// UnitLimiter is what a service manager offers beyond Systemd to read a
// unit's resource limits as it loaded them (the unit file and its
// drop-ins, at the last daemon-reload).
type UnitLimiter interface {
	// Memlock is the unit's locked-memory limit in bytes, soft and hard
	// (the service properties LimitMEMLOCKSoft and LimitMEMLOCK);
	// math.MaxUint64 is infinity.
	// Equivalent to: systemctl show -p LimitMEMLOCKSoft,LimitMEMLOCK UNIT
	Memlock(ctx context.Context, name string) (soft, hard uint64, err error)
}

var _ UnitLimiter = (*SystemdBus)(nil)

// Memlock implements UnitLimiter through org.freedesktop.systemd1.Service's
// LimitMEMLOCK and LimitMEMLOCKSoft (type t).
func (b *SystemdBus) Memlock(ctx context.Context, name string) (soft, hard uint64, err error) {
	c, err := b.connect(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, p := range []struct {
		prop string
		v    *uint64
	}{{"LimitMEMLOCKSoft", &soft}, {"LimitMEMLOCK", &hard}} {
		got, err := c.GetServicePropertyContext(ctx, name, p.prop)
		if err != nil {
			return 0, 0, fmt.Errorf("reading %s of %s: %w", p.prop, name, err)
		}
		v, ok := got.Value.Value().(uint64)
		if !ok {
			return 0, 0, fmt.Errorf("%s of %s is %s, not a number", p.prop, name, got.Value)
		}
		*p.v = v
	}
	return soft, hard, nil
}
