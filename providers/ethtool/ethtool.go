// Package ethtool manages a netdev's ring sizes and channel counts
// (interfaces[].ethtool): `ethtool -g`/`-G` and `ethtool -l`/`-L`. Both
// live in the driver until the next boot (runtime settings); the boot
// unit sets them again.
//
// Why the ethtool tool and not the ethtool netlink family: rdmaform reads
// pause with `ethtool -a` already (providers/qos), so a host that runs
// rdmaform's QoS has the tool; vishvananda/netlink, rdmaform's netlink
// library, has no ETHTOOL_MSG_RINGS_*/CHANNELS_* messages, and a
// hand-written generic netlink client would be a second parser of the
// same kernel answers. The tool's text is stable since ethtool 5.6 (the
// netlink code in netlink/rings.c and netlink/channels.c) and the parser
// is tested on captures from the kernel lab (testdata/real/ethtool-gl).
//
// Every value is bounded by the maximum the driver reports ("Pre-set
// maximums"): above it the plan refuses, naming the maximum, and nothing
// is written.
package ethtool

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Provider is the ethtool rings and channels provider.
type Provider struct{}

var _ plan.TypedProvider[*Observed, *payload] = (*Provider)(nil)

// New is the provider as plan.Build and apply take it.
func New() plan.Provider { return plan.Adapt[*Observed, *payload](&Provider{}) }

// Name implements plan.Provider.
func (*Provider) Name() string { return "ethtool" }

// Kind is the kind of this provider's addresses.
const Kind = "ethtool"

// Address is the plan address of one netdev's rings and channels:
// ethtool[eth0].
func Address(netdev string) plan.Address { return plan.Addr(Kind, netdev) }

// MaxReads bounds the netdevs read at once (two short ethtool processes
// each): a host with 64 RDMA netdevs is read in one round.
const MaxReads = 128

// Observed is what Observe read, by netdev.
type Observed struct {
	Ifaces map[string]*Iface
	// Errs are netdevs whose reads failed for another reason than a
	// driver without the operation.
	Errs map[string]string `json:",omitempty"`
}

// Iface is one netdev's rings and channels; a part the spec does not set
// is not read (nil). Show reads both.
type Iface struct {
	Rings, Channels *Params `json:",omitempty"`
	// NoRings and NoChannels are the tool's words when the driver has no
	// such operation ("netlink error: Operation not supported").
	NoRings, NoChannels string `json:",omitempty"`
}

// what to read of one netdev.
type target struct {
	name     string
	path     string // the spec path of its ethtool block; "" for show
	e        *schema.Ethtool
	rings    bool
	channels bool
}

// targets are the spec's interfaces with an ethtool block, or for show
// the interfaces show captures (both parts of each).
func targets(req *plan.Request) []target {
	var out []target
	if req.Full {
		for _, n := range showNetdevs(req) {
			out = append(out, target{name: n, rings: true, channels: true})
		}
		return out
	}
	for i, it := range req.Spec.Interfaces {
		if it.Ethtool == nil {
			continue
		}
		out = append(out, target{name: it.Name, path: schema.Path("interfaces", i, "ethtool"), e: it.Ethtool,
			rings: it.Ethtool.Rings != nil, channels: it.Ethtool.Channels != nil})
	}
	return out
}

// Observe implements plan.TypedProvider: `ethtool -g` and `ethtool -l` of
// each netdev that exists, all at once. Nothing is written.
//
// Equivalent to: ethtool -g NAME; ethtool -l NAME
func (p *Provider) Observe(ctx context.Context, h *host.Host, req *plan.Request) (*Observed, error) {
	ts := targets(req)
	if len(ts) == 0 {
		return nil, nil
	}
	if h.Offline() {
		if req.Full {
			return nil, nil
		}
		return nil, fmt.Errorf("rings and channels are read with ethtool from the running kernel; a --root tree has none")
	}
	obs := &Observed{Ifaces: map[string]*Iface{}, Errs: map[string]string{}}
	sem := make(chan struct{}, MaxReads)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, t := range ts {
		now := req.NetdevNow(t.name) // its name before the names stage renames it
		if !host.Exists(h.FS, "/sys/class/net/"+now) {
			continue // Plan defers it
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			ifc, err := read(ctx, h, now, t.rings, t.channels)
			<-sem
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if req.Full && errors.Is(err, host.ErrNotFound) {
					return // show without ethtool: nothing to capture
				}
				obs.Errs[t.name] = err.Error()
				return
			}
			obs.Ifaces[t.name] = ifc
		}()
	}
	wg.Wait()
	return obs, nil
}

// payload is what Make needs: the netdev, the values to set (nil leaves
// one alone) and what it had at plan time (for Revert).
type payload struct {
	netdev   string
	rings    map[string]int
	channels map[string]int
	before   *Iface
}
