package subnetmanager

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
)

// ErrNoSignaller: opensm runs, but no service manager can signal it.
var ErrNoSignaller = errors.New("no service manager on this host can signal opensm (systemd's KillUnit)")

// ErrRejected wraps a file opensm did not take: its log says so, or the
// fabric does not show it after the sweep.
var ErrRejected = errors.New("opensm did not take the new file; the previous one is back")

// Make implements plan.TypedProvider: write the file atomically, have
// opensm take it (SIGHUP, or a restart the plan names), wait for the
// sweep and check the fabric; when opensm does not take it, put the
// previous file back and have opensm read that again.
//
// Equivalent to: cp NEW /etc/opensm/partitions.conf;
// systemctl kill --kill-whom=main -s HUP opensm@GUID.service;
// sminfo -D 0; smpquery -D pkeys 0
func (p *Provider) Make(ctx context.Context, h *host.Host, c *plan.Change, pl *payload) error {
	if !pl.signalOnly {
		if err := install(h, pl.file, pl.content); err != nil {
			return fmt.Errorf("%s: writing %s: %w", c.Address, pl.file, err)
		}
	}
	if pl.stop {
		// A revert: opensm did not run before this apply started it.
		if h.Systemd == nil {
			return nil
		}
		if err := h.Systemd.Stop(ctx, pl.unit); err != nil {
			return fmt.Errorf("%s: stopping %s, which this apply started: %w", c.Address, pl.unit, err)
		}
		return nil
	}
	if pl.ports {
		return startPort(ctx, h, c, pl)
	}
	units, sig, err := runningUnits(ctx, h, pl.port)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Address, err)
	}
	logs := logSizes(h, pl.port)
	if len(units) == 0 {
		if !pl.start {
			return nil // opensm reads the file when it starts
		}
		// The plan starts it (an earlier change of this apply may have).
		if err := h.Systemd.Start(ctx, pl.unit); err != nil {
			return fmt.Errorf("%s: starting %s: %w", c.Address, pl.unit, err)
		}
		if units, sig, err = runningUnits(ctx, h, pl.port); err != nil {
			return fmt.Errorf("%s: %w", c.Address, err)
		}
		if len(units) == 0 {
			return fmt.Errorf("%s: %s started, but no opensm unit runs for %s port %d", c.Address, pl.unit, pl.port.Device, pl.port.Port)
		}
	} else if err := kick(ctx, h, sig, units, pl.restart || pl.launched); err != nil {
		return fmt.Errorf("%s: %w", c.Address, err)
	}
	proof := prove(ctx, h, pl, logs)
	if proof == nil {
		return nil
	}
	if pl.signalOnly {
		return fmt.Errorf("%s: %w", c.Address, proof)
	}
	// Keep the previous file: put it back and have opensm read it again.
	if err := restore(h, pl); err != nil {
		return fmt.Errorf("%s: %v; putting the previous %s back: %w", c.Address, proof, pl.file, err)
	}
	if err := kick(ctx, h, sig, units, pl.restart || pl.launched); err != nil {
		return fmt.Errorf("%s: %v; the previous file is back, but opensm was not told: %w", c.Address, proof, err)
	}
	return fmt.Errorf("%s: %w: %v", c.Address, ErrRejected, proof)
}

func restore(h *host.Host, pl *payload) error { return install(h, pl.file, pl.previous) }

