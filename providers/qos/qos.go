// Package qos manages the lossless-Ethernet side of RoCE ports: DSCP
// trust and the DSCP map, priority flow control and the cable length
// behind its headroom, ETS, global pause, per-priority ECN, and who owns
// DCB (host or firmware). It reads with iproute2's `dcb -j` and
// `ethtool -a`, writes with `dcb ... set|replace|flush` and `ethtool -A`,
// and uses the MLNX_OFED sysfs tree for ECN where it exists. All of it
// lives in the kernel until the next boot; the boot unit sets it again.
//
// mlx5's semantics are the model: the first DSCP entry of the APP table
// switches the port to DSCP trust and deleting the last one returns it to
// PCP trust; a change of the PFC priorities toggles the port's link.
package qos

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

// Provider is the QoS provider.
type Provider struct{}

var _ plan.TypedProvider[*Observed, *payload] = (*Provider)(nil)

// New is the provider as plan.Build and apply take it.
func New() plan.Provider { return plan.Adapt[*Observed, *payload](&Provider{}) }

// Name implements plan.Provider.
func (*Provider) Name() string { return "qos" }

// Kind is the kind of this provider's addresses.
const Kind = "qos"

// Address is the plan address of one port's QoS: qos[mlx5_0/1].
func Address(dev string, port int) plan.Address { return plan.Addr(Kind, key(dev, port)) }

func key(dev string, port int) string { return dev + "/" + strconv.Itoa(port) }

// MaxReads bounds the dcb and ethtool commands a plan runs at once (each
// a short-lived process): a host with 64 RoCE ports (32 dual-port cards)
// reads a lossless profile in one parallel round, and a bigger one does
// not fork thousands of processes at once.
const MaxReads = 256

// Observed is what Observe read, by "dev/port".
type Observed struct {
	Ports map[string]*Port
	// Errs are ports whose reads failed (a tool missing or failing for
	// another reason than an unsupported operation).
	Errs map[string]string
	// LLDPad is the PID of a running lldpad, 0 when none runs.
	LLDPad int
	// NoTool are the ports show could not read because dcb or ethtool is
	// not installed (show leaves their qos out, with a note; a plan
	// reports such a port in Errs).
	NoTool map[string]string `json:",omitempty"`
}

type target struct {
	dev      string
	port     int
	devIndex int
	specPath string
	q        *schema.QoS
	netdev   string
}

// targets lists the ports whose spec has a qos block, with their netdev
// ("" when the port has none).
func targets(req *plan.Request) []target {
	if req.Full {
		return showTargets(req)
	}
	var out []target
	for i, d := range req.Spec.Devices {
		for j, p := range d.Ports {
			if p.QoS == nil {
				continue
			}
			t := target{port: p.Port, devIndex: i, q: p.QoS,
				specPath: schema.Path("devices", i, "ports", j, "qos")}
			if inv := req.Devices[i]; inv != nil {
				t.dev = inv.Name
				t.netdev = PortNetdev(inv, p.Port)
			} else if d.Name != "" {
				t.dev = d.Name
				for _, r := range req.Spec.Rxe {
					if r.Name == d.Name {
						t.netdev = r.Netdev // an rxe link this plan creates
					}
				}
			}
			if t.dev == "" {
				continue // unresolved; the engine reported it
			}
			out = append(out, t)
		}
	}
	return out
}

// PortNetdev is the netdev DCB is set on for a port: the port's Ethernet
// netdev (a VLAN or other upper device on it is skipped).
func PortNetdev(d *inventory.Device, port int) string {
	p := d.Port(port)
	if p == nil {
		return ""
	}
	if d.Parent != "" {
		return d.Parent
	}
	for _, n := range p.Netdevs {
		if !strings.Contains(n, ".") {
			return n
		}
	}
	return ""
}

// showTargets is the scope of show: every port that is Ethernet now and
// has a netdev, with everything read (no qos block to narrow it).
func showTargets(req *plan.Request) []target {
	var out []target
	for _, p := range req.PortsOf(linklayer.Ethernet) {
		if nd := PortNetdev(p.Device, p.Port.Num); nd != "" {
			out = append(out, target{dev: p.Device.Name, port: p.Port.Num, devIndex: p.Index, netdev: nd})
		}
	}
	return out
}

// need is what to read of a port: what its qos block sets, or everything
// for show.
func (t target) need() need {
	if t.q == nil {
		return need{dcb: true, pause: true, ecn: true, cnp: true}
	}
	w := wantOf(t.q)
	return w.need()
}

// Observe implements plan.TypedProvider: every port's reads at once (bounded
// by MaxReads), and a look for a running lldpad. Nothing is written.
func (p *Provider) Observe(ctx context.Context, h *host.Host, req *plan.Request) (*Observed, error) {
	ts := targets(req)
	if len(ts) == 0 {
		return nil, nil
	}
	if h.Offline() {
		if req.Full {
			return nil, nil // show of a tree: no QoS to read
		}
		return nil, fmt.Errorf("QoS is read with dcb and ethtool from the running kernel; a --root tree has none")
	}
	obs := &Observed{Ports: map[string]*Port{}, Errs: map[string]string{}, NoTool: map[string]string{}}
	sem := make(chan struct{}, MaxReads)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, t := range ts {
		now := req.NetdevNow(t.netdev) // its name before the names stage renames it
		if t.netdev == "" || !host.Exists(h.FS, "/sys/class/net/"+now) {
			continue // Plan says why
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			pt, err := readPort(ctx, h, now, t.need(), sem)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil && req.Full && errors.Is(err, host.ErrNotFound):
				obs.NoTool[key(t.dev, t.port)] = err.Error()
				return
			case err != nil:
				obs.Errs[key(t.dev, t.port)] = err.Error()
				return
			}
			pt.Netdev = t.netdev // the name the writes, after the names stage, use
			obs.Ports[key(t.dev, t.port)] = pt
		}()
	}
	wg.Wait()
	obs.LLDPad = findProcess(h, "lldpad")
	return obs, nil
}

// findProcess returns the PID of a running process called comm, or 0.
//
// Equivalent to: pgrep -x lldpad
func findProcess(h *host.Host, comm string) int {
	ents, err := h.FS.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	for _, pid := range pids {
		s, err := host.ReadAttr(h.FS, "/proc/"+strconv.Itoa(pid)+"/comm")
		if err == nil && strings.TrimSpace(s) == comm {
			return pid
		}
	}
	return 0
}
