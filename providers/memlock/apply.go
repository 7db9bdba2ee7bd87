package memlock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"regexp"
	"strconv"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// Make implements plan.TypedProvider: it writes (or removes) the file;
// for a unit it then reloads the manager, reads the unit's limits back
// and restarts the unit if it runs.
//
// Equivalent to: editing the file; systemctl daemon-reload;
// systemctl show -p LimitMEMLOCKSoft,LimitMEMLOCK UNIT; systemctl restart UNIT
func (p *Provider) Make(ctx context.Context, h *host.Host, _ *plan.Change, pl *payload) error {
	if pl.content == nil {
		if err := h.FS.Remove(pl.file); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", pl.file, err)
		}
		if pl.unit != "" {
			// The drop-in directory, when rdmaform's file was all it held.
			_ = h.FS.Remove(path.Dir(pl.file))
		}
	} else if err := h.FS.WriteFile(pl.file, pl.content, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", pl.file, err)
	}
	if pl.unit == "" || pl.offline {
		return nil
	}
	if h.Systemd == nil {
		return fmt.Errorf("%s: no systemd runs on this host", pl.unit)
	}
	if err := h.Systemd.Reload(ctx); err != nil {
		return err
	}
	if pl.want != 0 {
		lim, ok := h.Systemd.(host.UnitLimiter)
		if !ok {
			return errors.New("this service manager cannot report units' limits")
		}
		soft, hard, err := lim.Memlock(ctx, pl.unit)
		if err != nil {
			return err
		}
		if soft != pl.want || hard != pl.want {
			return fmt.Errorf("%s: LimitMEMLOCK is %s after daemon-reload, not %s: a later drop-in or the unit file overrides %s (systemctl cat %s)",
				pl.unit, pair(soft, hard), Human(pl.want), pl.file, pl.unit)
		}
	}
	if !pl.restart {
		return nil
	}
	r, ok := h.Systemd.(host.UnitSignaller)
	if !ok {
		return fmt.Errorf("%s: this service manager cannot restart units", pl.unit)
	}
	if err := r.Restart(ctx, pl.unit); err != nil {
		return err
	}
	if pl.want == 0 {
		return nil
	}
	return checkProcess(ctx, h, r, pl.unit, pl.want)
}

// checkProcess reads the limit the unit's main process runs with. A
// manager sets it with setrlimit_closest: a value it may not raise to (a
// manager without CAP_SYS_RESOURCE, under its own hard limit) is clamped
// without an error, while LimitMEMLOCK still reads the configured value.
// A process that is gone, or a /proc this host's files do not show (an
// offline tree), is not checked.
//
// Equivalent to: grep 'Max locked memory' /proc/$(systemctl show -p MainPID --value UNIT)/limits
//
// A Type=simple unit's start job ends when the manager has forked its
// process (systemd.service(5)), before that child sets the limits and
// execs: a first reading can be the manager's own, so a mismatch is read
// again for up to processSettle.
func checkProcess(ctx context.Context, h *host.Host, r host.UnitSignaller, unit string, want uint64) error {
	deadline := time.Now().Add(processSettle)
	for {
		got, err := mainProcess(ctx, h, r, unit)
		if err != nil || got == nil {
			return err
		}
		if got[0] == want && got[1] == want {
			return nil
		}
		if time.Until(deadline) > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
				continue
			}
		}
		return fmt.Errorf("%s: its main process runs with Max locked memory %s (/proc/PID/limits), not %s: the service manager could not raise it (it lacks CAP_SYS_RESOURCE, or its own hard limit is lower)",
			unit, pair(got[0], got[1]), Human(want))
	}
}

// processSettle bounds the wait for a restarted unit's process to exec.
const processSettle = 2 * time.Second

// mainProcess is the soft and hard locked-memory limits of a unit's main
// process; nil when it has none, or when the host's files show no /proc
// (an offline tree, the simulator).
func mainProcess(ctx context.Context, h *host.Host, r host.UnitSignaller, unit string) (*[2]uint64, error) {
	pid, err := r.MainPID(ctx, unit)
	if err != nil || pid <= 0 {
		return nil, err
	}
	f := "/proc/" + strconv.Itoa(pid) + "/limits"
	b, err := h.FS.ReadFile(f)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", f, err)
	}
	soft, hard, ok := ProcessMemlock(b)
	if !ok {
		return nil, fmt.Errorf("%s has no Max locked memory line", f)
	}
	return &[2]uint64{soft, hard}, nil
}

var limitsRE = regexp.MustCompile(`(?m)^Max locked memory\s+(\S+)\s+(\S+)`)

// ProcessMemlock reads the soft and hard locked-memory limits of a
// /proc/PID/limits (fs/proc/base.c: "Max locked memory", then soft and
// hard in bytes or "unlimited").
func ProcessMemlock(b []byte) (soft, hard uint64, ok bool) {
	m := limitsRE.FindSubmatch(b)
	if m == nil {
		return 0, 0, false
	}
	v := func(s []byte) (uint64, bool) {
		if string(s) == "unlimited" {
			return math.MaxUint64, true
		}
		n, err := strconv.ParseUint(string(s), 10, 64)
		return n, err == nil
	}
	soft, ok1 := v(m[1])
	hard, ok2 := v(m[2])
	return soft, hard, ok1 && ok2
}
