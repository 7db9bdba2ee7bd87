package sim

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/coreos/go-systemd/v22/unit"

	"github.com/rdmaform/rdmaform/host"
)

// SystemdState is the simulated host's service manager. A nil
// State.Systemd is a manager with the stock units (DefaultUnits); it is
// written out at the first change.
//
// Two kinds of unit exist, as on a real host: unit files rdmaform (or the
// operator) put under /etc/systemd/system in the simulated tree, whose
// enablement is the tree's .wants/ symlinks, exactly as systemctl makes
// them; and stock units of installed packages, listed here, whose
// unit-file state is recorded.
type SystemdState struct {
	// Off: no systemd runs (a container without an init system); the
	// host has no service manager.
	Off bool `yaml:"off,omitempty"`
	// Units are the stock units and the runtime state of unit-file units.
	Units []*Unit `yaml:"units,omitempty"`
}

// Unit is one unit's state in the simulated manager.
type Unit struct {
	Name string `yaml:"name"`
	// File is the unit-file state of a stock unit: enabled, disabled,
	// static or masked. "" means the unit's file is in the simulated tree
	// under /etc/systemd/system and its state follows from the tree.
	File string `yaml:"file,omitempty"`
	// Active: the unit runs (or ran, with RemainAfterExit).
	Active bool `yaml:"active,omitempty"`
	// FailStart makes a start job end "failed" (tests of failure handling).
	FailStart bool `yaml:"fail_start,omitempty"`
	// Failed: its last start failed (ActiveState failed), as a boot
	// unit's command that exited with a status the unit does not count
	// as success leaves it.
	Failed bool `yaml:"failed,omitempty"`
	// Memlock is LimitMEMLOCK= as the manager loaded it from the unit's
	// drop-ins (limits.go); "" is the default.
	Memlock string `yaml:"memlock,omitempty"`
}

// DefaultUnits are the stock units of a simulated host: a Debian server
// with rdma-core, opensm, NetworkManager and slurmd (an HPC compute
// node) installed, opensm not enabled.
func DefaultUnits() []*Unit {
	return []*Unit{
		{Name: "NetworkManager.service", File: "enabled", Active: true},
		{Name: "ibacm.service", File: "disabled"},
		{Name: "opensm.service", File: "disabled"},
		{Name: "rdma-ndd.service", File: "static", Active: true},
		{Name: "slurmd.service", File: "enabled", Active: true},
		{Name: "srp_daemon.service", File: "disabled"},
		{Name: "systemd-modules-load.service", File: "static", Active: true},
	}
}

// UnitDir is where unit files written on the simulated host live.
const UnitDir = "/etc/systemd/system"

// systemd returns the host's service manager, nil when none runs.
func (s *Sim) systemd() host.Systemd {
	s.lock()
	defer s.unlock()
	if s.state.Systemd != nil && s.state.Systemd.Off {
		return nil
	}
	return &simSystemd{sim: s}
}

// simSystemd emulates org.freedesktop.systemd1.Manager for the simulated
// host, with the errors systemd gives.
type simSystemd struct{ sim *Sim }

var _ host.Systemd = (*simSystemd)(nil)

var _ host.Rebooter = (*simSystemd)(nil)

// Reboot implements host.Rebooter: the simulated host reboots at once (as
// rdmaform sim reboot does), and the call returns after it.
func (sd *simSystemd) Reboot(context.Context) error { return sd.sim.Reboot() }

// units returns the manager's unit list, materialising the stock units.
func (st *State) units() *SystemdState {
	if st.Systemd == nil {
		st.Systemd = &SystemdState{Units: DefaultUnits()}
	}
	return st.Systemd
}

func (sd *SystemdState) unit(name string) *Unit {
	for _, u := range sd.Units {
		if u.Name == name {
			return u
		}
	}
	return nil
}

// ensure returns a unit, adding it (in name order) when the manager has
// none of that name yet.
func (sd *SystemdState) ensure(name string) *Unit {
	u := sd.unit(name)
	if u == nil {
		u = &Unit{Name: name}
		sd.Units = append(sd.Units, u)
		sd.sortUnits()
	}
	return u
}

func (sd *SystemdState) sortUnits() {
	sort.Slice(sd.Units, func(i, j int) bool { return sd.Units[i].Name < sd.Units[j].Name })
}

