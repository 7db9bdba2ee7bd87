// Package host is rdmaform's one door to the machine: files (sysfs,
// configfs, /proc, /etc, /run) through a rooted FS, external programs
// through a Runner, and kernel networking through Net. Every other package
// receives a *Host, so the same code runs against the live host, a --root
// tree, or the simulator.
package host

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Host bundles the three ways rdmaform touches a machine.
type Host struct {
	FS     FS
	Runner Runner
	// Net is kernel netlink; on an offline tree (--root), the tree's sysfs
	// (OfflineNet), which refuses changes with an *OfflineError.
	Net Net
	// Kernel mounts filesystems; nil means offline: under --root nothing is
	// mounted or loaded, the tree is used as it is.
	Kernel Kernel
	// Systemd is the service manager; nil when no systemd runs (or --root).
	Systemd Systemd
	// NM is NetworkManager's D-Bus API (profiles and their activation);
	// nil when the host has none to ask.
	NM NetworkManager
	// Name says what this host is, for messages: "live", "root DIR", "sim DIR".
	Name string
}

// Kernel is what rdmaform asks of the running kernel besides netlink.
type Kernel interface {
	// EnsureConfigfs mounts configfs at /sys/kernel/config unless it is
	// mounted already. Equivalent to: mount -t configfs none /sys/kernel/config
	EnsureConfigfs() error
}

// Offline reports whether this host must not be changed beyond its files
// (a --root tree): no module loads, no mounts, no netlink.
func (h *Host) Offline() bool { return h.Kernel == nil }

// Run runs a command through the host's runner.
func (h *Host) Run(ctx context.Context, args ...string) (Result, error) {
	return h.Runner.Run(ctx, Cmd{Args: args})
}

// Modprobe loads a kernel module. Equivalent to: modprobe NAME
// Offline hosts load nothing.
func (h *Host) Modprobe(ctx context.Context, name string) error {
	if h.Offline() {
		return nil
	}
	_, err := h.Run(ctx, "modprobe", "--", name)
	return err
}

// ConfigfsDir is configfs's mount point.
const ConfigfsDir = "/sys/kernel/config"

// EnsureConfigfs mounts configfs at ConfigfsDir unless it is mounted.
// Where configfs is a module that is not loaded, its mount point does not
// exist (the module makes it) and mount(2) fails with ENOENT: the module
// is loaded first, as an operator would.
//
// Equivalent to: modprobe configfs; mount -t configfs none /sys/kernel/config
func (h *Host) EnsureConfigfs(ctx context.Context) error {
	if h.Kernel == nil {
		return fmt.Errorf("%s: no kernel to mount configfs in (offline tree)", ConfigfsDir)
	}
	if !Exists(h.FS, ConfigfsDir) {
		if err := h.Modprobe(ctx, "configfs"); err != nil {
			return fmt.Errorf("%s does not exist and configfs does not load: %w", ConfigfsDir, err)
		}
	}
	return h.Kernel.EnsureConfigfs()
}

// Hostname reads the kernel's hostname (/proc/sys/kernel/hostname), so a
// --root tree or a simulated host answers for itself.
func (h *Host) Hostname() (string, error) {
	name, err := ReadAttr(h.FS, "/proc/sys/kernel/hostname")
	if err != nil || name == "" {
		// An offline --root tree has no /proc: its /etc/hostname says.
		if etc, err2 := ReadAttr(h.FS, "/etc/hostname"); err2 == nil && etc != "" {
			return etc, nil
		}
	}
	return name, err
}

// NewLive returns the live host: root "/", real programs, real netlink in
// the current network namespace.
func NewLive(env []string) (*Host, error) {
	fsys, err := NewRootFS("/")
	if err != nil {
		return nil, err
	}
	return &Host{FS: fsys, Runner: &ExecRunner{Env: env}, Net: NewNetlink(nil), Kernel: liveKernel{fsys}, Systemd: liveSystemd(), NM: NewNetworkManager(env), Name: "live"}, nil
}

// NewRooted returns a host whose files live under dir. Commands still run
// from PATH (tests put fakes there) and NetworkManager is the one on the
// system bus env names; nothing is mounted, and its network door is the
// tree's sysfs (OfflineNet: reads from the tree, writes refused).
func NewRooted(dir string, env []string) (*Host, error) {
	fsys, err := NewRootFS(dir)
	if err != nil {
		return nil, err
	}
	return &Host{FS: fsys, Runner: &ExecRunner{Env: env}, Net: &OfflineNet{FS: fsys}, NM: NewNetworkManager(env), Name: "root " + dir}, nil
}

type liveKernel struct{ fs FS }

// EnsureConfigfs implements Kernel.
func (k liveKernel) EnsureConfigfs() error {
	mounts, err := k.fs.ReadFile("/proc/mounts")
	if err != nil {
		return err
	}
	for _, l := range strings.Split(string(mounts), "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && f[1] == "/sys/kernel/config" && f[2] == "configfs" {
			return nil
		}
	}
	if err := unix.Mount("configfs", "/sys/kernel/config", "configfs", 0, ""); err != nil {
		if errors.Is(err, unix.ENODEV) {
			return fmt.Errorf("mount -t configfs none /sys/kernel/config: the kernel has no configfs (CONFIG_CONFIGFS_FS): %w", err)
		}
		return fmt.Errorf("mount -t configfs none /sys/kernel/config: %w", err)
	}
	return nil
}
