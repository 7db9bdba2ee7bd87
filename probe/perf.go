package probe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"

	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/schema"
)

// Perf is what a bandwidth or latency probe measured, and against what:
// the device, port, GID and traffic class the run used as perftest and
// the GID table report them (not as the spec asked), the CPUs it ran on,
// the figures, the floor or ceiling, and the transport checks.
type Perf struct {
	Tool   string `json:"tool"`
	Device string `json:"device"`
	Port   int    `json:"port"`
	Netdev string `json:"netdev,omitempty"`
	// LinkLayer is perftest's "Link type"; GIDIndex its "GID index";
	// GID the local GID it printed; GIDType that GID's type in the
	// port's GID table (sysfs gid_attrs/types/N).
	LinkLayer string `json:"link_layer,omitempty"`
	GIDIndex  *int   `json:"gid_index,omitempty"`
	GID       string `json:"gid,omitempty"`
	GIDType   string `json:"gid_type,omitempty"`
	// TrafficClass is the traffic class the run used: perftest's TOS
	// (rdma_cm), or the --tclass it was given.
	TrafficClass *int `json:"traffic_class,omitempty"`
	// NUMANode is the device's NUMA node (absent when the kernel knows
	// none); CPUs the list the run was pinned to (taskset -c), "" when
	// it was not pinned.
	NUMANode      *int    `json:"numa_node,omitempty"`
	CPUs          string  `json:"cpus,omitempty"`
	RdmaCM        bool    `json:"rdma_cm"`
	Bidirectional bool    `json:"bidirectional,omitempty"`
	UseCUDA       *int    `json:"use_cuda,omitempty"`
	Size          int     `json:"size"`
	QPs           int     `json:"qps"`
	DurationS     int     `json:"duration_s,omitempty"`
	Iterations    int64   `json:"iterations,omitempty"` // as perftest reports them
	PortRate      string  `json:"port_rate,omitempty"`  // sysfs rate
	PortRateGbps  float64 `json:"port_rate_gbps,omitempty"`
	// BandwidthGbps is the gated figure, one direction: the lower of the
	// two when bidirectional. OutGbps is this host to the peer, InGbps
	// the peer to this host; SumGbps perftest's own bidirectional figure,
	// the sum of both (perftest_parameters.c print_full_bw_report adds
	// the peer's report to its own).
	BandwidthGbps float64 `json:"bandwidth_gbps,omitempty"`
	PeakGbps      float64 `json:"peak_gbps,omitempty"`
	OutGbps       float64 `json:"out_gbps,omitempty"`
	InGbps        float64 `json:"in_gbps,omitempty"`
	SumGbps       float64 `json:"sum_gbps,omitempty"`
	Floor         string  `json:"floor,omitempty"`
	FloorGbps     float64 `json:"floor_gbps,omitempty"`
	// LatencyUs is perftest's t_typical, the median; the others its
	// t_min, t_avg, t_max and percentiles.
	LatencyUs     float64 `json:"latency_us,omitempty"`
	LatencyMinUs  float64 `json:"latency_min_us,omitempty"`
	LatencyAvgUs  float64 `json:"latency_avg_us,omitempty"`
	LatencyMaxUs  float64 `json:"latency_max_us,omitempty"`
	LatencyP99Us  float64 `json:"latency_p99_us,omitempty"`
	LatencyP999Us float64 `json:"latency_p999_us,omitempty"`
	CeilingUs     float64 `json:"ceiling_us,omitempty"`
	// GPU is the GPU whose memory the run used (use_cuda), as perftest
	// reported it and as sysfs knows it.
	GPU    *PerfGPU `json:"gpu,omitempty"`
	Checks []Check  `json:"checks"`
}

