// Package acs manages the ACS (Access Control Services) of the PCI
// bridges on the path between an RDMA device's PCI function and the
// GPUs (devices[].acs): with ACS P2P Request Redirect, Completion
// Redirect or Egress Control on, a switch port sends GPUDirect RDMA's
// peer-to-peer traffic up to the root complex, which is slow and may
// hang. It walks the extended capabilities of each bridge's
// /sys/bus/pci/devices/BDF/config to the ACS capability (ID 0x000D),
// reads its Control register at capability+6 and writes it in place,
// the bits it does not manage as read, and reads it back. The kernel
// sets ACS at every boot (pci_enable_acs), so the boot unit sets it
// again; the plan says so on each change.
package acs

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Provider is the ACS provider.
type Provider struct{}

var _ plan.TypedProvider[*Observed, *payload] = (*Provider)(nil)

// New is the provider as plan.Build and apply take it.
func New() plan.Provider { return plan.Adapt[*Observed, *payload](&Provider{}) }

// Name implements plan.Provider.
func (*Provider) Name() string { return "acs" }

// Kind is the kind of this provider's addresses.
const Kind = "acs"

// Address is the plan address of one bridge's ACS Control:
// acs[0000:17:00.0].
func Address(bridge string) plan.Address { return plan.Addr(Kind, bridge) }

// ConfigPath is a PCI function's config space in sysfs.
func ConfigPath(pci string) string { return "/sys/bus/pci/devices/" + pci + "/config" }

// Observed is the ACS capability of each bridge read, by PCI address.
type Observed struct {
	Bridges map[string]Cap
	// Funcs are the PCI functions a spec entry names that are no RDMA
	// device (a GPU, the virtio NIC under Soft-RoCE), with their paths,
	// by PCI address; a function not there is in Errs.
	Funcs map[string]*inventory.Device `json:",omitempty"`
	// Errs are bridges whose config space could not be read or walked.
	Errs map[string]string `json:",omitempty"`
}

// peerPaths are the GPUs below d's host bridge (PIX, PXB, PHB) and the
// rest (NODE, SYS), whose paths leave it.
func peerPaths(d *inventory.Device) (near, far []inventory.Affinity) {
	for _, a := range d.GPUAffinity {
		if a.Relation.BelowHostBridge() {
			near = append(near, a)
		} else {
			far = append(far, a)
		}
	}
	return near, far
}

// onPaths is every bridge above d and between d and a GPU below its host
// bridge: the bridges acs.bridges may name.
func onPaths(d *inventory.Device) []string {
	out := append([]string(nil), d.Bridges...)
	near, _ := peerPaths(d)
	for _, a := range near {
		out = append(out, a.Bridges...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Observe implements plan.TypedProvider: the config space of every
// bridge on the paths of each device with an acs block, read whole and
// walked. Nothing is written.
//
// Equivalent to: setpci -s BRIDGE ECAP_ACS+6.w
func (p *Provider) Observe(_ context.Context, h *host.Host, req *plan.Request) (*Observed, error) {
	var bridges []string
	if req.Full {
		// show: the bridges on every device's paths to its GPUs.
		for _, d := range req.Devices {
			if d == nil {
				continue
			}
			near, _ := peerPaths(d)
			for _, a := range near {
				bridges = append(bridges, a.Bridges...)
			}
		}
	}
	obs := &Observed{Bridges: map[string]Cap{}, Funcs: map[string]*inventory.Device{}, Errs: map[string]string{}}
	if !req.Full {
		for i, d := range req.Spec.Devices {
			if d.ACS == nil {
				continue
			}
			dev := req.Devices[i]
			if dev == nil && d.PCIeOnly() {
				dev = function(h, req.Inv, schema.NormalizePCI(d.PCI), obs)
			}
			if dev != nil {
				bridges = append(bridges, onPaths(dev)...)
			}
		}
	}
	if len(bridges) == 0 && len(obs.Funcs) == 0 && len(obs.Errs) == 0 {
		return nil, nil
	}
	sort.Strings(bridges)
	for _, b := range slices.Compact(bridges) {
		c, err := read(h, b)
		if err != nil {
			obs.Errs[b] = err.Error()
			continue
		}
		obs.Bridges[b] = c
	}
	return obs, nil
}

// function reads the path of a PCI function that is no RDMA device into
// obs, and returns it; nil when it is not there (obs.Errs says why).
func function(h *host.Host, inv *inventory.Inventory, pci string, obs *Observed) *inventory.Device {
	if pci == "" {
		return nil
	}
	if d, ok := obs.Funcs[pci]; ok {
		return d
	}
	if inv == nil {
		inv = &inventory.Inventory{}
	}
	bridges, gpus, ok := inv.FunctionPath(h.FS, pci)
	if !ok {
		obs.Errs[pci] = "no PCI function " + pci + " in " + inventory.BusPCI + " (or its link names no host bridge)"
		return nil
	}
	d := &inventory.Device{Name: pci, PCI: pci, Bridges: bridges, GPUAffinity: gpus}
	obs.Funcs[pci] = d
	return d
}

// read reads and walks one function's config space.
func read(h *host.Host, pci string) (Cap, error) {
	b, err := h.FS.ReadFile(ConfigPath(pci))
	if err != nil {
		return Cap{}, err
	}
	c, err := ParseACS(b)
	if err != nil {
		return Cap{}, fmt.Errorf("%s: %w", ConfigPath(pci), err)
	}
	return c, nil
}

// payload is what Make needs: the bits of mask become value's.
type payload struct {
	bridge      string
	mask, value uint16
	// before is the control read at plan time, for Revert.
	before uint16
}

// specPath is a device's acs path.
func specPath(i int) string { return schema.Path("devices", i, "acs") }
