// Package probe proves that a fabric carries traffic: it runs the
// standard tools of rdma-core, rdmacm-utils, infiniband-diags and iputils
// for the probes a spec lists (rdmaform probe, audit --probes), parses
// their output, and starts the responders a peer's probes need (probe
// serve). Probes only read: they send test traffic and change nothing on
// the host.
package probe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/schema"
)

// Result is one probe's outcome.
type Result struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Target string `json:"target"`
	Passed bool   `json:"passed"`
	// Outcome is passed, failed (the probe ran: the peer did not answer
	// every round trip) or error (the probe could not run).
	Outcome Outcome `json:"outcome"`
	// RTTms is the average round trip in milliseconds; 0 when no round
	// trip completed. For rdma_cm it is the wall time of the whole run
	// divided by the count (rping prints no timings).
	RTTms float64 `json:"rtt_ms"`
	// Reason says why the probe failed, naming the peer, or what passed.
	Reason string `json:"reason"`
	// Command is the command line that ran, for an operator to repeat;
	// empty when nothing ran (a missing tool or device).
	Command string `json:"command"`
	// Perf is what a bandwidth or latency probe measured and against
	// what; absent for the other kinds.
	Perf *Perf `json:"perf,omitempty"`
}

// Outcome is how a probe ended.
type Outcome string

// The outcomes.
const (
	OutcomePassed Outcome = "passed"
	OutcomeFailed Outcome = "failed"
	// OutcomeError: the probe could not run, so it says nothing about the
	// peer: its tool or device is missing, or the tool could not start
	// (an interface that does not exist, a device it cannot open).
	OutcomeError Outcome = "error"
)

// Tool is an external program a probe kind runs, with the packages that
// ship it.
type Tool struct {
	Program, Debian, RHEL string
}

// Tools by probe kind.
var Tools = map[string]Tool{
	"ping":    {"ping", "iputils-ping", "iputils"},
	"rdma_cm": {"rping", "rdmacm-utils", "librdmacm-utils"},
	"verbs":   {"ibv_rc_pingpong", "ibverbs-utils", "libibverbs-utils"},
	"ib":      {"ibping", "infiniband-diags", "infiniband-diags"},
}

// PingpongPort is the TCP port ibv_rc_pingpong exchanges queue pair
// numbers on (its own default).
const PingpongPort = 18515

// ToolError is a probe that could not be run at all: a missing tool, a
// device the host does not have, a tool that could not start. Its result's
// outcome is OutcomeError; rdmaform probe exits 1 on it.
type ToolError struct {
	Probe string
	Err   error
}

func (e *ToolError) Error() string { return fmt.Sprintf("probe %s: %v", e.Probe, e.Err) }
func (e *ToolError) Unwrap() error { return e.Err }

// missing names the packages of a tool that is not installed.
// runTool runs a probe's tool: its output, also of a run that exited
// non-zero or ran out of time (then the *host.ExitError too: timedOut
// tells which), or why it could not run (the tool is missing; it did not
// start, or the run was interrupted).
func runTool(ctx context.Context, h *host.Host, tool Tool, args []string, timeout time.Duration) (host.Result, *host.ExitError, error) {
	res, err := h.Runner.Run(ctx, host.Cmd{Args: args, Timeout: timeout})
	var xe *host.ExitError
	switch {
	case errors.As(err, &xe):
		switch {
		case errors.Is(xe.Err, host.ErrNotFound):
			return host.Result{}, nil, missing(tool)
		case xe.Err != nil && !timedOut(xe):
			return host.Result{}, nil, xe
		}
		return host.Result{Stdout: xe.Stdout, Stderr: xe.Stderr}, xe, nil
	case err != nil:
		return host.Result{}, nil, err
	}
	return res, nil, nil
}

// timedOut says whether a run ended because its time was up.
func timedOut(xe *host.ExitError) bool { return xe != nil && errors.Is(xe.Err, host.ErrTimeout) }

func missing(t Tool) error {
	return fmt.Errorf("%s is not installed (Debian/Ubuntu: apt-get install %s; RHEL: dnf install %s)", t.Program, t.Debian, t.RHEL)
}

// ErrOffline refuses probes on a host that is not running: a --root
// tree (host.Host.Offline) has no kernel of its own, and a probe run
// there would send its traffic from the machine rdmaform runs on, as
// that machine, not as the host the tree describes.
var ErrOffline = errors.New("a --root tree is not a running host: probes send traffic from a running kernel, and nothing was sent (probe the host itself, or a simulated one with --sim)")

