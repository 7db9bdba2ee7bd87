// Package mlx4port sets the port type of mlx4 (ConnectX-3) VPI ports
// through sysfs: /sys/bus/pci/devices/<bdf>/mlx4_port<N> takes ib, eth or
// auto. The driver applies it at once and forgets it at reboot (the boot
// type comes from the module options or /etc/rdma/mlx4.conf), so it is a
// runtime setting.
package mlx4port

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Provider is the mlx4 port type provider.
type Provider struct{}

var _ plan.TypedProvider[*Observed, *payload] = (*Provider)(nil)

// New is the provider as plan.Build and apply take it.
func New() plan.Provider { return plan.Adapt[*Observed, *payload](&Provider{}) }

// Name implements plan.Provider.
func (*Provider) Name() string { return "mlx4_port" }

// Kind is the kind of this provider's addresses.
const Kind = "mlx4_port"

// Address is the plan address of one mlx4 port's type.
func Address(pci string, port int) plan.Address { return plan.Addr(Kind, pci+"/"+strconv.Itoa(port)) }

// File is the sysfs attribute of a port's type.
func File(pci string, port int) string {
	return path.Join(inventory.BusPCI, pci, "mlx4_port"+strconv.Itoa(port))
}

// State is what mlx4_portN reads.
type State struct {
	// Setting is ib, eth or auto.
	Setting string
	// Effective is ib or eth, "" while an auto port is not yet detected.
	Effective string
}

// ParseState reads mlx4_portN: "ib", "eth", "auto (ib)", "auto (eth)",
// "not detected" or "auto (not detected)" (formats.md §3.4).
func ParseState(s string) (State, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "ib", "eth":
		return State{Setting: s, Effective: s}, nil
	case "not detected", "auto (not detected)":
		return State{Setting: "auto"}, nil
	case "auto (ib)":
		return State{Setting: "auto", Effective: "ib"}, nil
	case "auto (eth)":
		return State{Setting: "auto", Effective: "eth"}, nil
	}
	return State{}, fmt.Errorf("unknown mlx4 port type %q", s)
}

// Observed maps "PCI/N" to the state of each port that has mlx4_portN.
type Observed struct {
	Ports map[string]State
}

func key(pci string, port int) string { return fmt.Sprintf("%s/%d", pci, port) }

type target struct {
	pci  string
	dev  string
	port int
	// card is the card's physical port (firmware's LINK_TYPE_Pn).
	card     int
	want     string
	specPath string
}

func targets(req *plan.Request) []target {
	var out []target
	for i, d := range req.Spec.Devices {
		dev := req.Devices[i]
		if dev == nil {
			continue
		}
		for j, p := range d.Ports {
			if p.Type == "" {
				continue
			}
			out = append(out, target{pci: dev.PCI, dev: dev.Name, port: p.Port, card: dev.CardPort(p.Port), want: p.Type,
				specPath: schema.Path("devices", i, "ports", j, "type")})
		}
	}
	return out
}

// Observe implements plan.TypedProvider: it reads mlx4_portN of every port of
// every device the spec sets a type on (both ports: the pair constrains
// each other), or of every PCI device for show (Request.Full).
//
// Equivalent to: cat /sys/bus/pci/devices/0000:81:00.0/mlx4_port1
func (p *Provider) Observe(ctx context.Context, h *host.Host, req *plan.Request) (*Observed, error) {
	var devs []*inventory.Device
	if req.Full {
		devs = req.Inv.Devices
	} else {
		for _, t := range targets(req) {
			devs = append(devs, req.Inv.Device(t.dev))
		}
		if len(devs) == 0 {
			return nil, nil
		}
	}
	obs := &Observed{Ports: map[string]State{}}
	done := map[string]bool{}
	for _, dev := range devs {
		if dev == nil || dev.PCI == "" || done[dev.PCI] {
			continue
		}
		done[dev.PCI] = true
		for _, port := range dev.Ports {
			s, err := host.ReadAttr(h.FS, File(dev.PCI, port.Num))
			if errors.Is(err, fs.ErrNotExist) {
				continue // not an mlx4 port; Plan says so
			}
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", File(dev.PCI, port.Num), err)
			}
			st, err := ParseState(s)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", File(dev.PCI, port.Num), err)
			}
			obs.Ports[key(dev.PCI, port.Num)] = st
		}
	}
	return obs, nil
}

// payload is what Apply needs: the port and, for the order of writes, the
// type this plan gives the device's other port.
type payload struct {
	pci   string
	dev   string // the RDMA device (mlx4_0)
	port  int
	want  string
	other string // the other port's desired setting in this plan, "" if unchanged
	// was is the port's setting now and otherWas the other port's when
	// this plan changes it too, wasEff and otherWasEff the types they
	// run: for Revert.
	was, otherWas, wasEff, otherWasEff string
	// via, with otherVia for the other port, is a type written before
	// want (a revert to auto first restores the type auto had detected).
	via, otherVia string
}

func read(h *host.Host, pci string, port int) (State, error) {
	s, err := host.ReadAttr(h.FS, File(pci, port))
	if err != nil {
		return State{}, fmt.Errorf("reading %s: %w", File(pci, port), err)
	}
	st, err := ParseState(s)
	if err != nil {
		return State{}, fmt.Errorf("%s: %w", File(pci, port), err)
	}
	return st, nil
}

// settle is how long a port type may take to show after a write: the
// driver re-registers the port (rdma-core's script polls 10 × 0.25 s).
const (
	settleTries = 10
	settleWait  = 250 * time.Millisecond
)
