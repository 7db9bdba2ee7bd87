package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// MaxServe bounds probe serve: responders are for a test window, never a
// service left running.
const MaxServe = time.Hour

// Responder is one server a peer's probe needs on this host.
type Responder struct {
	Probes []string // the probes it answers
	Args   []string
	// Once: the tool serves one client and exits (ibv_rc_pingpong); it
	// is started again until the window ends.
	Once bool
}

func (r Responder) String() string { return host.Cmd{Args: r.Args}.String() }

// Responders are the servers this host must run for the spec's probes
// that target it: a probe targets this host when its address is on one of
// this host's RDMA netdevs, or its LID/GUID is one of this host's
// InfiniBand ports. ping needs none (the kernel answers). The spec is
// the probing side's; the same file is given to both sides.
func Responders(ctx context.Context, h *host.Host, spec *schema.Spec) ([]Responder, error) {
	if h.Offline() {
		return nil, ErrOffline
	}
	inv, err := inventory.Discover(ctx, h)
	if err != nil {
		return nil, err
	}
	byCmd := map[string]*Responder{}
	var order []string
	add := func(probe string, once bool, args ...string) {
		k := strings.Join(args, "\x00")
		if r, ok := byCmd[k]; ok {
			r.Probes = append(r.Probes, probe)
			return
		}
		byCmd[k] = &Responder{Probes: []string{probe}, Args: args, Once: once}
		order = append(order, k)
	}
	for i := range spec.Probes {
		p := &spec.Probes[i]
		switch {
		case p.RdmaCM != nil:
			if _, _, ok := localAddr(h, inv, p.RdmaCM.To); ok {
				port := schema.DefaultRdmaCMPort
				if p.RdmaCM.Port != nil {
					port = *p.RdmaCM.Port
				}
				// -P: persistent, one server for every client.
				add(p.Name, false, "rping", "-s", "-a", p.RdmaCM.To, "-p", strconv.Itoa(port), "-P")
			}
		case p.Verbs != nil:
			d, pt, ok := localAddr(h, inv, p.Verbs.To)
			if !ok {
				continue
			}
			args := []string{"ibv_rc_pingpong", "-d", d.Name, "-i", strconv.Itoa(pt.Num), "-n", strconv.Itoa(p.Count()), "-p", strconv.Itoa(PingpongPort)}
			if pt.LinkLayer == linklayer.Ethernet {
				a, _ := netip.ParseAddr(p.Verbs.To)
				g, ok := GIDFor(pt, a)
				if !ok {
					return nil, fmt.Errorf("probe %s: %s port %d carries %s but has no RoCE v2 GID for it", p.Name, d.Name, pt.Num, p.Verbs.To)
				}
				args = append(args, "-g", strconv.Itoa(g.Index))
			}
			add(p.Name, true, args...)
		case p.IB != nil:
			if d, pt, ok := localIBPort(h, inv, p.IB); ok {
				add(p.Name, false, "ibping", "-S", "-C", d.Name, "-P", strconv.Itoa(pt.Num))
			}
		case p.Perf() != nil:
			s := p.Perf()
			if _, _, ok := localAddr(h, inv, s.To); !ok {
				continue
			}
			pp, err := planPerf(h, inv, s, true)
			if err != nil {
				return nil, fmt.Errorf("probe %s: %w", p.Name, err)
			}
			// perftest's server serves one client and exits.
			add(p.Name, true, pp.args...)
		}
	}
	out := make([]Responder, 0, len(order))
	for _, k := range order {
		out = append(out, *byCmd[k])
	}
	return out, nil
}

// localAddr finds the RDMA port whose netdev has addr.
func localAddr(h *host.Host, inv *inventory.Inventory, to string) (*inventory.Device, *inventory.Port, bool) {
	want, err := netip.ParseAddr(to)
	if err != nil || h.Net == nil {
		return nil, nil, false
	}
	for _, d := range inv.Devices {
		for _, pt := range d.Ports {
			for _, nd := range pt.Netdevs {
				addrs, err := h.Net.AddrList(nd)
				if err != nil {
					continue
				}
				for _, a := range addrs {
					if a.Prefix.Addr() == want {
						return d, pt, true
					}
				}
			}
		}
	}
	return nil, nil, false
}

