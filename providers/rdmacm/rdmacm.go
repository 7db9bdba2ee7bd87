// Package rdmacm manages the defaults rdma_cm gives new connections on a
// port: the RoCE version (default_roce_mode) and the type of service
// (default_roce_tos), through configfs. The values live in the kernel
// until the device goes away (reboot, driver reload), so they are runtime
// settings.
package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Root is where configfs shows rdma_cm.
const Root = "/sys/kernel/config/rdma_cm"

// notLoaded is the before-value of a setting rdma_cm cannot show yet.
const notLoaded = "(rdma_cm not loaded)"

// Kernel strings of the two RoCE versions.
const (
	ModeV1 = "IB/RoCE v1"
	ModeV2 = "RoCE v2"
)

// KernelMode maps a spec mode (v1, v2) to the kernel string.
func KernelMode(m string) string {
	switch m {
	case "v1":
		return ModeV1
	case "v2":
		return ModeV2
	}
	return ""
}

// SpecMode maps a kernel string to the spec mode; unknown text is kept.
func SpecMode(k string) string {
	switch k {
	case ModeV1:
		return "v1"
	case ModeV2:
		return "v2"
	}
	return k
}

// Provider is the rdma_cm provider.
type Provider struct{}

var _ plan.TypedProvider[*Observed, *payload] = (*Provider)(nil)

// New is the provider as plan.Build and apply take it.
func New() plan.Provider { return plan.Adapt[*Observed, *payload](&Provider{}) }

// Name implements plan.Provider.
func (*Provider) Name() string { return "rdma_cm" }

// PortValues is what configfs says of one port.
type PortValues struct {
	Mode string // kernel string, e.g. "RoCE v2"
	Tos  int
}

// Observed maps "dev/port" to its values.
type Observed struct {
	Ports map[string]PortValues
	// NotLoaded: rdma_cm's configfs directory is absent (module not loaded
	// or configfs not mounted). Discovery does not load or mount anything,
	// so a plan leaves no trace; apply does, as an operator would.
	NotLoaded bool `json:",omitempty"`
}

func key(dev string, port int) string { return fmt.Sprintf("%s/%d", dev, port) }

// Kind is the kind of this provider's addresses.
const Kind = "rdma_cm"

// Address is the plan address of one port's rdma_cm defaults.
func Address(dev string, port int) plan.Address { return plan.Addr(Kind, key(dev, port)) }

type target struct {
	dev  string
	port int
	// specPath is the spec path of the port's roce block.
	specPath string
	devIndex int
	mode     string // spec form, "" = not managed
	tos      *int
}

func targets(req *plan.Request) []target {
	if req.Full {
		return showTargets(req)
	}
	var out []target
	for i, d := range req.Spec.Devices {
		for j, p := range d.Ports {
			if p.Roce == nil {
				continue
			}
			name := d.Name
			if req.Devices[i] != nil {
				name = req.Devices[i].Name
			}
			if name == "" {
				continue // unresolved; the engine reported it
			}
			out = append(out, target{
				dev: name, port: p.Port, devIndex: i,
				specPath: schema.Path("devices", i, "ports", j, "roce"),
				mode:     p.Roce.Mode, tos: p.Roce.Tos,
			})
		}
	}
	return out
}

// showTargets is the scope of show: every port that is Ethernet now.
func showTargets(req *plan.Request) []target {
	var out []target
	for _, p := range req.PortsOf(linklayer.Ethernet) {
		out = append(out, target{dev: p.Device.Name, port: p.Port.Num, devIndex: p.Index})
	}
	return out
}