// PerfGPU is the GPU of a run with use_cuda: the CUDA device perftest
// picked, its PCIe bus and device as perftest printed them ("8F:00"),
// its name, and the size of the buffer it allocated there; then the
// host's GPU of that bus and device (its PCI address and NUMA node) and
// how it reaches the probe's RDMA device (nvidia-smi topo's PIX, PXB,
// PHB, NODE or SYS), when sysfs shows one.
type PerfGPU struct {
	CUDADevice  int    `json:"cuda_device"`
	PCIe        string `json:"pcie,omitempty"`
	Name        string `json:"name,omitempty"`
	BufferBytes int64  `json:"buffer_bytes,omitempty"`
	PCI         string `json:"pci,omitempty"`
	NUMANode    *int   `json:"numa_node,omitempty"`
	Relation    string `json:"relation,omitempty"`
}

// Check is one transport check of a perf probe.
type Check struct {
	Name string `json:"name"` // link_layer, gid_type, traffic_class, gpu_memory, priority_counters
	Want string `json:"want"`
	Got  string `json:"got"`
	// Result is ok, failed, or unverified (nothing on this host shows
	// it: perftest does not print the traffic class of a run without
	// RDMA CM, and a port without per-priority counters cannot show it).
	Result string `json:"result"`
}

// Check results.
const (
	CheckOK         = "ok"
	CheckFailed     = "failed"
	CheckUnverified = "unverified"
)

// perftest and taskset, with their packages.
var (
	perftestTool = Tool{"", "perftest", "perftest"}
	tasksetTool  = Tool{"taskset", "util-linux", "util-linux-core"}
)

func perfTool(name string) Tool {
	t := perftestTool
	t.Program = name
	return t
}

// perfPlan is a perf probe resolved against the host: the port it runs
// on, the GID index, the CPUs, and the command line.
type perfPlan struct {
	s        *schema.PerfSettings
	gpus     []*inventory.GPU
	dev      *inventory.Device
	port     *inventory.Port
	netdev   string
	gidIndex *int
	numa     *int
	cpus     string
	// source is the port's address on the peer's subnet (RDMA CM's
	// source address).
	source netip.Addr
	args   []string
}

// planPerf resolves a perf probe on this host. server: the responder's
// command line (no peer operand; the GID is the one that carries the
// probe's address here).
func planPerf(h *host.Host, inv *inventory.Inventory, s *schema.PerfSettings, server bool) (*perfPlan, error) {
	pp := &perfPlan{s: s, gpus: inv.GPUs}
	var err error
	if server {
		var ok bool
		pp.dev, pp.port, ok = localAddr(h, inv, s.To)
		if !ok {
			return nil, fmt.Errorf("no RDMA port of this host carries %s", s.To)
		}
	} else if pp.dev, pp.port, err = perfPort(inv, s); err != nil {
		return nil, err
	}
	pp.netdev = s.Netdev
	if pp.netdev == "" && len(pp.port.Netdevs) > 0 {
		pp.netdev = pp.port.Netdevs[0]
	}
	if !server && s.RdmaCM {
		pp.source = sourceFor(h, pp.port, s.To)
	}
	switch {
	case s.GIDIndex != nil && !server:
		g := *s.GIDIndex
		pp.gidIndex = &g
	case pp.port.LinkLayer == linklayer.Ethernet && !s.RdmaCM:
		g, ok := roceGIDFor(h, pp.port, s.To, server)
		if !ok {
			if server {
				return nil, fmt.Errorf("%s port %d carries %s but has no RoCE v2 GID for it", pp.dev.Name, pp.port.Num, s.To)
			}
			return nil, fmt.Errorf("%s port %d has no RoCE v2 GID with an IPv4 address; give gid_index", pp.dev.Name, pp.port.Num)
		}
		pp.gidIndex = &g.Index
	}
	if pp.dev.NUMANode >= 0 {
		n := pp.dev.NUMANode
		pp.numa = &n
	}
	switch s.CPUs {
	case "none":
	case "numa":
		pp.cpus, pp.numa = localCPUs(h, pp.dev, pp.numa)
	default:
		pp.cpus = s.CPUs
	}
	pp.args = perfArgs(pp, server)
	return pp, nil
}

