package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	sdbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
)

// SystemdBooted reports whether systemd is this machine's init system
// (/run/systemd/system is a directory, as sd_booted(3) checks).
func SystemdBooted() bool {
	fi, err := os.Stat("/run/systemd/system")
	return err == nil && fi.IsDir()
}

// TransientTimer is a one-shot timer and the service it starts, both
// transient (they exist only in the manager's memory, and go once the
// service has run).
type TransientTimer struct {
	// Name is the units' name without suffix: NAME.timer starts
	// NAME.service.
	Name        string
	Description string
	// After is how long from now the timer elapses (whole seconds are
	// not required; the manager is asked for 1 s accuracy).
	After time.Duration
	// Argv is the service's command (argv[0] an absolute path).
	Argv []string
	// Env is the service's environment (KEY=VALUE); the manager's own
	// environment otherwise.
	Env []string
	// Log, when set, is a file the service's stdout and stderr are
	// appended to (as seen by the manager).
	Log string
}

// ArmTimer creates the timer and its service and starts the timer. A
// leftover of the same name (an earlier service that failed, say) is
// stopped and reset first.
//
// Equivalent to: systemd-run --unit=NAME --on-active=AFTER
// --timer-property=AccuracySec=1s --setenv=... -p StandardOutput=append:LOG
// -p StandardError=append:LOG ARGV...
func (b *SystemdBus) ArmTimer(ctx context.Context, t TransientTimer) error {
	if len(t.Argv) == 0 || !strings.HasPrefix(t.Argv[0], "/") {
		return fmt.Errorf("transient timer %s: the command must start with an absolute path: %q", t.Name, t.Argv)
	}
	c, err := b.connect(ctx)
	if err != nil {
		return err
	}
	b.clear(ctx, c, t.Name)
	usec := uint64(t.After / time.Microsecond)
	if usec == 0 {
		usec = 1
	}
	// The base is named as in unit files (systemd 252 refuses
	// "OnActiveUSec"); the value is in microseconds.
	type base struct {
		Base string
		USec uint64
	}
	timer := []sdbus.Property{
		sdbus.PropDescription(t.Description),
		{Name: "TimersMonotonic", Value: dbus.MakeVariant([]base{{"OnActiveSec", usec}})},
		{Name: "AccuracyUSec", Value: dbus.MakeVariant(uint64(time.Second / time.Microsecond))},
		{Name: "RemainAfterElapse", Value: dbus.MakeVariant(false)},
	}
	service := []sdbus.Property{
		sdbus.PropDescription(t.Description),
		sdbus.PropExecStart(t.Argv, true),
		{Name: "CollectMode", Value: dbus.MakeVariant("inactive-or-failed")},
	}
	if len(t.Env) > 0 {
		service = append(service, sdbus.Property{Name: "Environment", Value: dbus.MakeVariant(t.Env)})
	}
	if t.Log != "" {
		service = append(service,
			sdbus.Property{Name: "StandardOutputFileToAppend", Value: dbus.MakeVariant(t.Log)},
			sdbus.Property{Name: "StandardErrorFileToAppend", Value: dbus.MakeVariant(t.Log)})
	}
	done := make(chan string, 1)
	_, err = c.StartTransientUnitAux(ctx, t.Name+".timer", "fail", timer,
		[]sdbus.PropertyCollection{{Name: t.Name + ".service", Properties: service}}, done)
	if err != nil {
		return fmt.Errorf("creating transient timer %s.timer: %w", t.Name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	select {
	case res := <-done:
		if res != "done" {
			return &JobError{Unit: t.Name + ".timer", Op: "start", Result: res}
		}
		return nil
	case <-ctx.Done():
		return &JobError{Unit: t.Name + ".timer", Op: "start", Err: ctx.Err()}
	}
}

// DisarmTimer stops the timer NAME.timer (and its service, should it have
// started); units that are not there are not an error.
//
// Equivalent to: systemctl stop NAME.timer NAME.service; systemctl reset-failed NAME.timer NAME.service
func (b *SystemdBus) DisarmTimer(ctx context.Context, name string) error {
	c, err := b.connect(ctx)
	if err != nil {
		return err
	}
	return b.clear(ctx, c, name)
}

// TimerActive reports whether NAME.timer is loaded and waiting.
//
// Equivalent to: systemctl is-active NAME.timer
func (b *SystemdBus) TimerActive(ctx context.Context, name string) (bool, error) {
	st, err := b.Unit(ctx, name+".timer")
	if err != nil {
		return false, err
	}
	return st.ActiveState == "active", nil
}

func (b *SystemdBus) clear(ctx context.Context, c *sdbus.Conn, name string) error {
	var errs []error
	for _, u := range []string{name + ".timer", name + ".service"} {
		done := make(chan string, 1)
		if _, err := c.StopUnitContext(ctx, u, "replace", done); err != nil {
			if !noSuchUnit(err) {
				errs = append(errs, fmt.Errorf("stop %s: %w", u, err))
			}
		} else {
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				errs = append(errs, fmt.Errorf("stop %s: no result within 30s", u))
			}
		}
		if err := c.ResetFailedUnitContext(ctx, u); err != nil && !noSuchUnit(err) {
			errs = append(errs, fmt.Errorf("reset-failed %s: %w", u, err))
		}
	}
	return errors.Join(errs...)
}

func noSuchUnit(err error) bool {
	var de dbus.Error
	if errors.As(err, &de) && de.Name == "org.freedesktop.systemd1.NoSuchUnit" {
		return true
	}
	return strings.Contains(err.Error(), "not loaded")
}
