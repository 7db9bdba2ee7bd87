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

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
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

var _ plan.Provider = (*Provider)(nil)

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
func Address(dev string, port int) string { return plan.Addr(Kind, key(dev, port)) }

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
				specPath: fmt.Sprintf("$.devices[%d].ports[%d].roce", i, j),
				mode:     p.Roce.Mode, tos: p.Roce.Tos,
			})
		}
	}
	return out
}

// Discover implements plan.Provider. It reads every managed port's values;
// a device group rdmaform had to create for reading is removed again.
func (p *Provider) Discover(ctx context.Context, h *host.Host, req *plan.Request) (any, error) {
	ts := targets(req)
	if len(ts) == 0 {
		return nil, nil
	}
	obs := &Observed{Ports: map[string]PortValues{}}
	if !host.Exists(h.FS, Root) {
		if h.Offline() {
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
	for _, dev := range devs {
		err := withGroup(h, dev, func(group string) error {
			for _, port := range byDev[dev] {
				v, err := readPort(h, group, port)
				if errors.Is(err, fs.ErrNotExist) {
					continue // no such port; Diff reports it from the inventory
				}
				if err != nil {
					return err
				}
				obs.Ports[key(dev, port)] = v
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return obs, nil
}

// ensureRdmaCM makes /sys/kernel/config/rdma_cm appear, as an operator
// does by hand: mount configfs, modprobe rdma_cm.
func ensureRdmaCM(ctx context.Context, h *host.Host) error {
	if host.Exists(h.FS, Root) {
		return nil
	}
	if h.Offline() {
		return fmt.Errorf("%s does not exist in this tree (nothing is mounted or loaded under --root)", Root)
	}
	if err := h.Kernel.EnsureConfigfs(); err != nil {
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

// withGroup runs fn with the device's configfs group present, creating it
// if needed and removing it afterwards only if it was created here: the
// values stay in the kernel, the directory is only a view.
//
// Equivalent to: mkdir /sys/kernel/config/rdma_cm/DEV; ...; rmdir /sys/kernel/config/rdma_cm/DEV
func withGroup(h *host.Host, dev string, fn func(group string) error) (err error) {
	group := path.Join(Root, dev)
	if !host.Exists(h.FS, group) {
		if err := h.FS.Mkdir(group, 0o755); err != nil {
			if errors.Is(err, syscall.ENODEV) {
				return fmt.Errorf("mkdir %s: the kernel has no RDMA device %s", group, dev)
			}
			return fmt.Errorf("mkdir %s: %w", group, err)
		}
		defer func() {
			if rerr := h.FS.Remove(group); rerr != nil && err == nil {
				err = fmt.Errorf("rmdir %s: %w", group, rerr)
			}
		}()
	}
	return fn(group)
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
}

// Diff implements plan.Provider.
func (p *Provider) Diff(req *plan.Request, observed any, facts *plan.Facts) plan.Proposal {
	obs, _ := observed.(*Observed)
	if obs == nil {
		obs = &Observed{} // nothing read: every value is planned
	}
	prop := diff(req, obs, facts)
	for _, t := range targets(req) {
		prop.Managed = append(prop.Managed, plan.Managed{Address: Address(t.dev, t.port), Path: t.specPath})
	}
	return prop
}

func diff(req *plan.Request, obs *Observed, facts *plan.Facts) plan.Proposal {
	var prop plan.Proposal
	for _, t := range targets(req) {
		addr := Address(t.dev, t.port)
		dev := req.Inv.Device(t.dev)
		pl := &payload{dev: t.dev, port: t.port, mode: KernelMode(t.mode), tos: t.tos}
		// A device the plan (re)creates (an rxe link made or moved to
		// another netdev) starts with the kernel's defaults: everything is
		// set after it, whatever the old device had.
		rxeAddr, created := facts.DeviceCreated(t.dev)
		if created {
			dev = nil
		}
		if dev == nil {
			// A device this plan creates (rxe): everything is set after it.
			if !created {
				// The missing device is already a finding: the engine's (no
				// such device) or the rxe entry's (why it cannot be made).
				continue
			}
			if t.port != 1 {
				prop.Errors = append(prop.Errors, req.Finding(t.specPath, "%s is a Soft-RoCE device with one port; there is no port %d", t.dev, t.port))
				continue
			}
			if t.mode == "v1" {
				// rdma_rxe makes RoCE v2 GIDs only; the kernel refuses v1.
				prop.Errors = append(prop.Errors, req.Finding(t.specPath+".mode", "%s is a Soft-RoCE device: its GIDs are RoCE v2 only, so the kernel refuses RoCE v1 as its default; use mode: v2", t.dev))
				continue
			}
			c := &plan.Change{Address: addr, Action: plan.Create, Activation: plan.Runtime, Source: req.Pos(t.specPath), DependsOn: []string{rxeAddr}, Payload: pl}
			if t.mode != "" {
				c.Attributes = append(c.Attributes, plan.Attr{Name: "mode", After: t.mode})
			}
			if t.tos != nil {
				c.Attributes = append(c.Attributes, plan.Attr{Name: "tos", After: strconv.Itoa(*t.tos)})
			}
			prop.Changes = append(prop.Changes, c)
			continue
		}
		port := dev.Port(t.port)
		if port == nil {
			prop.Errors = append(prop.Errors, req.Finding(t.specPath, "%s has no port %d (ports: %s)", t.dev, t.port, portList(dev)))
			continue
		}
		if t.mode == "v2" && dev.HCAType == inventory.ConnectX3 {
			// The seeds: RoCE v2 is the default from RHEL 7.5 on every
			// adapter but the ConnectX-3 that is not a Pro, which has
			// RoCE v1 only (its GIDs say so too).
			prop.Errors = append(prop.Errors, req.Finding(t.specPath+".mode", "%s is a ConnectX-3 (%s, PCI device 0x1003), not a ConnectX-3 Pro: it has RoCE v1 only, which is also its default; use mode: v1 (and v1 on the clients that connect to it)", t.dev, dev.HCAType))
			continue
		}
		// An mlx4 port type written in this plan changes the link layer now;
		// the port's RDMA device comes back with the kernel's defaults.
		if mc, ok := facts.LinkNow(dev.PCI, t.port); ok {
			if mc.To != linklayer.Ethernet {
				prop.Errors = append(prop.Errors, req.Finding(t.specPath, "port %d of %s becomes InfiniBand in this plan (%s); RoCE settings need an Ethernet port", t.port, t.dev, mc.Cause))
				continue
			}
			if port.LinkLayer != linklayer.Ethernet {
				c := &plan.Change{Address: addr, Action: plan.Create, Activation: plan.Runtime, Source: req.Pos(t.specPath), DependsOn: []string{mc.Cause}, Payload: pl}
				if t.mode != "" {
					c.Attributes = append(c.Attributes, plan.Attr{Name: "mode", After: t.mode})
				}
				if t.tos != nil {
					c.Attributes = append(c.Attributes, plan.Attr{Name: "tos", After: strconv.Itoa(*t.tos)})
				}
				prop.Changes = append(prop.Changes, c)
				continue
			}
		}
		if staged, ok := facts.LinkAtBoot(dev.PCI, t.port); ok {
			if staged.To == linklayer.Ethernet && port.LinkLayer != linklayer.Ethernet {
				prop.Deferred = append(prop.Deferred, plan.Deferred{Address: addr, Reason: staged.Reason(), Source: req.Pos(t.specPath)})
				continue
			}
			if staged.To != linklayer.Ethernet {
				prop.Errors = append(prop.Errors, req.Finding(t.specPath, "port %d of %s becomes %s at the next boot (%s); RoCE settings need an Ethernet port", t.port, t.dev, staged.To, staged.Setting))
				continue
			}
		}
		if port.LinkLayer != linklayer.Ethernet {
			prop.Errors = append(prop.Errors, req.Finding(t.specPath, "port %d of %s has link layer %s; RoCE settings need an Ethernet port (a VPI adapter switches with firmware LINK_TYPE_P%d: ETH)", t.port, t.dev, port.LinkLayer, t.port))
			continue
		}
		if t.mode != "" && len(port.GIDs) > 0 && !port.Supports(KernelMode(t.mode)) {
			// The kernel takes a default RoCE mode only when the port has a
			// GID of that type (EINVAL otherwise): say so at plan time.
			prop.Errors = append(prop.Errors, req.Finding(t.specPath+".mode", "port %d of %s has no %s GID (its GID types: %s), so the kernel refuses RoCE %s as its default", t.port, t.dev, KernelMode(t.mode), gidTypes(port), t.mode))
			continue
		}
		if obs.NotLoaded {
			// Nothing to read until rdma_cm is loaded: every managed value is
			// set by apply, which loads it first.
			c := &plan.Change{Address: addr, Action: plan.Update, Activation: plan.Runtime, Source: req.Pos(t.specPath), Payload: pl}
			if t.mode != "" {
				c.Attributes = append(c.Attributes, plan.Attr{Name: "mode", Before: notLoaded, After: t.mode})
			}
			if t.tos != nil {
				c.Attributes = append(c.Attributes, plan.Attr{Name: "tos", Before: notLoaded, After: strconv.Itoa(*t.tos)})
			}
			prop.Changes = append(prop.Changes, c)
			continue
		}
		have, ok := obs.Ports[key(t.dev, t.port)]
		if !ok {
			prop.Errors = append(prop.Errors, req.Finding(t.specPath, "configfs shows no port %d for %s", t.port, t.dev))
			continue
		}
		var attrs []plan.Attr
		if t.mode != "" && KernelMode(t.mode) != have.Mode {
			attrs = append(attrs, plan.Attr{Name: "mode", Before: SpecMode(have.Mode), After: t.mode})
		}
		if t.tos != nil && *t.tos != have.Tos {
			attrs = append(attrs, plan.Attr{Name: "tos", Before: strconv.Itoa(have.Tos), After: strconv.Itoa(*t.tos)})
		}
		if len(attrs) == 0 {
			continue
		}
		was := have
		pl.before = &was
		prop.Changes = append(prop.Changes, &plan.Change{Address: addr, Action: plan.Update, Activation: plan.Runtime,
			Source: req.Pos(t.specPath), Attributes: attrs, Payload: pl})
	}
	return prop
}

// gidTypes lists the GID types of a port's table, e.g. "RoCE v2".
func gidTypes(p *inventory.Port) string {
	seen := map[string]bool{}
	var out []string
	for _, g := range p.GIDs {
		if !seen[g.Type] {
			seen[g.Type] = true
			out = append(out, g.Type)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func portList(d *inventory.Device) string {
	var s []string
	for _, p := range d.Ports {
		s = append(s, strconv.Itoa(p.Num))
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// Apply implements plan.Provider: it writes the port's values and reads
// them back.
//
// Equivalent to: echo "RoCE v2" > /sys/kernel/config/rdma_cm/DEV/ports/N/default_roce_mode
// and: echo 106 > /sys/kernel/config/rdma_cm/DEV/ports/N/default_roce_tos
func (p *Provider) Apply(ctx context.Context, h *host.Host, c *plan.Change) error {
	pl, ok := c.Payload.(*payload)
	if !ok {
		return fmt.Errorf("%s: no rdma_cm payload", c.Address)
	}
	if err := ensureRdmaCM(ctx, h); err != nil {
		return err
	}
	return withGroup(h, pl.dev, func(group string) error {
		dir := path.Join(group, "ports", strconv.Itoa(pl.port))
		if pl.before == nil {
			// The plan could not read them (rdma_cm was not loaded, or the
			// device is new): record what this write replaces, for Revert.
			if cur, err := readPort(h, group, pl.port); err == nil {
				pl.before = &cur
			}
		}
		if pl.mode != "" {
			f := path.Join(dir, "default_roce_mode")
			if err := h.FS.WriteAttr(f, []byte(pl.mode+"\n")); err != nil {
				if errors.Is(err, syscall.EINVAL) {
					return fmt.Errorf("echo %q > %s: the kernel refused it (EINVAL): port %d of %s does not support %s", pl.mode, f, pl.port, pl.dev, pl.mode)
				}
				return fmt.Errorf("echo %q > %s: %w", pl.mode, f, err)
			}
		}
		if pl.tos != nil {
			f := path.Join(dir, "default_roce_tos")
			if err := h.FS.WriteAttr(f, []byte(strconv.Itoa(*pl.tos)+"\n")); err != nil {
				return fmt.Errorf("echo %d > %s: %w", *pl.tos, f, err)
			}
		}
		got, err := readPort(h, group, pl.port)
		if err != nil {
			return err
		}
		if pl.mode != "" && got.Mode != pl.mode {
			return fmt.Errorf("%s/default_roce_mode reads %q after writing %q", dir, got.Mode, pl.mode)
		}
		if pl.tos != nil && got.Tos != *pl.tos {
			return fmt.Errorf("%s/default_roce_tos reads %d after writing %d", dir, got.Tos, *pl.tos)
		}
		return nil
	})
}

var _ plan.Reverter = (*Provider)(nil)

// Revert implements plan.Reverter: it writes back the values the change
// replaced. Settings of a device the plan created go with the device.
func (p *Provider) Revert(c *plan.Change) (*plan.Change, error) {
	pl, ok := c.Payload.(*payload)
	if !ok {
		return nil, fmt.Errorf("%s: no rdma_cm payload", c.Address)
	}
	if pl.before == nil {
		return nil, nil
	}
	back := &payload{dev: pl.dev, port: pl.port, before: &PortValues{}}
	var attrs []plan.Attr
	if pl.mode != "" {
		back.mode = pl.before.Mode
		attrs = append(attrs, plan.Attr{Name: "mode", Before: SpecMode(pl.mode), After: SpecMode(pl.before.Mode)})
	}
	if pl.tos != nil {
		tos := pl.before.Tos
		back.tos = &tos
		attrs = append(attrs, plan.Attr{Name: "tos", Before: strconv.Itoa(*pl.tos), After: strconv.Itoa(tos)})
	}
	return &plan.Change{Address: c.Address, Action: plan.Update, Activation: c.Activation, Provider: c.Provider, Attributes: attrs, Payload: back}, nil
}