// localIBPort finds the InfiniBand port an ib probe targets: by LID, or by
// port GUID (the low 64 bits of GID 0).
func localIBPort(h *host.Host, inv *inventory.Inventory, p *schema.IBProbe) (*inventory.Device, *inventory.Port, bool) {
	for _, d := range inv.Devices {
		for _, pt := range d.Ports {
			if pt.LinkLayer != linklayer.InfiniBand {
				continue
			}
			if p.ToLID != nil && pt.LID == *p.ToLID {
				return d, pt, true
			}
			if p.ToGUID != "" {
				gid, err := host.ReadAttr(h.FS, fmt.Sprintf("/sys/class/infiniband/%s/ports/%d/gids/0", d.Name, pt.Num))
				if err == nil && sameGUID(gid, p.ToGUID) {
					return d, pt, true
				}
			}
		}
	}
	return nil, nil, false
}

// sameGUID compares the interface ID of a sysfs GID
// (fe80:0000:0000:0000:0002:c903:000e:0b72) with a port GUID as ibping
// takes it (0x0002c903000e0b72).
func sameGUID(gid, guid string) bool {
	g := strings.ReplaceAll(gid, ":", "")
	if len(g) != 32 {
		return false
	}
	want := strings.TrimPrefix(strings.ToLower(guid), "0x")
	want = strings.Repeat("0", 16-len(want)) + want
	return strings.ToLower(g[16:]) == want
}

// Serve runs the responders for d, then stops them (each one is this
// process's own child, ended by PID through its context). A responder
// that fails to start is an error; the others keep serving.
func Serve(ctx context.Context, h *host.Host, rs []Responder, d time.Duration, log io.Writer) error {
	if h.Offline() {
		return ErrOffline
	}
	if d <= 0 || d > MaxServe {
		return fmt.Errorf("--for %s: give a duration from 1s to %s", d, MaxServe)
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	errs := make([]error, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		var missed error
		for _, tool := range responderTools(r.Args) {
			if found, ok := host.Installed(h.Runner, tool.Program); ok && !found {
				missed = missing(tool)
				break
			}
		}
		if missed != nil {
			errs[i] = missed
			continue
		}
		fmt.Fprintf(log, "rdmaform: serving %s for %s: %s\n", strings.Join(r.Probes, ", "), d, r)
		wg.Add(1)
		go func(i int, r Responder) {
			defer wg.Done()
			errs[i] = serveOne(ctx, h, r, log)
		}(i, r)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// responderTools are the programs a responder's command line runs: the
// server, and taskset before a pinned perftest.
func responderTools(args []string) []Tool {
	var out []Tool
	if args[0] == tasksetTool.Program {
		out = append(out, tasksetTool)
		args = args[3:]
	}
	if t, ok := Tools[map[string]string{"rping": "rdma_cm", "ibv_rc_pingpong": "verbs", "ibping": "ib"}[args[0]]]; ok {
		return append(out, t)
	}
	return append(out, perfTool(args[0]))
}

func serveOne(ctx context.Context, h *host.Host, r Responder, log io.Writer) error {
	quick := 0
	for ctx.Err() == nil {
		dl, _ := ctx.Deadline()
		start := time.Now()
		_, err := h.Runner.Run(ctx, host.Cmd{Args: r.Args, Timeout: time.Until(dl)})
		if ctx.Err() != nil {
			return nil // the window ended: the runner stopped it
		}
		if err != nil {
			fmt.Fprintf(log, "rdmaform: responder for %s: %v\n", strings.Join(r.Probes, ", "), err)
		}
		var xe *host.ExitError
		switch {
		case errors.As(err, &xe) && errors.Is(xe.Err, host.ErrNotFound):
			return err
		case err != nil && time.Since(start) < time.Second:
			// A server that fails at once (address not local, port in
			// use) would fail again: report it rather than spin.
			if quick++; quick >= 3 {
				return err
			}
		case !r.Once && err != nil:
			return err
		}
	}
	return nil
}

// Targets lists what this host answers for, for messages.
func Targets(rs []Responder) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Probes...)
	}
	sort.Strings(out)
	return out
}