// install writes a file atomically (a temporary file renamed over it);
// nil content removes it.
func install(h *host.Host, file string, content []byte) error {
	if content == nil {
		err := h.FS.Remove(file)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return h.FS.WriteFile(file, content, 0o644)
}

// Units returns the opensm units that may run for a port: Debian starts
// one opensm@GUID.service per port (its opensm.service is a oneshot that
// starts them); other distributions run opensm.service itself.
func Units(lp *LocalPort) []string {
	var u []string
	if lp != nil && lp.GUID != "" {
		u = append(u, "opensm@"+lp.GUID+".service")
	}
	return append(u, "opensm.service")
}

// runningUnits are the opensm units that run now (a main process), and
// the service manager that signals them.
func runningUnits(ctx context.Context, h *host.Host, lp *LocalPort) ([]string, host.UnitSignaller, error) {
	if h.Systemd == nil {
		return nil, nil, nil
	}
	sig, ok := h.Systemd.(host.UnitSignaller)
	var running []string
	for _, u := range Units(lp) {
		st, err := h.Systemd.Unit(ctx, u)
		if err != nil {
			return nil, nil, err
		}
		if !st.Active() {
			continue
		}
		if !ok {
			return nil, nil, ErrNoSignaller
		}
		pid, err := sig.MainPID(ctx, u)
		if err != nil {
			return nil, nil, err
		}
		if pid > 0 {
			running = append(running, u)
		}
	}
	return running, sig, nil
}

// kick has opensm take its files: SIGHUP to the unit's main process, or
// a restart where the change needs one or the main process is not
// opensm (RHEL's opensm.service runs it under the opensm-launch shell
// loop, which a SIGHUP would end).
func kick(ctx context.Context, h *host.Host, sig host.UnitSignaller, units []string, restart bool) error {
	for _, u := range units {
		var err error
		if restart || !mainIsOpenSM(ctx, h, sig, u) {
			err = sig.Restart(ctx, u)
		} else {
			err = sig.Signal(ctx, u, syscall.SIGHUP)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// logFiles are where opensm logs: Debian's opensm@.service passes
// --log_file /var/log/opensm.GUID.log; opensm's default is
// /var/log/opensm.log.
func logFiles(lp *LocalPort) []string {
	var l []string
	if lp != nil && lp.GUID != "" {
		l = append(l, "/var/log/opensm."+lp.GUID+".log")
	}
	return append(l, "/var/log/opensm.log")
}

func logSizes(h *host.Host, lp *LocalPort) map[string]int64 {
	m := map[string]int64{}
	for _, f := range logFiles(lp) {
		if fi, err := h.FS.Stat(f); err == nil {
			m[f] = fi.Size()
		}
	}
	return m
}

// rejections are the lines opensm logs when it drops a partitions file
// (opensm/osm_prtn_config.c, osm_prtn.c; seen in the lab):
// "parse_part_conf: PARSE ERROR: line 5: no partition definition found",
// "osm_prtn_make_partitions: Partition configuration in error; retrying with default config".
var rejections = []string{"PARSE ERROR", "Partition configuration in error"}

// newLogErrors are the rejection lines opensm logged after the sizes.
func newLogErrors(h *host.Host, sizes map[string]int64) []string {
	var out []string
	for f, size := range sizes {
		b, err := h.FS.ReadFile(f)
		if err != nil || int64(len(b)) < size {
			continue
		}
		for _, l := range strings.Split(string(b[size:]), "\n") {
			for _, r := range rejections {
				if strings.Contains(l, r) {
					out = append(out, strings.TrimSpace(l))
				}
			}
		}
	}
	return out
}

// prove waits, bounded, until the fabric shows what the change wants:
// this subnet manager's priority and, when it is master, the P_Key table
// of its port. A rejection in opensm's log ends the wait at once.
func prove(ctx context.Context, h *host.Host, pl *payload, logs map[string]int64) error {
	deadline := time.Now().Add(proveTimeout)
	var last string
	for {
		if errs := newLogErrors(h, logs); len(errs) > 0 && pl.partitions {
			return fmt.Errorf("opensm's log: %s", strings.Join(errs, "; "))
		}
		last = check(ctx, h, pl)
		if last == "" {
			return nil
		}
		if time.Until(deadline) <= 0 {
			return fmt.Errorf("after %s: %s", proveTimeout, last)
		}
		if err := pause(ctx); err != nil {
			return err
		}
	}
}

// check says what the fabric does not show yet, "" when it shows it all.
func check(ctx context.Context, h *host.Host, pl *payload) string {
	lp := *pl.port
	lp.SysfsPKeys, _ = readSysfsPKeys(h, &lp)
	f, err := ReadFabric(ctx, h, &lp)
	if err != nil {
		return err.Error()
	}
	if p := pl.expect.priority; p != nil && f.Local.Priority != *p {
		return fmt.Sprintf("this subnet manager's priority is %d, not %d", f.Local.Priority, *p)
	}
	if f.Local.State != "SMINFO_MASTER" || pl.expect.pkeys == nil {
		return ""
	}
	if !slices.Equal(f.PKeys, pl.expect.pkeys) {
		return fmt.Sprintf("the P_Key table of %s port %d is %s, not %s", lp.Device, lp.Port, formatPKeys(f.PKeys), formatPKeys(pl.expect.pkeys))
	}
	return ""
}

// PortsUnit is Debian's oneshot that starts opensm@GUID.service for each
// port PORTS names; its instances are PartOf it.
const PortsUnit = "opensm.service"

// startPort has Debian's units run opensm on the port PORTS now names:
// when opensm.service is active, it is restarted (its instances stop
// with it; its start begins the instance of the new PORTS), and the
// instance must then run and answer as this port's subnet manager.
// When opensm.service is not active, opensm starts on that port when it
// next starts.
//
// Equivalent to: systemctl restart opensm.service;
// systemctl is-active opensm@GUID.service; sminfo -C DEV -P N -D 0
func startPort(ctx context.Context, h *host.Host, c *plan.Change, pl *payload) error {
	if h.Systemd == nil {
		return nil
	}
	st, err := h.Systemd.Unit(ctx, PortsUnit)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Address, err)
	}
	if !st.Active() && !pl.start {
		return nil
	}
	sig, ok := h.Systemd.(host.UnitSignaller)
	if !ok {
		return fmt.Errorf("%s: %w", c.Address, ErrNoSignaller)
	}
	// Restarted when it runs; started when the plan starts opensm.
	if err := sig.Restart(ctx, PortsUnit); err != nil {
		return fmt.Errorf("%s: restarting %s: %w", c.Address, PortsUnit, err)
	}
	unit := "opensm@" + pl.port.GUID + ".service"
	deadline := time.Now().Add(proveTimeout)
	for {
		var last string
		if pid, err := sig.MainPID(ctx, unit); err != nil || pid == 0 {
			last = fmt.Sprintf("%s does not run (%v)", unit, err)
		} else if _, err := ReadFabric(ctx, h, pl.port); err != nil {
			last = err.Error()
		} else {
			return nil
		}
		if time.Until(deadline) <= 0 {
			return fmt.Errorf("%s: after restarting %s, no subnet manager on %s port %d within %s: %s", c.Address, PortsUnit, pl.port.Device, pl.port.Port, proveTimeout, last)
		}
		if err := pause(ctx); err != nil {
			return err
		}
	}
}

// mainIsOpenSM: the unit's main process is opensm (/proc/PID/comm); true
// when it cannot tell, as SIGHUP is what opensm's units take.
func mainIsOpenSM(ctx context.Context, h *host.Host, sig host.UnitSignaller, unit string) bool {
	pid, err := sig.MainPID(ctx, unit)
	if err != nil || pid <= 0 {
		return true
	}
	comm, err := host.ReadAttr(h.FS, "/proc/"+strconv.Itoa(pid)+"/comm")
	return err != nil || comm == "opensm"
}

// pause waits between two looks at the fabric, or until ctx ends.
func pause(ctx context.Context) error {
	tick := time.NewTimer(500 * time.Millisecond)
	defer tick.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tick.C:
		return nil
	}
}

// startable is the unit that starts opensm for the port: the package's
// opensm.service where it is installed (Debian's starts an instance a
// port PORTS names; RHEL's runs opensm), else the port's instance
// opensm@GUID.service; "" when the service manager knows neither.
//
// Equivalent to: systemctl show -p LoadState opensm.service opensm@GUID.service
func startable(ctx context.Context, h *host.Host, lp *LocalPort) string {
	for _, u := range []string{PortsUnit, Units(lp)[0]} {
		if st, err := h.Systemd.Unit(ctx, u); err == nil && st.LoadState == "loaded" {
			return u
		}
	}
	return ""
}