// Run runs every connectivity probe of the spec at once, then the
// bandwidth and latency probes one after the other, and returns their
// results in spec order. Each probe ends within its own timeout (ping gets a second
// more to print what it saw). The error joins the probes that could not
// run (each a *ToolError); their results have OutcomeError and that
// reason.
func Run(ctx context.Context, h *host.Host, spec *schema.Spec) ([]Result, error) {
	if h.Offline() {
		return nil, ErrOffline
	}
	inv, err := inventory.Discover(ctx, h)
	if err != nil {
		return nil, err
	}
	out := make([]Result, len(spec.Probes))
	errs := make([]error, len(spec.Probes))
	var wg sync.WaitGroup
	for i := range spec.Probes {
		if spec.Probes[i].Perf() != nil {
			continue
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			out[i], errs[i] = runOne(ctx, h, inv, &spec.Probes[i])
		}(i)
	}
	wg.Wait()
	// Bandwidth and latency runs one after the other: two at once would
	// share the port and measure each other.
	for i := range spec.Probes {
		if spec.Probes[i].Perf() != nil {
			out[i], errs[i] = runPerf(ctx, h, inv, &spec.Probes[i])
		}
	}
	return out, errors.Join(errs...)
}

func runOne(ctx context.Context, h *host.Host, inv *inventory.Inventory, p *schema.Probe) (Result, error) {
	r := Result{Name: p.Name, Kind: p.Kind(), Target: p.Target(), Outcome: OutcomeFailed}
	cannot := func(err error) (Result, error) {
		r.Outcome, r.Reason = OutcomeError, err.Error()
		return r, &ToolError{Probe: p.Name, Err: err}
	}
	args, err := clientArgs(inv, p)
	if err != nil {
		return cannot(err)
	}
	tool := Tools[r.Kind]
	if found, ok := host.Installed(h.Runner, tool.Program); ok && !found {
		return cannot(missing(tool))
	}
	start := time.Now()
	res, xe, err := runTool(ctx, h, tool, args, runTimeout(p))
	wall := time.Since(start)
	if err != nil {
		return cannot(err)
	}
	r.Command = host.Cmd{Args: args}.String()
	o := parse(r.Kind, res.Stdout, res.Stderr)
	if o.cannot != "" {
		return cannot(errors.New(o.cannot))
	}
	r.RTTms = o.rttMs
	if r.Kind == "rdma_cm" && o.replies > 0 {
		r.RTTms = round3(float64(wall) / float64(time.Millisecond) / float64(o.replies))
	}
	answered := fmt.Sprintf("%d/%d answered by %s", o.replies, p.Count(), r.Target)
	switch {
	case xe == nil && o.replies >= p.Count():
		r.Passed, r.Outcome = true, OutcomePassed
		r.Reason = answered
	case timedOut(xe) && o.replies == 0:
		r.Reason = fmt.Sprintf("no answer from %s within %s", r.Target, p.Timeout())
	case timedOut(xe):
		r.Reason = fmt.Sprintf("%s within %s", answered, p.Timeout())
	case o.problem != "":
		r.Reason = fmt.Sprintf("%s: %s", r.Target, o.problem)
	default:
		r.Reason = answered
		if xe != nil {
			r.Reason += fmt.Sprintf(" (%s exit status %d)", tool.Program, xe.Code)
		}
	}
	return r, nil
}

// pingGrace is how long ping may run past its own deadline (-w) to print
// its statistics before the runner stops it.
const pingGrace = time.Second

// runTimeout is when the runner stops a probe's tool: at the probe's
// timeout, or for ping a grace after its own whole-second deadline, so
// that a run the deadline cuts short still reports the replies it got.
func runTimeout(p *schema.Probe) time.Duration {
	if p.Ping != nil {
		return time.Duration(pingDeadline(p))*time.Second + pingGrace
	}
	return p.Timeout()
}

