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
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
)

// Provider is the mlx4 port type provider.
type Provider struct{}

var _ plan.Provider = (*Provider)(nil)

// Name implements plan.Provider.
func (*Provider) Name() string { return "mlx4_port" }

// Kind is the kind of this provider's addresses.
const Kind = "mlx4_port"

// Address is the plan address of one mlx4 port's type.
func Address(pci string, port int) string { return plan.Addr(Kind, pci+"/"+strconv.Itoa(port)) }

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
	pci      string
	dev      string
	port     int
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
			out = append(out, target{pci: dev.PCI, dev: dev.Name, port: p.Port, want: p.Type,
				specPath: fmt.Sprintf("$.devices[%d].ports[%d].type", i, j)})
		}
	}
	return out
}

// Discover implements plan.Provider: it reads mlx4_portN of every port of
// every device the spec sets a type on (both ports: the pair constrains
// each other).
//
// Equivalent to: cat /sys/bus/pci/devices/0000:81:00.0/mlx4_port1
func (p *Provider) Discover(ctx context.Context, h *host.Host, req *plan.Request) (any, error) {
	ts := targets(req)
	if len(ts) == 0 {
		return nil, nil
	}
	obs := &Observed{Ports: map[string]State{}}
	done := map[string]bool{}
	for _, t := range ts {
		if t.pci == "" || done[t.pci] {
			continue
		}
		done[t.pci] = true
		dev := req.Inv.Device(t.dev)
		for _, port := range dev.Ports {
			s, err := host.ReadAttr(h.FS, File(t.pci, port.Num))
			if errors.Is(err, fs.ErrNotExist) {
				continue // not an mlx4 port; Diff says so
			}
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", File(t.pci, port.Num), err)
			}
			st, err := ParseState(s)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", File(t.pci, port.Num), err)
			}
			obs.Ports[key(t.pci, port.Num)] = st
		}
	}
	return obs, nil
}

// payload is what Apply needs: the port and, for the order of writes, the
// type this plan gives the device's other port.
type payload struct {
	pci   string
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

// Diff implements plan.Provider. It publishes each port type it writes
// as a link-layer change that happens now, for the stages after it.
func (p *Provider) Diff(req *plan.Request, observed any, facts *plan.Facts) plan.Proposal {
	obs, _ := observed.(*Observed)
	if obs == nil {
		obs = &Observed{}
	}
	prop := diff(req, obs)
	for _, t := range targets(req) {
		if t.pci != "" {
			prop.Managed = append(prop.Managed, plan.Managed{Address: Address(t.pci, t.port), Path: t.specPath})
		}
	}
	for _, c := range prop.Changes {
		if pl, ok := c.Payload.(*payload); ok && facts != nil {
			facts.ChangeLink(plan.LinkChange{Device: pl.pci, Port: pl.port, To: linklayer.OfMlx4Type(pl.want), When: plan.Runtime,
				Cause: c.Address, Setting: "type=" + pl.want})
		}
	}
	return prop
}

// effective is the type a port has after a setting: auto keeps what the
// port detected.
func effective(setting string, have State) string {
	if setting == "auto" {
		return have.Effective
	}
	return setting
}

func diff(req *plan.Request, obs *Observed) plan.Proposal {
	var prop plan.Proposal
	ts := targets(req)
	want := map[string]string{}
	for _, t := range ts {
		want[key(t.pci, t.port)] = t.want
	}
	var changes []*plan.Change
	for _, t := range ts {
		if t.pci == "" {
			prop.Errors = append(prop.Errors, req.Finding(t.specPath, "%s is not a PCI adapter; port types are for mlx4 (ConnectX-3) ports", t.dev))
			continue
		}
		have, ok := obs.Ports[key(t.pci, t.port)]
		if !ok {
			prop.Errors = append(prop.Errors, req.Finding(t.specPath, "%s has no %s: type applies to mlx4 (ConnectX-3) ports only; on ConnectX-4 and later set firmware LINK_TYPE_P%d", t.dev, File(t.pci, t.port), t.port))
			continue
		}
		// mlx4_core refuses port 1 Ethernet with port 2 InfiniBand.
		p1 := effectiveAfter(t.pci, 1, want, obs)
		p2 := effectiveAfter(t.pci, 2, want, obs)
		if p1 == "eth" && p2 == "ib" {
			prop.Errors = append(prop.Errors, req.Finding(t.specPath, "%s would have port 1 eth and port 2 ib, which mlx4_core refuses; make port 2 eth too", t.dev))
			continue
		}
		if have.Setting == t.want {
			continue
		}
		other, otherWas, otherWasEff := want[key(t.pci, 3-t.port)], "", ""
		if o, ok := obs.Ports[key(t.pci, 3-t.port)]; ok {
			otherWas, otherWasEff = o.Setting, o.Effective
			if o.Setting == other {
				other = ""
			}
		}
		if other == "" {
			otherWas, otherWasEff = "", ""
		}
		changes = append(changes, &plan.Change{Address: Address(t.pci, t.port), Action: plan.Update, Activation: plan.Runtime,
			Source:     req.Pos(t.specPath),
			Attributes: []plan.Attr{{Name: "type", Before: describe(have), After: t.want}},
			Disrupts:   portNetdevs(req, t.dev, t.port, have, t.want),
			Payload: &payload{pci: t.pci, port: t.port, want: t.want, other: other,
				was: have.Setting, otherWas: otherWas, wasEff: have.Effective, otherWasEff: otherWasEff}})
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Address < changes[j].Address })
	prop.Changes = changes
	return prop
}