// perfPort finds the port a perf probe names: a device's port, or the
// RDMA port that carries a netdev.
func perfPort(inv *inventory.Inventory, s *schema.PerfSettings) (*inventory.Device, *inventory.Port, error) {
	if s.Device != "" {
		pt, err := activePort(inv, s.Device, s.Port)
		if err != nil {
			return nil, nil, err
		}
		return inv.Device(s.Device), pt, nil
	}
	var carried []string
	for _, d := range inv.Devices {
		for _, pt := range d.Ports {
			for _, nd := range pt.Netdevs {
				if nd == s.Netdev {
					return d, pt, nil
				}
				carried = append(carried, nd)
			}
		}
	}
	have := strings.Join(carried, ", ")
	if have == "" {
		have = "none"
	}
	return nil, nil, fmt.Errorf("no RDMA port carries netdev %s (netdevs on RDMA ports: %s)", s.Netdev, have)
}

// roceGIDFor is the RoCE v2 GID a run to (or, on the server, at) addr
// uses: the one whose address is on addr's subnet on the port's
// netdevs (the server: addr itself), else the port's first IPv4 one.
func roceGIDFor(h *host.Host, pt *inventory.Port, addr string, server bool) (inventory.GID, bool) {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return inventory.GID{}, false
	}
	if server {
		return GIDFor(pt, a)
	}
	if h.Net != nil {
		for _, nd := range pt.Netdevs {
			addrs, err := h.Net.AddrList(nd)
			if err != nil {
				continue
			}
			for _, p := range addrs {
				if p.Prefix.Contains(a.Unmap()) {
					if g, ok := GIDFor(pt, p.Prefix.Addr()); ok {
						return g, true
					}
				}
			}
		}
	}
	if a.Unmap().Is4() {
		return RoCEv2IPv4GID(pt)
	}
	return inventory.GID{}, false
}

// sourceFor is the address of the port's netdevs on to's subnet.
func sourceFor(h *host.Host, pt *inventory.Port, to string) netip.Addr {
	a, err := netip.ParseAddr(to)
	if err != nil || h.Net == nil {
		return netip.Addr{}
	}
	for _, nd := range pt.Netdevs {
		addrs, err := h.Net.AddrList(nd)
		if err != nil {
			continue
		}
		for _, p := range addrs {
			if p.Prefix.Contains(a.Unmap()) && p.Prefix.Addr() != a.Unmap() {
				return p.Prefix.Addr()
			}
		}
	}
	return netip.Addr{}
}

// localCPUs is the CPU list of the device's NUMA node: its PCI
// function's local_cpulist; for a software device (rxe), that of the PCI
// function under its parent netdev. It also returns the NUMA node read
// there when the device has none of its own.
func localCPUs(h *host.Host, d *inventory.Device, numa *int) (string, *int) {
	var dirs []string
	if d.PCI != "" {
		dirs = append(dirs, inventory.BusPCI+"/"+d.PCI)
	}
	if d.Parent != "" {
		// virtio-net: device is the virtio device, its parent the PCI
		// function; a PCI netdev: device is the function itself.
		dirs = append(dirs, inventory.ClassNet+"/"+d.Parent+"/device", inventory.ClassNet+"/"+d.Parent+"/device/..")
	}
	for _, dir := range dirs {
		list, err := host.ReadAttr(h.FS, dir+"/local_cpulist")
		if err != nil || schema.CheckCPUList(list) != "" {
			continue
		}
		if numa == nil {
			if s, err := host.ReadAttr(h.FS, dir+"/numa_node"); err == nil {
				if n, err := strconv.Atoi(s); err == nil && n >= 0 {
					numa = &n
				}
			}
		}
		return list, numa
	}
	return "", numa
}

