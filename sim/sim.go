package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/rdmaform/rdmaform/host"
)

// Sim is an open simulated host. It is safe for concurrent use by the
// goroutines of one rdmaform process and by several processes on one
// directory: each look at or change of the state holds the host's lock
// (LockFile) and starts from the newest sim.yaml.
type Sim struct {
	Dir string

	mu    sync.Mutex
	state *State
	calls []string
	// rev counts the firmware sets that changed state; saved is the rev
	// sim.yaml holds; fwBusy counts firmware tool runs under way, and
	// flushed is closed by the save they wait for (see leaveFirmware).
	rev, saved uint64
	fwBusy     int
	flushed    chan struct{}
	// lockf is the open LockFile; held counts this process's reasons to
	// hold it (goroutines inside lock, and dirty: a firmware set not
	// saved yet); loaded is the sim.yaml the state was read from or
	// saved as; stale is why the state could not be brought up to date.
	lockf  *os.File
	held   int
	dirty  bool
	loaded fileID
	stale  error
	// renderDue are the parts of the tree firmware resets changed; the
	// run that saves for all (leaveFirmware) renders them too. rendered
	// is the rendering the tree was last written from by this process
	// (nil: unknown), so such a render touches only what changed.
	renderDue []string
	rendered  map[string]node
}

// Open opens the simulated host in dir, rendering its tree if it has none.
func Open(dir string) (*Sim, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(abs, StateFile)); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s is not a simulated host (no %s; create one with rdmaform sim new)", dir, StateFile)
		}
		return nil, err
	}
	s := &Sim{Dir: abs}
	if err := s.openLock(); err != nil {
		return nil, err
	}
	s.lock()
	defer s.unlock()
	if s.stale != nil {
		return nil, s.stale
	}
	if _, err := os.Stat(filepath.Join(abs, "sys")); errors.Is(err, os.ErrNotExist) {
		if err := s.state.renderAll(abs); err != nil {
			return nil, err
		}
	}
	// Functions a late reset left unprobed: those due register now, the
	// others when their time comes.
	if s.state.probeDue(time.Now()) {
		s.state.sortAll()
		if err := s.save(); err != nil {
			return nil, err
		}
		if err := s.state.renderAll(abs); err != nil {
			return nil, err
		}
	}
	for _, d := range s.state.Unprobed {
		if !d.ProbeAt.IsZero() {
			s.probeLater(d.ProbeAt)
		}
	}
	return s, nil
}

// Create writes a new simulated host from a state.
func Create(dir string, st *State) (*Sim, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	s := &Sim{Dir: abs}
	if err := s.openLock(); err != nil {
		return nil, err
	}
	s.lock()
	defer s.unlock()
	s.state, s.stale = st, nil
	st.sortAll()
	if st.Bootloader == "kernel-install" && st.Cmdline == "" {
		st.Cmdline = systemdBootCmdline()
	}
	if st.Bootloader == "grubby" && st.Cmdline == "" {
		st.Cmdline = "BOOT_IMAGE=(hd0,gpt2)/vmlinuz-" + strings.TrimPrefix(simKernelImage, "/boot/vmlinuz-") + " " + simGrubbyOptions
	}
	if err := s.save(); err != nil {
		return nil, err
	}
	if err := st.renderAll(abs); err != nil {
		return nil, err
	}
	if err := s.installBootFiles(st); err != nil {
		return nil, err
	}
	return s, nil
}

// State returns a copy of the current state (for tests and show).
func (s *Sim) State() *State {
	s.lock()
	defer s.unlock()
	b, _ := yaml.Marshal(s.state)
	cp := &State{}
	_ = yaml.Unmarshal(b, cp)
	return cp
}

// Calls returns the tool command lines run so far, in order.
func (s *Sim) Calls() []string {
	s.lock()
	defer s.unlock()
	return append([]string(nil), s.calls...)
}

// save writes sim.yaml atomically. Callers hold the lock.
func (s *Sim) save() error {
	if s.dirty {
		// Saved (or failed): other processes may have the host again
		// once this one's callers unlock.
		s.dirty = false
		s.held--
	}
	if s.stale != nil {
		return s.stale
	}
	b, err := yaml.Marshal(s.state)
	if err != nil {
		return err
	}
	p := filepath.Join(s.Dir, StateFile)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		return err
	}
	if s.loaded, err = statID(p); err != nil {
		return err
	}
	s.saved = s.rev
	if s.flushed != nil {
		close(s.flushed)
		s.flushed = nil
	}
	return nil
}