func effectiveAfter(pci string, port int, want map[string]string, obs *Observed) string {
	have, ok := obs.Ports[key(pci, port)]
	if !ok {
		return ""
	}
	if w, ok := want[key(pci, port)]; ok {
		return effective(w, have)
	}
	return have.Effective
}

func describe(s State) string {
	if s.Setting == "auto" {
		if s.Effective == "" {
			return "auto (not detected)"
		}
		return "auto (" + s.Effective + ")"
	}
	return s.Setting
}

// Apply implements plan.Provider. When writing this port first would pass
// through port 1 eth with port 2 ib, which the driver refuses, the other
// port's new type is written first (ib→eth: port 2 first, as rdma-core's
// mlx4 setup script does; eth→ib: port 1 first); its own change then
// finds it done.
//
// Equivalent to: echo eth > /sys/bus/pci/devices/0000:81:00.0/mlx4_port2; echo eth > /sys/bus/pci/devices/0000:81:00.0/mlx4_port1
func (p *Provider) Apply(ctx context.Context, h *host.Host, c *plan.Change) error {
	pl, ok := c.Payload.(*payload)
	if !ok {
		return fmt.Errorf("%s: no mlx4_port payload", c.Address)
	}
	if pl.via != "" {
		step := *pl
		step.want, step.other, step.via = pl.via, pl.otherVia, ""
		if err := set(ctx, h, &step); err != nil {
			return err
		}
	}
	return set(ctx, h, pl)
}

// set writes pl.want, the other port first when the driver needs it.
func set(ctx context.Context, h *host.Host, pl *payload) error {
	have, err := read(h, pl.pci, pl.port)
	if err != nil {
		return err
	}
	if have.Setting == pl.want {
		return nil // written with the other port
	}
	if pl.other != "" {
		o, err := read(h, pl.pci, 3-pl.port)
		if err != nil {
			return err
		}
		p1, p2 := effective(pl.want, have), o.Effective
		if pl.port == 2 {
			p1, p2 = o.Effective, effective(pl.want, have)
		}
		if p1 == "eth" && p2 == "ib" && o.Setting != pl.other {
			if err := write(ctx, h, pl.pci, 3-pl.port, pl.other); err != nil {
				return err
			}
		}
	}
	return write(ctx, h, pl.pci, pl.port, pl.want)
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

// write sets one port's type and waits until it reads back.
//
// Equivalent to: echo eth > /sys/bus/pci/devices/0000:81:00.0/mlx4_port1
func write(ctx context.Context, h *host.Host, pci string, port int, typ string) error {
	f := File(pci, port)
	if err := h.FS.WriteAttr(f, []byte(typ+"\n")); err != nil {
		switch {
		case errors.Is(err, syscall.EINVAL):
			return fmt.Errorf("echo %s > %s: mlx4_core refused it (EINVAL): port 1 eth with port 2 ib is not allowed", typ, f)
		case errors.Is(err, syscall.EOPNOTSUPP):
			return fmt.Errorf("echo %s > %s: this adapter does not support port type %s (EOPNOTSUPP)", typ, f, typ)
		}
		return fmt.Errorf("echo %s > %s: %w", typ, f, err)
	}
	for i := 0; ; i++ {
		st, err := read(h, pci, port)
		if err != nil {
			return err
		}
		if st.Setting == typ {
			return nil
		}
		if i == settleTries {
			return fmt.Errorf("%s reads %q after writing %s", f, describe(st), typ)
		}
		t := time.NewTimer(settleWait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
