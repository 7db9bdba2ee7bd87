package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	sdbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"
)

// Systemd is what rdmaform asks of the service manager: the
// org.freedesktop.systemd1.Manager D-Bus interface, reduced to one unit at
// a time. A Host without a running systemd has a nil Systemd.
type Systemd interface {
	// Unit reads a unit's load, active and unit-file states.
	// Equivalent to: systemctl show -p LoadState,ActiveState,UnitFileState UNIT
	Unit(ctx context.Context, name string) (UnitState, error)
	// Enable enables a unit's unit file persistently, then reloads.
	// Equivalent to: systemctl enable UNIT && systemctl daemon-reload
	Enable(ctx context.Context, name string) error
	// Disable disables a unit's unit file, then reloads.
	// Equivalent to: systemctl disable UNIT && systemctl daemon-reload
	Disable(ctx context.Context, name string) error
	// Start starts a unit and waits for the job's result.
	// Equivalent to: systemctl start UNIT
	Start(ctx context.Context, name string) error
	// Stop stops a unit and waits for the job's result.
	// Equivalent to: systemctl stop UNIT
	Stop(ctx context.Context, name string) error
	// Reload makes the manager re-read every unit file.
	// Equivalent to: systemctl daemon-reload
	Reload(ctx context.Context) error
}

// UnitState is a unit's state as the manager reports it; the strings are
// systemd's own (see systemctl --state=help).
type UnitState struct {
	// LoadState: loaded, not-found, bad-setting, error, masked.
	LoadState string
	// ActiveState: active, reloading, inactive, failed, activating, deactivating.
	ActiveState string
	// UnitFileState: enabled, enabled-runtime, linked, linked-runtime, alias,
	// masked, masked-runtime, static, disabled, indirect, generated,
	// transient, bad; "" when the unit has no unit file.
	UnitFileState string
}

// Found reports whether the unit exists (a unit file was loaded).
func (u UnitState) Found() bool { return u.LoadState != "" && u.LoadState != "not-found" }

// Active reports whether the unit runs (or, for RemainAfterExit units,
// has run): active or reloading.
func (u UnitState) Active() bool { return u.ActiveState == "active" || u.ActiveState == "reloading" }

// Enabled reports whether the unit is enabled persistently.
func (u UnitState) Enabled() bool { return u.UnitFileState == "enabled" }

// Toggleable reports whether enable/disable can change the unit: it has
// an [Install] section and is not masked, static, generated or transient.
func (u UnitState) Toggleable() bool {
	switch u.UnitFileState {
	case "enabled", "enabled-runtime", "disabled", "linked", "linked-runtime":
		return true
	}
	return false
}

// ErrNoInstallInfo is returned by Enable for a unit file without an
// [Install] section: there is nothing to enable.
var ErrNoInstallInfo = errors.New("the unit file has no [Install] section (static); it cannot be enabled")

// JobError is a start or stop job that did not end "done".
type JobError struct {
	Unit string
	Op   string // start, stop
	// Result is systemd's job result: canceled, timeout, failed,
	// dependency, skipped; "" when rdmaform stopped waiting.
	Result string
	Err    error // the wait's own error (deadline), if any
}

func (e *JobError) Error() string {
	if e.Result == "" {
		return fmt.Sprintf("%s %s: no job result: %v", e.Op, e.Unit, e.Err)
	}
	return fmt.Sprintf("%s %s: job ended %q (see journalctl -u %s)", e.Op, e.Unit, e.Result, e.Unit)
}

func (e *JobError) Unwrap() error { return e.Err }

// DefaultJobTimeout bounds the wait for one start or stop job: longer than
// systemd's own default start timeout (90 s), so systemd's verdict arrives
// first for well-behaved units.
const DefaultJobTimeout = 3 * time.Minute

