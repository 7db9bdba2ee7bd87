package plan

import (
	"context"
	"errors"
	"fmt"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/schema"
)

// Captured is a host described as a spec, and the inventory it was made
// from (show prints each adapter's identity from it).
type Captured struct {
	Spec *schema.Spec
	Inv  *inventory.Inventory
	// Notes are what the capture left out on purpose, by device index.
	Notes *CaptureNotes
}

// Capture describes the host as a spec (rdmaform show, the golden config
// an audit compares with): its hostname and one device per
// RDMA device (PCI adapters by PCI address, software devices by name) with
// its ports, their link layer and, under expect, their state, physical
// state and rate; then each provider that is a TypedCapturer adds its
// part, from what its Observe reads with the full scope (Request.Full),
// in stage order (firmware first: a staged link type sets the link layer
// RoCE capture reads). Applying the result to the same host
// plans nothing, pending reboots aside.
//
// Two sections claim one netdev only once: an interface NetworkManager
// runs an IPoIB connection on is left to the ipoib section.
func Capture(ctx context.Context, h *host.Host, providers []Provider, o CaptureOptions) (*Captured, error) {
	inv, err := inventory.Discover(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("reading RDMA devices from sysfs: %w", err)
	}
	spec := &schema.Spec{Version: schema.Version}
	if name, err := h.Hostname(); err == nil && name != "" {
		spec.Host = &schema.HostSpec{Hostname: name}
	}
	req := &Request{Spec: spec, Inv: inv}
	for _, d := range inv.Devices {
		dev := schema.Device{PCI: d.PCI}
		if d.PCI == "" {
			dev.Name = d.Name
		}
		for _, p := range d.Ports {
			dev.Ports = append(dev.Ports, capturePort(p))
		}
		spec.Devices = append(spec.Devices, dev)
		req.Devices = append(req.Devices, d)
	}
	// A section that cannot be read (a firmware tool that fails, no
	// NetworkManager) is left out and reported; the rest is still captured,
	// so an operator gets what can be had and a non-zero exit.
	var errs []error
	if o.Notes == nil {
		o.Notes = &CaptureNotes{}
	}
	for _, pr := range providers {
		c, ok := pr.(capturer)
		if !ok {
			continue
		}
		if err := c.capture(ctx, h, req, spec, o); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", pr.Name(), err))
		}
	}
	spec.Interfaces = unclaimed(spec)
	return &Captured{Spec: spec, Inv: inv, Notes: o.Notes}, errors.Join(errs...)
}

// capturePort is a port as sysfs shows it: link layer, and under expect
// its state, physical state and rate (whole Gb/s, rounded down).
func capturePort(p *inventory.Port) schema.Port {
	sp := schema.Port{Port: p.Num}
	if p.LinkLayer == linklayer.InfiniBand || p.LinkLayer == linklayer.Ethernet {
		sp.LinkLayer = p.LinkLayer
	}
	e := &schema.Expect{}
	if p.State.Known() {
		e.State = p.State
	}
	if p.PhysState.Known() {
		e.PhysState = p.PhysState
	}
	if r := int(p.RateGbps()); r >= 1 {
		e.MinRate = &r
	}
	if *e != (schema.Expect{}) {
		sp.Expect = e
	}
	return sp
}

// capturer is a provider that can take part in show: an adapted typed
// provider, which captures when it is a TypedCapturer.
type capturer interface {
	capture(ctx context.Context, h *host.Host, req *Request, spec *schema.Spec, o CaptureOptions) error
}

// unclaimed returns the spec's interfaces without those an ipoib entry
// owns (one netdev is configured by one section).
func unclaimed(spec *schema.Spec) []schema.Interface {
	owned := map[string]bool{}
	for i := range spec.IPoIB {
		if spec.IPoIB[i].State != "absent" {
			owned[spec.IPoIB[i].Interface()] = true
		}
	}
	var out []schema.Interface
	for _, it := range spec.Interfaces {
		if !owned[it.Name] {
			out = append(out, it)
		}
	}
	return out
}
