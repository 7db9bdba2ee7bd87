// Package pcie manages a PCI function's PCI Express settings that live in
// its config space: the Max Read Request Size (devices[].pcie), which
// operators set with setpci and lose at every boot. It walks the
// capability list of /sys/bus/pci/devices/BDF/config to the PCI Express
// capability (ID 0x10), reads Device Control at capability+8 and writes
// its bits 14:12 back in place, only on the functions the spec names,
// and reads the register back after writing. The value lives until the
// next boot (or reset of the function); the boot unit sets it again.
package pcie

import (
	"context"
	"fmt"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Provider is the PCI Express provider.
type Provider struct{}

var _ plan.TypedProvider[*Observed, *payload] = (*Provider)(nil)

// New is the provider as plan.Build and apply take it.
func New() plan.Provider { return plan.Adapt[*Observed, *payload](&Provider{}) }

// Name implements plan.Provider.
func (*Provider) Name() string { return "pcie" }

// Kind is the kind of this provider's addresses.
const Kind = "pcie"

// Address is the plan address of one PCI function's settings:
// pcie[0000:3b:00.0].
func Address(pci string) plan.Address { return plan.Addr(Kind, pci) }

// ConfigPath is a PCI function's config space in sysfs.
func ConfigPath(pci string) string { return "/sys/bus/pci/devices/" + pci + "/config" }

// Observed is what Observe read, by PCI address.
type Observed struct {
	Funcs map[string]*Func
	// Errs are functions whose config space could not be read or holds no
	// PCI Express capability, with why.
	Errs map[string]string `json:",omitempty"`
}

// Func is one function's Device Control register and where it is.
type Func struct {
	// Cap is the offset of the PCI Express capability.
	Cap    int
	DevCtl uint16
}

// MaxReadRequest is the Max Read Request Size Device Control encodes, in
// bytes; 0 for the reserved encodings 6 and 7.
func (f *Func) MaxReadRequest() int {
	code := int(f.DevCtl>>12) & 7
	if code > 5 {
		return 0
	}
	return 128 << code
}

// target is one function to read: its PCI address and spec path.
type target struct {
	pci, path, dev string
	index          int
}

// targets are the spec's devices with a pcie block and their PCI
// addresses, or for show every PCI function of the inventory
// (plan.DeviceTargets).
func targets(req *plan.Request) []target {
	var out []target
	for _, d := range plan.DeviceTargets(req, "pcie", func(d *schema.Device) bool { return d.PCIe != nil }) {
		out = append(out, target{pci: d.PCI, path: d.Path, dev: d.Dev, index: d.Index})
	}
	return out
}

// Observe implements plan.TypedProvider: each named function's config
// space, read whole and walked. Nothing is written.
//
// Equivalent to: setpci -s BDF CAP_EXP+8.w
func (p *Provider) Observe(_ context.Context, h *host.Host, req *plan.Request) (*Observed, error) {
	ts := targets(req)
	if len(ts) == 0 {
		return nil, nil
	}
	obs := &Observed{Funcs: map[string]*Func{}, Errs: map[string]string{}}
	for _, t := range ts {
		if t.pci == "" {
			continue // Plan says why
		}
		f, err := read(h, t.pci)
		if err != nil {
			obs.Errs[t.pci] = err.Error()
			continue
		}
		obs.Funcs[t.pci] = f
	}
	return obs, nil
}

// read reads and walks one function's config space.
func read(h *host.Host, pci string) (*Func, error) {
	b, err := h.FS.ReadFile(ConfigPath(pci))
	if err != nil {
		return nil, err
	}
	cap, devctl, err := ParseDevCtl(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ConfigPath(pci), err)
	}
	return &Func{Cap: cap, DevCtl: devctl}, nil
}

// payload is what Make needs.
type payload struct {
	pci    string
	want   int
	before int
}