// perfArgs is perftest's command line (perftest 4.5-0.17's options,
// src/perftest_parameters.c usage and parser): -d device, -i port, -x GID
// index, -s size, -q queue pairs, -D seconds or -n iterations, -p TCP
// port, --report_gbits (Gb/s, not MiB/s), -F (no warning on stderr when
// the CPU frequency is not at its maximum), -b --report-both (both
// directions, each reported apart), -R (RDMA CM), --tclass or, with RDMA
// CM, -T (TOS), --use_cuda; then the peer (not on the server). perftest
// has no CPU affinity option of its own: taskset -c pins it.
func perfArgs(pp *perfPlan, server bool) []string {
	s := pp.s
	var args []string
	if pp.cpus != "" {
		args = append(args, "taskset", "-c", pp.cpus)
	}
	args = append(args, s.Tool, "-d", pp.dev.Name, "-i", strconv.Itoa(pp.port.Num))
	if pp.gidIndex != nil {
		args = append(args, "-x", strconv.Itoa(*pp.gidIndex))
	}
	args = append(args, "-s", strconv.Itoa(s.Size))
	if s.Kind == "bandwidth" {
		args = append(args, "-q", strconv.Itoa(s.QPs))
	}
	if s.DurationSecs > 0 {
		args = append(args, "-D", strconv.Itoa(s.DurationSecs))
	} else {
		args = append(args, "-n", strconv.Itoa(s.Iterations))
	}
	args = append(args, "-p", strconv.Itoa(s.TCPPort))
	if s.Kind == "bandwidth" {
		args = append(args, "--report_gbits")
	}
	args = append(args, "-F")
	if s.Bidirectional {
		args = append(args, "-b", "--report-both")
	}
	if s.RdmaCM {
		args = append(args, "-R")
		if pp.source.IsValid() {
			// Without it, RDMA CM takes the route's source address,
			// which may belong to another device (to an address of
			// this host: the loopback).
			args = append(args, "--source_ip="+pp.source.String())
		}
	}
	if s.TrafficClass != nil {
		if s.RdmaCM {
			args = append(args, "-T", strconv.Itoa(*s.TrafficClass))
		} else {
			args = append(args, "--tclass="+strconv.Itoa(*s.TrafficClass))
		}
	}
	if s.UseCUDA != nil {
		args = append(args, "--use_cuda="+strconv.Itoa(*s.UseCUDA))
	}
	if !server {
		args = append(args, s.To)
	}
	return args
}

// runPerf runs one bandwidth or latency probe.
func runPerf(ctx context.Context, h *host.Host, inv *inventory.Inventory, p *schema.Probe) (Result, error) {
	s := p.Perf()
	r := Result{Name: p.Name, Kind: p.Kind(), Target: p.Target(), Outcome: OutcomeFailed}
	cannot := func(err error) (Result, error) {
		r.Outcome, r.Reason = OutcomeError, err.Error()
		return r, &ToolError{Probe: p.Name, Err: err}
	}
	pp, err := planPerf(h, inv, s, false)
	if err != nil {
		return cannot(err)
	}
	tool := perfTool(s.Tool)
	if pp.cpus != "" {
		if found, ok := host.Installed(h.Runner, tasksetTool.Program); ok && !found {
			return cannot(missing(tasksetTool))
		}
	}
	if found, ok := host.Installed(h.Runner, tool.Program); ok && !found {
		return cannot(missing(tool))
	}
	perf := pp.report()
	r.Perf = perf
	var before counterSnap
	if s.TrafficClass != nil {
		before = readPrioCounters(ctx, h, pp.netdev)
	}
	res, xe, err := runTool(ctx, h, tool, pp.args, s.Timeout)
	r.Command = host.Cmd{Args: pp.args}.String()
	if err != nil {
		return cannot(err)
	}
	rep := parsePerftest(string(res.Stdout), string(res.Stderr))
	if rep.cannot != "" {
		return cannot(fmt.Errorf("%s: %s", s.Tool, rep.cannot))
	}
	switch {
	case timedOut(xe):
		r.Reason = fmt.Sprintf("%s did not finish within %s", s.Tool, s.Timeout)
		if rep.problem != "" {
			r.Reason += ": " + rep.problem
		}
		return r, nil
	case xe != nil || rep.problem != "":
		msg := rep.problem
		if msg == "" {
			msg = fmt.Sprintf("exit status %d", xe.Code)
		}
		r.Reason = fmt.Sprintf("%s: %s", r.Target, msg)
		return r, nil
	}
	if why := rep.unmeasured(s.Bidirectional && s.Kind == "bandwidth"); why != "" {
		if e := calibrationLine(string(res.Stderr)); e != "" {
			why += ": " + e
		}
		return cannot(fmt.Errorf("%s measured nothing: %s", s.Tool, why))
	}
	if err := pp.fill(perf, &rep); err != nil {
		r.Reason = fmt.Sprintf("%s: %v", s.Tool, err)
		return r, nil
	}
	if before != nil {
		perf.Checks = append(perf.Checks, prioCheck(ctx, h, pp, before))
	}
	r.Passed, r.Reason = verdict(s, perf)
	if r.Passed {
		r.Outcome = OutcomePassed
	}
	return r, nil
}