// Firmware tool runs share saves: a set that changed the adapters does
// not save the whole state itself while other runs of the firmware tools
// are under way; the last one to finish saves for all (at most
// coalesceWait later, each saves what is left). Sets on 32 adapters at
// once then cost one save, not 32: on a 32-card host a save takes 10 to
// 30 ms, which would add up to more than the emulated tool run itself.
const coalesceWait = 100 * time.Millisecond

// enterFirmware counts a firmware tool run under way. Callers hold mu.
func (s *Sim) enterFirmware() { s.fwBusy++ }

// leaveFirmware ends a firmware tool run: it returns once sim.yaml holds
// every change made so far.
func (s *Sim) leaveFirmware() error {
	s.lock()
	s.fwBusy--
	rev := s.rev
	if s.saved >= rev && len(s.renderDue) == 0 {
		s.unlock()
		return nil
	}
	if s.fwBusy > 0 {
		if s.flushed == nil {
			s.flushed = make(chan struct{})
		}
		ch := s.flushed
		s.unlock()
		t := time.NewTimer(coalesceWait)
		select {
		case <-ch:
		case <-t.C:
		}
		t.Stop()
		s.lock()
	}
	defer s.unlock()
	if s.saved < rev {
		if err := s.save(); err != nil {
			return err
		}
	}
	if len(s.renderDue) > 0 {
		scopes := s.renderDue
		s.renderDue = nil
		var err error
		s.rendered, err = s.state.renderScoped(s.Dir, scopes, s.rendered)
		return err
	}
	return nil
}