// pingDeadline is ping's -w: the probe's timeout in whole seconds.
func pingDeadline(p *schema.Probe) int { return int(math.Ceil(p.Timeout().Seconds())) }

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// clientArgs is the command line of a probe, checked against the host's
// RDMA devices.
func clientArgs(inv *inventory.Inventory, p *schema.Probe) ([]string, error) {
	count := strconv.Itoa(p.Count())
	switch {
	case p.Ping != nil:
		// -w: the deadline in whole seconds; the runner's timeout is the
		// hard stop.
		args := []string{"ping", "-n", "-c", count, "-w", strconv.Itoa(pingDeadline(p))}
		if p.Ping.Interface != "" {
			args = append(args, "-I", p.Ping.Interface)
		}
		return append(args, "--", p.Ping.To), nil
	case p.RdmaCM != nil:
		if d := p.RdmaCM.Device; d != "" {
			if _, err := activePort(inv, d, 0); err != nil {
				return nil, err
			}
		}
		port := schema.DefaultRdmaCMPort
		if p.RdmaCM.Port != nil {
			port = *p.RdmaCM.Port
		}
		return []string{"rping", "-c", "-a", p.RdmaCM.To, "-p", strconv.Itoa(port), "-C", count, "-v"}, nil
	case p.Verbs != nil:
		port := schema.PortOr(p.Verbs.Port)
		pt, err := activePort(inv, p.Verbs.Device, port)
		if err != nil {
			return nil, err
		}
		args := []string{"ibv_rc_pingpong", "-d", p.Verbs.Device, "-i", strconv.Itoa(port), "-n", count, "-p", strconv.Itoa(PingpongPort)}
		switch {
		case p.Verbs.GIDIndex != nil:
			args = append(args, "-g", strconv.Itoa(*p.Verbs.GIDIndex))
		case pt.LinkLayer == linklayer.Ethernet:
			g, ok := RoCEv2IPv4GID(pt)
			if !ok {
				return nil, fmt.Errorf("%s port %d has no RoCE v2 GID with an IPv4 address; give gid_index", p.Verbs.Device, port)
			}
			args = append(args, "-g", strconv.Itoa(g.Index))
		}
		return append(args, p.Verbs.To), nil
	case p.IB != nil:
		port := schema.PortOr(p.IB.Port)
		pt, err := activePort(inv, p.IB.Device, port)
		if err != nil {
			return nil, err
		}
		if pt.LinkLayer != linklayer.InfiniBand {
			return nil, fmt.Errorf("ibping needs an InfiniBand port, but %s port %d is %s; probe it with rdma_cm or verbs", p.IB.Device, port, pt.LinkLayer)
		}
		args := []string{"ibping", "-C", p.IB.Device, "-P", strconv.Itoa(port), "-c", count}
		if p.IB.ToLID != nil {
			return append(args, "-L", strconv.Itoa(*p.IB.ToLID)), nil
		}
		return append(args, "-G", p.IB.ToGUID), nil
	}
	return nil, errors.New("no probe kind")
}

// activePort finds a device's port (0: any port) or says why it cannot
// carry a probe. A port that is not ACTIVE is reported as found: the
// probe then fails with the tool's own answer.
func activePort(inv *inventory.Inventory, dev string, port int) (*inventory.Port, error) {
	d := inv.Device(dev)
	if d == nil {
		var names []string
		for _, x := range inv.Devices {
			names = append(names, x.Name)
		}
		sort.Strings(names)
		have := strings.Join(names, ", ")
		if have == "" {
			have = "none"
		}
		return nil, fmt.Errorf("no RDMA device %s on this host (devices: %s)", dev, have)
	}
	if port == 0 {
		if len(d.Ports) == 0 {
			return nil, fmt.Errorf("%s has no ports", dev)
		}
		return d.Ports[0], nil
	}
	p := d.Port(port)
	if p == nil {
		return nil, fmt.Errorf("%s has no port %d", dev, port)
	}
	return p, nil
}

// RoCEv2IPv4GID is the port's first RoCE v2 GID that carries an IPv4
// address (::ffff:a.b.c.d): the one RoCE v2 over IPv4 uses.
func RoCEv2IPv4GID(p *inventory.Port) (inventory.GID, bool) {
	for _, g := range p.GIDs {
		if g.Type != inventory.GIDRoCEv2 {
			continue
		}
		if a, err := netip.ParseAddr(g.GID); err == nil && a.Is4In6() {
			return g, true
		}
	}
	return inventory.GID{}, false
}

// GIDFor is the RoCE v2 GID of a port whose address is addr.
func GIDFor(p *inventory.Port, addr netip.Addr) (inventory.GID, bool) {
	for _, g := range p.GIDs {
		if a, err := netip.ParseAddr(g.GID); err == nil && g.Type == inventory.GIDRoCEv2 && a.Unmap() == addr.Unmap() {
			return g, true
		}
	}
	return inventory.GID{}, false
}