// SystemdBus is a Systemd over D-Bus. It connects on first use and keeps
// the connection for the life of the process.
type SystemdBus struct {
	// Address is "" for the system bus (through dbus-daemon, as systemctl
	// does). Otherwise it is the address of a manager's private socket,
	// spoken to directly with no bus daemon, e.g.
	// "unix:path=/run/systemd/private" or a test manager's socket.
	Address string
	// JobTimeout bounds each start/stop job wait; 0 is DefaultJobTimeout.
	JobTimeout time.Duration

	mu   sync.Mutex
	conn *sdbus.Conn
}

var _ Systemd = (*SystemdBus)(nil)

// liveSystemd returns the live host's service manager, or nil when systemd
// is not the init system (no /run/systemd/system, as sd_booted(3) checks).
func liveSystemd() Systemd {
	if !SystemdBooted() {
		return nil
	}
	return &SystemdBus{}
}

func (b *SystemdBus) connect(ctx context.Context) (*sdbus.Conn, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conn != nil && b.conn.Connected() {
		return b.conn, nil
	}
	var c *sdbus.Conn
	var err error
	if b.Address == "" {
		c, err = sdbus.NewSystemConnectionContext(ctx)
	} else {
		addr := b.Address
		c, err = sdbus.NewConnection(func() (*dbus.Conn, error) {
			conn, err := dbus.Dial(addr, dbus.WithContext(ctx))
			if err != nil {
				return nil, err
			}
			// A manager's private socket is peer to peer: EXTERNAL
			// authentication by uid, and no Hello (there is no bus).
			if err := conn.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
				conn.Close()
				return nil, err
			}
			return conn, nil
		})
	}
	if err != nil {
		where := "the system bus"
		if b.Address != "" {
			where = b.Address
		}
		return nil, fmt.Errorf("connecting to systemd on %s: %w", where, err)
	}
	b.conn = c
	return c, nil
}

// Close closes the connection, if one was made.
func (b *SystemdBus) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conn != nil {
		b.conn.Close()
		b.conn = nil
	}
}

// Unit implements Systemd.
func (b *SystemdBus) Unit(ctx context.Context, name string) (UnitState, error) {
	c, err := b.connect(ctx)
	if err != nil {
		return UnitState{}, err
	}
	props, err := c.GetUnitPropertiesContext(ctx, name)
	if err != nil {
		return UnitState{}, fmt.Errorf("reading unit %s: %w", name, err)
	}
	str := func(k string) string { s, _ := props[k].(string); return s }
	return UnitState{LoadState: str("LoadState"), ActiveState: str("ActiveState"), UnitFileState: str("UnitFileState")}, nil
}

// Enable implements Systemd.
func (b *SystemdBus) Enable(ctx context.Context, name string) error {
	c, err := b.connect(ctx)
	if err != nil {
		return err
	}
	install, _, err := c.EnableUnitFilesContext(ctx, []string{name}, false, false)
	if err != nil {
		return fmt.Errorf("enabling %s: %w", name, err)
	}
	if !install {
		return fmt.Errorf("enabling %s: %w", name, ErrNoInstallInfo)
	}
	if err := c.ReloadContext(ctx); err != nil {
		return fmt.Errorf("daemon-reload after enabling %s: %w", name, err)
	}
	return nil
}

// Disable implements Systemd.
func (b *SystemdBus) Disable(ctx context.Context, name string) error {
	c, err := b.connect(ctx)
	if err != nil {
		return err
	}
	if _, err := c.DisableUnitFilesContext(ctx, []string{name}, false); err != nil {
		return fmt.Errorf("disabling %s: %w", name, err)
	}
	if err := c.ReloadContext(ctx); err != nil {
		return fmt.Errorf("daemon-reload after disabling %s: %w", name, err)
	}
	return nil
}

// Start implements Systemd. The job mode is "replace", as systemctl's.
func (b *SystemdBus) Start(ctx context.Context, name string) error {
	return b.job(ctx, "start", name)
}

// Stop implements Systemd.
func (b *SystemdBus) Stop(ctx context.Context, name string) error {
	return b.job(ctx, "stop", name)
}