// calibrationLine is perftest's complaint about its clock, if any.
func calibrationLine(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "Correlation coefficient") || strings.Contains(l, "Conflicting CPU frequency") {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// report is the result's Perf before the run: what the run is set to use.
func (pp *perfPlan) report() *Perf {
	s := pp.s
	return &Perf{Tool: s.Tool, Device: pp.dev.Name, Port: pp.port.Num, Netdev: pp.netdev, NUMANode: pp.numa, CPUs: pp.cpus,
		RdmaCM: s.RdmaCM, Bidirectional: s.Bidirectional, UseCUDA: s.UseCUDA, Size: s.Size, QPs: s.QPs, DurationS: s.DurationSecs,
		PortRate: pp.port.Rate, PortRateGbps: pp.port.RateGbps(), Floor: s.Floor.Text, Checks: []Check{}}
}

// fill puts perftest's report into perf, with the transport checks.
func (pp *perfPlan) fill(perf *Perf, rep *perfReport) error {
	s := pp.s
	// link_layer_str: "IB" for InfiniBand (and unspecified), "Ethernet".
	perf.LinkLayer = map[string]string{"IB": string(linklayer.InfiniBand), "Ethernet": string(linklayer.Ethernet)}[rep.linkType]
	if perf.LinkLayer == "" {
		perf.LinkLayer = rep.linkType
	}
	perf.GIDIndex = rep.gidIndex
	perf.GID = rep.localGID
	if perf.GID != "" {
		perf.GIDType = gidTypeOf(pp.port, rep.gidIndex, perf.GID)
	}
	switch {
	case rep.tos != nil:
		perf.TrafficClass = rep.tos
	case s.TrafficClass != nil:
		perf.TrafficClass = s.TrafficClass
	}
	if s.Kind == "bandwidth" {
		if err := pp.fillBandwidth(perf, rep); err != nil {
			return err
		}
	} else {
		if rep.lat == nil {
			return errors.New("no latency figures in its report")
		}
		l := rep.lat
		perf.Iterations = l.iters
		perf.LatencyUs, perf.LatencyMinUs, perf.LatencyAvgUs, perf.LatencyMaxUs = l.typical, l.min, l.avg, l.max
		perf.LatencyP99Us, perf.LatencyP999Us = l.p99, l.p999
		perf.CeilingUs = float64(s.Ceiling) / 1000
	}
	perf.Checks = append(perf.Checks, pp.transportChecks(perf, rep)...)
	if s.UseCUDA != nil {
		perf.GPU = pp.gpu(&rep.cuda)
		perf.Checks = append(perf.Checks, gpuCheck(*s.UseCUDA, &rep.cuda))
	}
	return nil
}

// gpu is the GPU perftest reported, found among the host's NVIDIA GPUs
// by its bus and device (perftest prints no PCI domain: the first GPU of
// that bus and device, in address order), with its relation to the
// probe's RDMA device.
func (pp *perfPlan) gpu(c *cudaReport) *PerfGPU {
	if c.picked == nil {
		return nil
	}
	g := &PerfGPU{CUDADevice: *c.picked, PCIe: c.devices[*c.picked], Name: c.name, BufferBytes: c.bufferBytes}
	if g.PCIe == "" {
		return g
	}
	for _, hg := range pp.gpus {
		// CUDA lists NVIDIA's GPUs only. "0000:8f:00.0": the bus and
		// device are the text between the domain's colon and the dot.
		i, j := strings.IndexByte(hg.PCI, ':'), strings.LastIndexByte(hg.PCI, '.')
		if hg.Vendor != "0x10de" || i < 0 || j < i || !strings.EqualFold(hg.PCI[i+1:j], g.PCIe) {
			continue
		}
		g.PCI = hg.PCI
		if hg.NUMANode >= 0 {
			n := hg.NUMANode
			g.NUMANode = &n
		}
		for _, a := range pp.dev.GPUAffinity {
			if a.GPU == hg.PCI {
				g.Relation = a.Relation.String()
			}
		}
		break
	}
	return g
}

// gpuCheck: the run sent from the GPU the probe names, as perftest's own
// lines show it (the device it picked, and the buffer it allocated
// there), not as the command line asked.
func gpuCheck(want int, c *cudaReport) Check {
	w := fmt.Sprintf("a buffer on CUDA device %d", want)
	var got string
	switch {
	case !c.initialized:
		got = "no CUDA lines in perftest's report (host memory)"
	case c.picked == nil:
		got = "no CUDA device picked in perftest's report"
	case *c.picked != want:
		got = fmt.Sprintf("CUDA device %d", *c.picked)
	case !c.allocated:
		got = fmt.Sprintf("no buffer allocated on CUDA device %d", want)
	default:
		got = w
	}
	return check("gpu_memory", w, got)
}

func (pp *perfPlan) fillBandwidth(perf *Perf, rep *perfReport) error {
	s := pp.s
	perf.FloorGbps = s.Floor.GbpsFor(perf.PortRateGbps)
	if !s.Bidirectional {
		if len(rep.bw) == 0 {
			return errors.New("no bandwidth figures in its report")
		}
		row := rep.bw[len(rep.bw)-1]
		perf.BandwidthGbps, perf.PeakGbps, perf.Iterations = row.avg, row.peak, row.iters
		if s.Tool == "ib_read_bw" {
			perf.InGbps = row.avg
		} else {
			perf.OutGbps = row.avg
		}
		return nil
	}
	local, remote, sum, ok := rep.directions()
	if !ok {
		return errors.New("no per-direction figures in its bidirectional report (Local results, Remote results)")
	}
	// ib_read_bw: each side reads, so what this side measured came in.
	out, in := local, remote
	if s.Tool == "ib_read_bw" {
		out, in = remote, local
	}
	perf.OutGbps, perf.InGbps, perf.SumGbps = out.avg, in.avg, sum.avg
	perf.BandwidthGbps = math.Min(out.avg, in.avg)
	perf.PeakGbps = math.Min(out.peak, in.peak)
	perf.Iterations = local.iters
	return nil
}

// transportChecks compare what perftest reports (its link type, the GID
// it used, its TOS) and the GID table with what the probe expects.
func (pp *perfPlan) transportChecks(perf *Perf, rep *perfReport) []Check {
	s := pp.s
	want := string(s.LinkLayer)
	if want == "" {
		want = string(pp.port.LinkLayer)
	}
	checks := []Check{check("link_layer", want, perf.LinkLayer)}
	if linklayer.LinkLayer(perf.LinkLayer) == linklayer.Ethernet || linklayer.LinkLayer(want) == linklayer.Ethernet {
		got := perf.GIDType
		if got == "" {
			got = "no GID in perftest's report"
			if perf.GID != "" {
				got = perf.GID + " is not in the GID table of " + pp.dev.Name + " port " + strconv.Itoa(pp.port.Num)
			}
		}
		checks = append(checks, check("gid_type", inventory.GIDRoCEv2, got))
	}
	if s.TrafficClass != nil {
		w := strconv.Itoa(*s.TrafficClass)
		switch {
		case rep.tos != nil:
			checks = append(checks, check("traffic_class", w, strconv.Itoa(*rep.tos)))
		case s.RdmaCM:
			checks = append(checks, check("traffic_class", w, "no TOS in perftest's report"))
		default:
			checks = append(checks, Check{Name: "traffic_class", Want: w, Got: "not in perftest's report (--tclass without RDMA CM)", Result: CheckUnverified})
		}
	}
	return checks
}

func check(name, want, got string) Check {
	c := Check{Name: name, Want: want, Got: got, Result: CheckOK}
	if want != got {
		c.Result = CheckFailed
	}
	return c
}

// gidTypeOf is the type of the port's GID table entry that holds gid:
// the entry at the index perftest reported, when it holds that GID; with
// no index, the entries holding it, when they agree. "" when the table
// has no such entry (or its entries of that GID differ in type).
func gidTypeOf(pt *inventory.Port, idx *int, gid string) string {
	a, err := netip.ParseAddr(gid)
	if err != nil {
		return ""
	}
	typ := ""
	for _, g := range pt.GIDs {
		b, err := netip.ParseAddr(g.GID)
		if err != nil || b != a {
			continue
		}
		switch {
		case idx != nil && g.Index == *idx:
			return g.Type
		case idx != nil:
		case typ != "" && typ != g.Type:
			return ""
		default:
			typ = g.Type
		}
	}
	return typ
}

// gbps writes a figure as perftest printed it (to six decimals at most:
// rxe's 0.016622 Gb/s stays that, not 0.02).
func gbps(v float64) string {
	return strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64) + " Gb/s"
}