// checkUnitName refuses names that are not plain unit file names: they
// become paths in the simulated tree.
func checkUnitName(name string) error {
	if name == "" || strings.ContainsAny(name, "/\x00\n") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "-") {
		return fmt.Errorf("invalid unit name %q", name)
	}
	return nil
}

// unitFile is what the simulated tree holds for a unit: whether its file
// exists under /etc/systemd/system and the targets its [Install] names.
type unitFile struct {
	exists bool
	// wantedBy are the WantedBy= and RequiredBy= targets.
	wantedBy []string
}

func (s *Sim) readUnitFile(name string) (unitFile, error) {
	f, err := os.Open(filepath.Join(s.Dir, UnitDir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return unitFile{}, nil
	}
	if err != nil {
		return unitFile{}, err
	}
	defer f.Close()
	opts, err := unit.Deserialize(f)
	if err != nil {
		return unitFile{}, fmt.Errorf("%s/%s: %w", UnitDir, name, err)
	}
	uf := unitFile{exists: true}
	for _, o := range opts {
		if o.Section == "Install" && (o.Name == "WantedBy" || o.Name == "RequiredBy") {
			uf.wantedBy = append(uf.wantedBy, strings.Fields(o.Value)...)
		}
	}
	return uf, nil
}

// wantsLink is the symlink systemctl enable makes for one WantedBy= target.
func wantsLink(target, name string) string {
	return filepath.Join(UnitDir, target+".wants", name)
}

// fileState is the unit-file state of a unit whose file is in the tree,
// from its .wants/ symlinks, as systemctl is-enabled computes it.
func (s *Sim) fileState(name string, uf unitFile) string {
	if len(uf.wantedBy) == 0 {
		return "static"
	}
	for _, t := range uf.wantedBy {
		if _, err := os.Lstat(filepath.Join(s.Dir, wantsLink(t, name))); err == nil {
			return "enabled"
		}
	}
	return "disabled"
}

func (m *simSystemd) record(call string) {
	m.sim.lock()
	m.sim.calls = append(m.sim.calls, "systemd1 "+call)
	m.sim.unlock()
}

// Unit implements host.Systemd.
func (m *simSystemd) Unit(_ context.Context, name string) (host.UnitState, error) {
	if err := checkUnitName(name); err != nil {
		return host.UnitState{}, err
	}
	uf, err := m.sim.readUnitFile(name)
	if err != nil {
		return host.UnitState{}, err
	}
	m.sim.lock()
	defer m.sim.unlock()
	sd := m.sim.state.Systemd
	if sd == nil {
		sd = &SystemdState{Units: DefaultUnits()}
	}
	u := sd.unit(name)
	active := "inactive"
	switch {
	case u != nil && u.Active:
		active = "active"
	case u != nil && u.Failed:
		active = "failed"
	}
	switch {
	case uf.exists:
		return host.UnitState{LoadState: "loaded", ActiveState: active, UnitFileState: m.sim.fileState(name, uf)}, nil
	case u != nil && u.File != "":
		load := "loaded"
		if u.File == "masked" {
			load = "masked"
		}
		return host.UnitState{LoadState: load, ActiveState: active, UnitFileState: u.File}, nil
	}
	return host.UnitState{LoadState: "not-found", ActiveState: "inactive"}, nil
}

// Enable implements host.Systemd: a tree unit gets the symlinks systemctl
// enable makes; a stock unit's file state becomes enabled.
func (m *simSystemd) Enable(_ context.Context, name string) error {
	return m.toggle(name, true)
}

// Disable implements host.Systemd.
func (m *simSystemd) Disable(_ context.Context, name string) error {
	return m.toggle(name, false)
}

func (m *simSystemd) toggle(name string, enable bool) error {
	if err := checkUnitName(name); err != nil {
		return err
	}
	op := "DisableUnitFiles"
	if enable {
		op = "EnableUnitFiles"
	}
	m.record(op + " " + name)
	if err := m.sim.inject(faultSystemd, op, name); err != nil {
		return unlessDropped(err)
	}
	uf, err := m.sim.readUnitFile(name)
	if err != nil {
		return err
	}
	if uf.exists {
		if len(uf.wantedBy) == 0 {
			if enable {
				return fmt.Errorf("enabling %s: %w", name, host.ErrNoInstallInfo)
			}
			return nil
		}
		// The links are the simulated host's files: made inside its
		// tree, a symlink on the way followed only inside it, as
		// systemctl enable --root does.
		tree, err := host.NewRootFS(m.sim.Dir)
		if err != nil {
			return err
		}
		for _, t := range uf.wantedBy {
			link := wantsLink(t, name)
			if !enable {
				if err := tree.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
				continue
			}
			if err := tree.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				return err
			}
			if _, err := tree.Lstat(link); err == nil {
				continue
			}
			if err := tree.Symlink(filepath.Join(UnitDir, name), link); err != nil {
				return err
			}
		}
		return nil
	}
	return m.sim.mutate(true, func(st *State) error {
		u := st.units().unit(name)
		switch {
		case u == nil || u.File == "":
			return fmt.Errorf("enabling %s: Unit file %s does not exist", name, name)
		case u.File == "masked":
			return fmt.Errorf("Unit file %s is masked", name)
		case u.File == "static":
			if enable {
				return fmt.Errorf("enabling %s: %w", name, host.ErrNoInstallInfo)
			}
			return nil
		}
		u.File = "disabled"
		if enable {
			u.File = "enabled"
		}
		return nil
	})
}