// cmGroupsInTree lists the rdma_cm configfs groups present in a tree.
func cmGroupsInTree(dir string) []string {
	entries, err := os.ReadDir(filepath.Join(dir, "sys/kernel/config/rdma_cm"))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// mutateGroups changes the configfs groups under the lock and renders
// configfs; nothing else changed, so sim.yaml is not rewritten.
func (s *Sim) mutateGroups(fn func(st *State) error) error {
	s.lock()
	defer s.unlock()
	if s.stale != nil {
		return s.stale
	}
	if err := fn(s.state); err != nil {
		return err
	}
	s.state.sortAll()
	s.rendered = nil
	return s.state.renderConfigfs(s.Dir)
}

// mutate changes the state under the lock, saves it and re-renders what
// the change touched (everything unless only configfs changed).
func (s *Sim) mutate(configfsOnly bool, fn func(st *State) error) error {
	s.lock()
	defer s.unlock()
	if s.stale != nil {
		return s.stale
	}
	if err := fn(s.state); err != nil {
		return err
	}
	s.state.sortAll()
	if err := s.save(); err != nil {
		return err
	}
	if configfsOnly {
		s.rendered = nil
		return s.state.renderConfigfs(s.Dir)
	}
	var err error
	s.rendered, err = s.state.renderAllTree(s.Dir)
	return err
}

// view runs fn on the state under the lock, for a read: nothing is saved
// or rendered.
func (s *Sim) view(fn func(st *State)) {
	s.lock()
	defer s.unlock()
	fn(s.state)
}

// mutateSaved changes state no file of the tree shows (a driver's DCB
// tables, pause): it is saved, the tree is left as it is.
func (s *Sim) mutateSaved(fn func(st *State) error) error {
	s.lock()
	defer s.unlock()
	s.rendered = nil // the caller may write a file of the tree itself
	if s.stale != nil {
		return s.stale
	}
	if err := fn(s.state); err != nil {
		return err
	}
	return s.save()
}

// Host returns a host whose files, commands and netlink are this
// simulated host's.
func (s *Sim) Host() (*host.Host, error) {
	root, err := host.NewRootFS(s.Dir)
	if err != nil {
		return nil, err
	}
	return &host.Host{
		FS:      &simFS{RootFS: root, sim: s},
		Runner:  &runner{sim: s},
		Net:     &simNet{sim: s},
		Kernel:  simKernel{sim: s},
		Systemd: s.systemd(),
		NM:      &simNM{sim: s},
		Name:    "sim " + s.Dir,
	}, nil
}

type simKernel struct{ sim *Sim }

// EnsureConfigfs implements host.Kernel as mount(2) does: configfs is
// mounted at /sys/kernel/config, which must exist (ENOENT while configfs,
// a module, is not loaded).
func (k simKernel) EnsureConfigfs() error {
	return k.sim.mutate(false, func(st *State) error {
		if st.configfsMounted() {
			return nil
		}
		if !st.configfsDir() {
			return fmt.Errorf("mount -t configfs none /sys/kernel/config: %w", syscall.ENOENT)
		}
		st.ConfigfsUnmounted = false
		return nil
	})
}

// Reboot does to the simulated host what a reboot does: firmware Next Boot
// values become current (ports come up with the new link layer), runtime
// state is lost (rdma_cm defaults, rxe links, mlx4 port types written
// through sysfs, netlink addresses and MTUs), modules are those loaded at
// boot, and the boot_id changes.
func (s *Sim) Reboot() error { return s.RebootWith(RebootOptions{}) }

// RebootOptions vary a simulated reboot.
type RebootOptions struct {
	// KeepFirmware is a warm reboot that does not reload the adapters'
	// firmware: Next Boot values stay staged and Current ones stay as they
	// were; the rest of the reboot happens (new boot_id, runtime state lost).
	KeepFirmware bool
}

// RebootWith is Reboot with options.
func (s *Sim) RebootWith(o RebootOptions) error {
	// /run is a tmpfs: /run/reboot-required and the like are gone.
	if err := os.RemoveAll(filepath.Join(s.Dir, "run")); err != nil {
		return err
	}
	return s.mutate(false, func(st *State) error {
		st.Boot++
		// The driver probes every adapter function at boot, those a
		// firmware reset left without it too.
		st.Devices = append(st.Devices, st.Unprobed...)
		st.Unprobed = nil
		st.RdmaCM = nil
		st.CMGroups = nil
		st.Rules, st.TableRoutes = nil, nil
		var keep []*Device
		for _, d := range st.Devices {
			if d.Driver == "rxe" {
				continue
			}
			keep = append(keep, d)
		}
		st.Devices = keep
		st.rebootHierarchy()
		for _, d := range st.Devices {
			// The firmware sets Max Read Request again at boot.
			d.MaxReadReq = 0
			// VFs are runtime state: none after a boot, autoprobe back on.
			if d.SRIOV != nil {
				d.SRIOV = nil
				st.syncVFNetdevs(d)
			}
			for _, p := range d.Ports {
				if d.Driver == "mlx4" && p.Mlx4Boot != "" {
					p.Mlx4Type = p.Mlx4Boot
					if ll := map[string]string{"ib": "InfiniBand", "eth": "Ethernet"}[p.Mlx4Boot]; ll != "" {
						p.LinkLayer = ll
					}
				}
			}
		}
		for _, n := range st.Netdevs {
			if n.Boot != nil {
				n.MTU, n.Up = n.Boot.MTU, n.Boot.Up
				n.Addrs = append([]string(nil), n.Boot.Addrs...)
			}
			if n.Kind == "ether" && n.Device != "" {
				// DCB, pause and ECN are the driver's defaults again.
				n.resetQoS(st.Device(n.Device))
			}
		}
		st.Modules = append([]string(nil), st.BootModules...)
		for _, m := range s.modulesLoadD() {
			if !st.ModuleLoaded(m) && contains(st.Available, m) {
				st.Modules = append(st.Modules, m)
			}
		}
		if st.ConfigfsModule && st.ModuleLoaded("rdma_cm") && !st.ModuleLoaded("configfs") {
			st.Modules = append(st.Modules, "configfs") // rdma_cm's dependency
		}
		// The boot mounts configfs where its directory exists.
		st.ConfigfsUnmounted = !st.configfsDir()
		if !o.KeepFirmware {
			st.rebootFirmware()
		}
		s.rebootNames(st)
		s.rebootNVIDIA(st)
		s.rebootCmdline(st)
		st.reconcilePorts()
		st.rebootNM()
		s.rebootSysctl(st)
		st.IRQAffinity = nil // the kernel's default affinity again
		return s.rebootSystemd(st)
	})
}

// reconcilePorts brings port state and netdevs in line with link layers:
// a port is ACTIVE when its peer speaks the same link layer (or no peer is
// recorded), and has the IPoIB or Ethernet netdev its link layer gives.
func (st *State) reconcilePorts() {
	for _, d := range st.Devices {
		if d.Driver == "rxe" {
			continue
		}
		for _, p := range d.Ports {
			if p.Peer == "" || p.Peer == p.LinkLayer {
				p.State, p.PhysState = "ACTIVE", "LinkUp"
			} else {
				p.State, p.PhysState = "DOWN", "Polling"
			}
			if p.LinkLayer == "Ethernet" {
				p.LID, p.SMLID = 0, 0
			}
			want, drop := p.NetdevEth, p.NetdevIB
			kind := "ether"
			if p.LinkLayer == "InfiniBand" {
				want, drop, kind = p.NetdevIB, p.NetdevEth, "ipoib"
			}
			if drop != "" {
				st.removeNetdev(drop)
			}
			if want != "" && st.Netdev(want) == nil {
				nd := &Netdev{Name: want, Kind: kind, Device: d.Name, Port: p.Num, Up: true}
				if kind == "ipoib" {
					nd.MTU, nd.Mode, nd.PKey = 2044, "datagram", 0xffff
					nd.MAC = ipoibMAC(d, p)
				} else {
					nd.MTU = 1500
					nd.MAC = ethMAC(d, p)
					nd.resetQoS(d)
				}
				st.Netdevs = append(st.Netdevs, nd)
			}
		}
	}
}

// resetQoS gives an adapter's Ethernet netdev its driver's QoS state at
// probe time: mlx5's DCB and pause, and the OFED ECN tree under MLNX_OFED.
// Other drivers get none (the simulator models mlx5 DCB only).
func (n *Netdev) resetQoS(d *Device) {
	n.DCB, n.Pause, n.ECN, n.Rings, n.Channels = nil, nil, nil, nil, nil
	if d == nil || d.Driver != "mlx5" {
		return
	}
	n.DCB, n.Pause = mlx5DCB(), mlx5Pause()
	n.Rings, n.Channels = mlx5Rings(), mlx5Channels()
	n.DCB.Host = !d.DCBXFirmware
	if d.OFED {
		n.ECN = ofedECN()
	}
}

func (st *State) removeNetdev(name string) {
	var keep []*Netdev
	for _, n := range st.Netdevs {
		// P_Key children go with their parent.
		if n.Name == name || (len(n.Name) > len(name) && n.Name[:len(name)+1] == name+".") {
			continue
		}
		keep = append(keep, n)
	}
	st.Netdevs = keep
	st.flushRoutes(name, "")
}

func ipoibMAC(d *Device, p *Port) string {
	flag := "80"
	if d.EnhancedIPoIB {
		flag = "00"
	}
	g := guidBytes(d.NodeGUID)
	return fmt.Sprintf("%s:00:10:49:fe:80:00:00:00:00:00:00:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x",
		flag, g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7]+byte(p.Num-1))
}

func ethMAC(d *Device, p *Port) string {
	g := guidBytes(d.NodeGUID)
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", g[0]&^1|2, g[1], g[2], g[5], g[6], g[7]+byte(p.Num-1))
}

// RunTool runs one emulated tool as the simulated host's PATH would, for
// people who want to see what a tool prints on this host.
func (s *Sim) RunTool(ctx context.Context, args []string) (host.Result, error) {
	r := &runner{sim: s}
	return r.Run(ctx, host.Cmd{Args: args})
}

// modulesLoadD lists the modules /etc/modules-load.d/*.conf of the
// simulated host names, as systemd-modules-load reads them at boot.
func (s *Sim) modulesLoadD() []string {
	files, _ := filepath.Glob(filepath.Join(s.Dir, "etc/modules-load.d/*.conf"))
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			l = strings.TrimSpace(l)
			if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";") {
				continue
			}
			out = append(out, strings.ReplaceAll(l, "-", "_"))
		}
	}
	return out
}
