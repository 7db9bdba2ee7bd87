package session_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/session"
	"github.com/rdmaform/rdmaform/sim/simtest"
)

// TestActivateRefusesUnknownWay: with LINK_TYPE_P1=ETH staged, Activate
// refuses every way but fw-reset, reboot and "" (none, the CRD's
// default, among them): exit 1 naming the way, nothing reset (the value
// is still pending). By fw-reset then activates it and the plan is empty.
func TestActivateRefusesUnknownWay(t *testing.T) {
	ctx := context.Background()
	h, _, err := session.Open(session.Target{Sim: simtest.Dir(t, "cx6-vpi-ib", nil)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sp := spec(t, "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params: {LINK_TYPE_P1: ETH}\n")
	if res, err := session.Apply(ctx, h, session.ApplyOptions{Spec: sp, LockTimeout: time.Second}); err != nil || res.ExitCode() != plan.ExitReboot {
		t.Fatalf("apply: %v %+v", err, res)
	}
	pending := func() int {
		t.Helper()
		p, err := session.Plan(ctx, h, sp, nil)
		if err != nil {
			t.Fatal(err)
		}
		return len(p.Plan.Pending)
	}
	activate := func(by string) (*session.ActivateResult, error) {
		return session.Activate(ctx, h, session.ActivateOptions{Spec: sp, By: by, Yes: true, Wait: 10 * time.Second, LockTimeout: time.Second,
			Ask: func() error { return errors.New("asked") }})
	}
	for _, by := range []string{"none", plan.ByPowerCycle, "fw_reset", "Reboot", " fw-reset"} {
		res, err := activate(by)
		var ee *session.ExitError
		if !errors.As(err, &ee) || ee.Code != plan.ExitError || !strings.Contains(err.Error(), `activate by "`+by+`"`) {
			t.Errorf("Activate by %q: %+v, %v; want exit 1 naming the way", by, res, err)
		}
		if n := pending(); n != 1 {
			t.Fatalf("Activate by %q changed the host: %d pending, want 1", by, n)
		}
	}
	res, err := activate(plan.ByFWReset)
	if err != nil || res.Code != plan.ExitOK {
		t.Fatalf("Activate by fw-reset: %+v, %v", res, err)
	}
	if n := pending(); n != 0 {
		t.Errorf("after the firmware reset: %d pending, want 0", n)
	}
}