// Observe implements plan.TypedProvider. It reads every managed port's values;
// a device group rdmaform had to create for reading is removed again
// (withGroups: also with other rdmaform processes reading or applying).
// Without rdma_cm in configfs show has nothing to read, and neither has a
// plan (NotLoaded): Observe loads and mounts nothing.
func (p *Provider) Observe(ctx context.Context, h *host.Host, req *plan.Request) (*Observed, error) {
	ts := targets(req)
	if len(ts) == 0 {
		return nil, nil
	}
	obs := &Observed{Ports: map[string]PortValues{}}
	if !host.Exists(h.FS, Root) {
		if h.Offline() && !req.Full {
			return nil, fmt.Errorf("%s does not exist in this tree (nothing is mounted or loaded under --root)", Root)
		}
		obs.NotLoaded = true
		return obs, nil
	}
	byDev := map[string][]int{}
	var devs []string
	for _, t := range ts {
		if req.Inv.Device(t.dev) == nil {
			continue // created later in this plan (rxe)
		}
		if _, ok := byDev[t.dev]; !ok {
			devs = append(devs, t.dev)
		}
		byDev[t.dev] = append(byDev[t.dev], t.port)
	}
	sort.Strings(devs)
	// A device the names stage renames has its group under its name now.
	now := make([]string, len(devs))
	for i, dev := range devs {
		now[i] = req.RDMANow(dev)
	}
	err := withGroups(ctx, h, now, func() error {
		for _, dev := range devs {
			for _, port := range byDev[dev] {
				v, err := readPort(h, path.Join(Root, req.RDMANow(dev)), port)
				if errors.Is(err, fs.ErrNotExist) {
					continue // no such port; Plan reports it from the inventory
				}
				if err != nil {
					return err
				}
				obs.Ports[key(dev, port)] = v
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return obs, nil
}

// Ensure makes /sys/kernel/config/rdma_cm appear, as an operator does by
// hand: load and mount configfs, modprobe rdma_cm. Apply does it before
// its first rdma_cm write, and apply --confirm-timeout before it records
// the values its rollback puts back.
//
// Equivalent to: modprobe configfs; mount -t configfs none /sys/kernel/config; modprobe rdma_cm
func Ensure(ctx context.Context, h *host.Host) error {
	if host.Exists(h.FS, Root) {
		return nil
	}
	if h.Offline() {
		return fmt.Errorf("%s does not exist in this tree (nothing is mounted or loaded under --root)", Root)
	}
	if err := h.EnsureConfigfs(ctx); err != nil {
		return err
	}
	if host.Exists(h.FS, Root) {
		return nil
	}
	if err := h.Modprobe(ctx, "rdma_cm"); err != nil {
		return fmt.Errorf("loading rdma_cm: %w", err)
	}
	if !host.Exists(h.FS, Root) {
		return fmt.Errorf("%s is missing after modprobe rdma_cm: this kernel's rdma_cm has no configfs support (CONFIG_INFINIBAND_ADDR_TRANS_CONFIGFS)", Root)
	}
	return nil
}

// groupWait is how long a process that made configfs groups for its
// reads or writes waits, once done, for the others using groups to finish
// before it removes them; past it they stay (see withGroups). A variable
// for tests.
var groupWait = 5 * time.Second

// withGroups runs fn with the configfs groups of devs present.
//
// A group (/sys/kernel/config/rdma_cm/DEV) is only a view: the kernel
// keeps a port's values whether it exists or not, and keeps them across
// an rmdir; a second mkdir fails with EEXIST (reference/kernel-lab.md).
// But it is one directory for the whole host, and plans, audits and shows
// beside an apply (a metrics timer, an Ansible check run, an operator)
// all need it, so making and removing it is shared by a host-wide lock,
// an flock(2) on rdma_cm's configfs directory itself (nothing to create,
// no trace; the kernel drops it when its holder dies):
//
//   - every user, reader or apply alike, holds the lock shared while it
//     uses groups, so any number of them run at once: the apply's writes
//     need only what readers need, the group to stay while it is used;
//   - a group that is missing is made; EEXIST means another process made
//     it meanwhile: it is used, and is not this process's to remove;
//   - a process removes only the groups it made, and only under the lock
//     held exclusively, that is once no one else uses any group; it waits
//     for that up to groupWait, then leaves them in place (a view, which
//     changes nothing) rather than delay its caller further;
//   - a group that was there before (the operator's) is never removed.
//
// A lone plan therefore leaves the host as it found it, as before.
//
// Equivalent to: flock -s rdma_cm mkdir /sys/kernel/config/rdma_cm/DEV; ...;
// flock -x rdma_cm rmdir /sys/kernel/config/rdma_cm/DEV
func withGroups(ctx context.Context, h *host.Host, devs []string, fn func() error) (err error) {
	lk, err := host.OpenFlock(h.FS, Root)
	if err != nil {
		return err
	}
	defer lk.Close()
	if err := lk.Shared(ctx); err != nil {
		return err
	}
	var made []string
	defer func() {
		lk.Unlock()
		if len(made) == 0 {
			return
		}
		if ok, lerr := lk.Exclusive(context.WithoutCancel(ctx), groupWait); lerr != nil || !ok {
			return // others still use groups: the ones made here stay
		}
		for _, group := range made {
			if rerr := h.FS.Remove(group); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
				err = fmt.Errorf("rmdir %s: %w", group, rerr)
			}
		}
	}()
	for _, dev := range devs {
		group := path.Join(Root, dev)
		if host.Exists(h.FS, group) {
			continue
		}
		if err := h.FS.Mkdir(group, 0o755); err != nil {
			switch {
			case errors.Is(err, fs.ErrExist):
				continue // made by another process just now
			case errors.Is(err, syscall.ENODEV):
				return fmt.Errorf("mkdir %s: the kernel has no RDMA device %s", group, dev)
			}
			return fmt.Errorf("mkdir %s: %w", group, err)
		}
		made = append(made, group)
	}
	return fn()
}

// withGroup runs fn with one device's configfs group present (withGroups).
func withGroup(ctx context.Context, h *host.Host, dev string, fn func(group string) error) error {
	return withGroups(ctx, h, []string{dev}, func() error { return fn(path.Join(Root, dev)) })
}

func readPort(h *host.Host, group string, port int) (PortValues, error) {
	dir := path.Join(group, "ports", strconv.Itoa(port))
	mode, err := host.ReadAttr(h.FS, path.Join(dir, "default_roce_mode"))
	if err != nil {
		return PortValues{}, err
	}
	tosS, err := host.ReadAttr(h.FS, path.Join(dir, "default_roce_tos"))
	if err != nil {
		return PortValues{}, err
	}
	tos, err := strconv.Atoi(strings.TrimSpace(tosS))
	if err != nil {
		return PortValues{}, fmt.Errorf("%s/default_roce_tos: %q is not a number", dir, tosS)
	}
	return PortValues{Mode: mode, Tos: tos}, nil
}

// payload is what Apply needs.
type payload struct {
	dev  string
	port int
	mode string // kernel string or ""
	tos  *int
	// before holds the values the change replaces (nil for a device the
	// plan creates), for Revert.
	before *PortValues
	// reregistered: the values are set again on a card the plan registers
	// anew (an mlx4 port type), so Revert puts them back after the undo
	// of that, which registers the card anew once more.
	reregistered bool
}

// ReadPort reads a port's rdma_cm defaults (default_roce_mode and
// default_roce_tos) through configfs, making the device's group for the
// read as a plan does. It neither loads rdma_cm nor mounts configfs:
// without them it fails.
func ReadPort(ctx context.Context, h *host.Host, dev string, port int) (PortValues, error) {
	var v PortValues
	err := withGroup(ctx, h, dev, func(group string) error {
		var err error
		v, err = readPort(h, group, port)
		return err
	})
	return v, err
}