// Start implements host.Systemd.
func (m *simSystemd) Start(ctx context.Context, name string) error {
	return m.job(ctx, name, true)
}

// Stop implements host.Systemd.
func (m *simSystemd) Stop(ctx context.Context, name string) error {
	return m.job(ctx, name, false)
}

func (m *simSystemd) job(ctx context.Context, name string, start bool) error {
	op, verb := "StopUnit", "stop"
	if start {
		op, verb = "StartUnit", "start"
	}
	m.record(op + " " + name + " replace")
	if err := m.sim.inject(faultSystemd, op, name); err != nil {
		return unlessDropped(err)
	}
	st, err := m.Unit(ctx, name)
	if err != nil {
		return err
	}
	switch st.LoadState {
	case "not-found":
		if !start {
			return fmt.Errorf("stop %s: Unit %s not loaded.", name, name)
		}
		return fmt.Errorf("start %s: Unit %s not found.", name, name)
	case "masked":
		return fmt.Errorf("%s %s: Unit %s is masked.", verb, name, name)
	}
	// An opensm unit's sweep changes P_Key tables: the tree is rendered
	// again.
	return m.sim.mutate(!isOpenSMUnit(name), func(s *State) error {
		u := s.units().ensure(name)
		if start && u.FailStart {
			u.Active, u.Failed = false, true
			return &host.JobError{Unit: name, Op: "start", Result: "failed"}
		}
		u.Active, u.Failed = start, false
		if start {
			m.sim.smStarted(s, name)
		} else {
			smStopped(s, name)
		}
		return nil
	})
}

// Reload implements host.Systemd; the simulated manager reads unit files
// when asked, and loads the units' limits again (limits.go).
func (m *simSystemd) Reload(context.Context) error {
	m.record("Reload")
	if err := m.sim.inject(faultSystemd, "Reload", ""); err != nil {
		return unlessDropped(err)
	}
	return m.sim.mutate(true, m.sim.loadLimits)
}

// rebootSystemd does to the service manager what a boot does: enabled
// units (stock or in the tree) start, static units keep running as they
// did, everything else is inactive; units that were only started are lost.
// Callers hold the lock.
func (s *Sim) rebootSystemd(st *State) error {
	if err := s.loadLimits(st); err != nil {
		return err
	}
	sd := st.units()
	for _, u := range sd.Units {
		u.Failed = false
		if u.File == "static" {
			continue
		}
		u.Active = u.File == "enabled"
	}
	entries, err := os.ReadDir(filepath.Join(s.Dir, UnitDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() || !strings.Contains(e.Name(), ".") {
			continue
		}
		uf, err := s.readUnitFile(e.Name())
		if err != nil {
			return err
		}
		if s.fileState(e.Name(), uf) != "enabled" {
			continue
		}
		u := sd.unit(e.Name())
		if u == nil {
			u = &Unit{Name: e.Name()}
			sd.Units = append(sd.Units, u)
		}
		u.Active = true
	}
	sd.sortUnits()
	return nil
}