// verdict gates the figures and the checks.
func verdict(s *schema.PerfSettings, perf *Perf) (bool, string) {
	var failed, unverified []string
	for _, c := range perf.Checks {
		switch c.Result {
		case CheckFailed:
			failed = append(failed, fmt.Sprintf("%s is %s, not %s", c.Name, c.Got, c.Want))
		case CheckUnverified:
			unverified = append(unverified, fmt.Sprintf("%s %s unverified: %s", c.Name, c.Want, c.Got))
		}
	}
	var figure string
	ok := true
	if s.Kind == "bandwidth" {
		figure = gbps(perf.BandwidthGbps)
		if s.Bidirectional {
			figure = fmt.Sprintf("%s out, %s in", gbps(perf.OutGbps), gbps(perf.InGbps))
		}
		switch {
		case s.Floor.Pct > 0 && perf.PortRateGbps <= 0:
			failed = append(failed, fmt.Sprintf("the floor %s is a share of the port's rate, and %s port %d has none in sysfs (%q)", s.Floor.Text, perf.Device, perf.Port, perf.PortRate))
			ok = false
		case perf.FloorGbps > 0:
			of := ""
			if s.Floor.Pct > 0 {
				of = fmt.Sprintf(" (%s of %s)", s.Floor.Text, perf.PortRate)
			}
			if perf.BandwidthGbps < perf.FloorGbps {
				figure = fmt.Sprintf("%s below the floor %s%s", figure, gbps(perf.FloorGbps), of)
				ok = false
			} else {
				figure = fmt.Sprintf("%s, floor %s%s", figure, gbps(perf.FloorGbps), of)
			}
		}
	} else {
		figure = fmt.Sprintf("%s us median", strconv.FormatFloat(perf.LatencyUs, 'f', -1, 64))
		if perf.CeilingUs > 0 {
			if perf.LatencyUs > perf.CeilingUs {
				figure = fmt.Sprintf("%s above the ceiling %s", figure, s.Ceiling)
				ok = false
			} else {
				figure = fmt.Sprintf("%s, ceiling %s", figure, s.Ceiling)
			}
		}
	}
	if g := perf.GPU; g != nil && g.PCI != "" {
		figure += fmt.Sprintf(" from the memory of CUDA device %d (%s", g.CUDADevice, g.PCI)
		if g.Relation != "" {
			figure += ", " + g.Relation + " to " + perf.Device
		}
		figure += ")"
	}
	if len(failed) > 0 {
		figure += "; " + strings.Join(failed, "; ")
		ok = false
	}
	if len(unverified) > 0 {
		figure += "; " + strings.Join(unverified, "; ")
	}
	return ok, figure
}