func (b *SystemdBus) job(ctx context.Context, op, name string) error {
	c, err := b.connect(ctx)
	if err != nil {
		return err
	}
	timeout := b.JobTimeout
	if timeout <= 0 {
		timeout = DefaultJobTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Buffered: when the wait gives up, go-systemd's dispatcher can still
	// deliver the late result without blocking.
	done := make(chan string, 1)
	switch op {
	case "start":
		_, err = c.StartUnitContext(ctx, name, "replace", done)
	case "stop":
		_, err = c.StopUnitContext(ctx, name, "replace", done)
	case "restart":
		_, err = c.RestartUnitContext(ctx, name, "replace", done)
	default:
		return fmt.Errorf("unknown job %q", op)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, name, err)
	}
	select {
	case res := <-done:
		if res != "done" {
			return &JobError{Unit: name, Op: op, Result: res}
		}
		return nil
	case <-ctx.Done():
		return &JobError{Unit: name, Op: op, Err: ctx.Err()}
	}
}

// UnitSignaller is what a service manager offers beyond Systemd for a
// daemon that re-reads its configuration on a signal (opensm on SIGHUP).
type UnitSignaller interface {
	// Signal sends sig to a unit's main process.
	// Equivalent to: systemctl kill --kill-whom=main --signal=SIG UNIT
	Signal(ctx context.Context, name string, sig syscall.Signal) error
	// Restart restarts a unit and waits for the job's result.
	// Equivalent to: systemctl restart UNIT
	Restart(ctx context.Context, name string) error
	// MainPID is the unit's main process, 0 when it runs none.
	// Equivalent to: systemctl show -p MainPID UNIT
	MainPID(ctx context.Context, name string) (int, error)
}

var _ UnitSignaller = (*SystemdBus)(nil)

// Rebooter is a service manager that can reboot the machine.
type Rebooter interface {
	// Reboot queues the start of reboot.target, replacing every other job
	// irreversibly, as systemctl reboot does; it returns once the job is
	// queued (the manager then stops every service and reboots).
	// Equivalent to: systemctl reboot
	Reboot(ctx context.Context) error
}

var _ Rebooter = (*SystemdBus)(nil)

// Reboot implements Rebooter, through the manager's StartUnit.
func (b *SystemdBus) Reboot(ctx context.Context) error {
	c, err := b.connect(ctx)
	if err != nil {
		return err
	}
	if _, err := c.StartUnitContext(ctx, "reboot.target", "replace-irreversibly", nil); err != nil {
		return fmt.Errorf("start reboot.target: %w", err)
	}
	return nil
}

// Signal implements UnitSignaller, through the manager's KillUnit.
func (b *SystemdBus) Signal(ctx context.Context, name string, sig syscall.Signal) error {
	c, err := b.connect(ctx)
	if err != nil {
		return err
	}
	if err := c.KillUnitWithTarget(ctx, name, sdbus.Main, int32(sig)); err != nil {
		return fmt.Errorf("sending %s to %s: %w", unix.SignalName(sig), name, err)
	}
	return nil
}

// Restart implements UnitSignaller.
func (b *SystemdBus) Restart(ctx context.Context, name string) error {
	return b.job(ctx, "restart", name)
}

// MainPID implements UnitSignaller.
func (b *SystemdBus) MainPID(ctx context.Context, name string) (int, error) {
	c, err := b.connect(ctx)
	if err != nil {
		return 0, err
	}
	p, err := c.GetServicePropertyContext(ctx, name, "MainPID")
	if err != nil {
		return 0, fmt.Errorf("reading the main PID of %s: %w", name, err)
	}
	pid, _ := p.Value.Value().(uint32)
	return int(pid), nil
}

// Reload implements Systemd.
func (b *SystemdBus) Reload(ctx context.Context) error {
	c, err := b.connect(ctx)
	if err != nil {
		return err
	}
	if err := c.ReloadContext(ctx); err != nil {
		return fmt.Errorf("daemon-reload: %w", err)
	}
	return nil
}
