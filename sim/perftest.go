package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rdmaform/rdmaform/host"
)

// The emulated perftest (ib_write_bw, ib_read_bw, ib_send_bw,
// ib_write_lat) and util-linux's taskset, for the bandwidth and latency
// probes. Where the output comes from: perftest 4.5-0.17 (Debian 12's
// perftest 4.5+0.17), src/perftest_parameters.c (ctx_print_test_info's
// test block, print_full_bw_report's REPORT_FMT under RESULT_FMT_G,
// print_report_lat's REPORT_FMT_LAT under RESULT_FMT_LAT, link_layer_str's
// "IB"/"Ethernet", set_link_layer's " Port number %d state is %s"),
// src/perftest_communication.c (ctx_print_pingpong_data, establish
// connection's "Couldn't connect to %s:%d"), src/write_bw.c (the sum of a
// bidirectional run, then " Local results: " and " Remote results: " with
// --report-both), src/perftest_resources.c (ctx_find_dev's "IB device %s
// not found", pp_init_gpu's CUDA lines and create_single_mr's GPU
// buffer: no GPU here, so these are not checked against a capture);
// checked against the kernel lab's
// captures in probe/testdata/real by internal/testlab/simcheck.
//
// The simulated fabric measures what the port's rate allows: a write
// moves 97 % of the sysfs rate, a read 96 %, a send 96.5 %, less for
// small messages (a per-message cost of 256 bytes' time); a latency of
// 1.0 us on InfiniBand and 1.6 us on RoCE for 2 bytes, plus the message's
// time on the wire. A slow fault (sim fault --slow) scales both.

// tasksetTool emulates util-linux's taskset -c LIST PROGRAM ARGS...: it
// runs the program (an emulated tool, with its faults) when every CPU of
// the list exists.
func tasksetTool(ctx context.Context, s *Sim, args []string, stdin []byte) (string, string, int) {
	if len(args) < 3 || args[0] != "-c" {
		return "", "taskset: bad usage\nTry 'taskset --help' for more information.\n", 1
	}
	cpus, ok := cpuListOf(args[1])
	if !ok {
		return "", fmt.Sprintf("taskset: failed to parse CPU list: %s\n", args[1]), 1
	}
	// sched_setaffinity() refuses a mask with no online CPU in it
	// (the simulated host's CPUs and NUMA nodes: irq.go).
	s.lock()
	online := s.state.onlineCPUs()
	s.unlock()
	anyOnline := false
	for _, c := range cpus {
		anyOnline = anyOnline || slices.Contains(online, c)
	}
	if !anyOnline {
		return "", "taskset: failed to set pid 0's affinity: Invalid argument\n", 1
	}
	timeout := 24 * time.Hour
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	res, err := (&runner{sim: s}).Run(ctx, host.Cmd{Args: args[2:], Stdin: stdin, Timeout: timeout})
	var xe *host.ExitError
	if errors.As(err, &xe) {
		switch {
		case errors.Is(xe.Err, host.ErrNotFound):
			return "", fmt.Sprintf("taskset: failed to execute %s: No such file or directory\n", args[2]), 127
		case xe.Err != nil && ctx.Err() != nil:
			return string(res.Stdout), string(res.Stderr), serverStopped
		}
		return string(xe.Stdout), string(xe.Stderr), xe.Code
	}
	return string(res.Stdout), string(res.Stderr), 0
}

// cpuListOf reads a CPU list (0-3,8).
func cpuListOf(s string) ([]int, bool) {
	var out []int
	for _, r := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, false
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, false
			}
		}
		for c := a; c <= b && c <= a+8192; c++ {
			out = append(out, c)
		}
	}
	return out, len(out) > 0
}

// perftestRun is one emulated perftest command line.
type perftestRun struct {
	tool                 string // ib_write_bw ...
	verb                 string // RDMA_Write, RDMA_Read, Send
	lat                  bool
	dev                  string
	port, gidIndex, size int
	qps, duration, iters int
	tcpPort              int
	bidir, reportBoth    bool
	gbits, rdmaCM        bool
	tos, tclass, cuda    int
	peer, source         string
}

// parsePerftestArgs reads the options rdmaform gives perftest (getopt_long
// as perftest's parser takes them), or returns getopt's complaint.
func parsePerftestArgs(tool string, args []string) (perftestRun, string) {
	r := perftestRun{tool: tool, port: 1, gidIndex: -1, qps: 1, tcpPort: 18515, tos: -1, tclass: -1, cuda: -1}
	r.lat = strings.HasSuffix(tool, "_lat")
	r.verb = map[string]string{"write": "RDMA_Write", "read": "RDMA_Read", "send": "Send"}[strings.Split(tool, "_")[1]]
	r.size, r.iters = 65536, 5000
	if r.lat {
		r.size, r.iters = 2, 1000
	}
	ints := map[string]*int{"-i": &r.port, "-x": &r.gidIndex, "-s": &r.size, "-q": &r.qps, "-D": &r.duration, "-n": &r.iters, "-p": &r.tcpPort, "-T": &r.tos}
	longInts := map[string]*int{"--tclass": &r.tclass, "--use_cuda": &r.cuda}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		switch {
		case a == "-F":
		case a == "-b":
			r.bidir = true
		case a == "-R":
			r.rdmaCM = true
		case a == "--report_gbits":
			r.gbits = true
		case a == "--report-both":
			r.reportBoth = true
		case name == "--source_ip" && hasVal:
			r.source = val
		case a == "-d":
			if i+1 >= len(args) {
				return r, fmt.Sprintf("%s: option requires an argument -- 'd'", tool)
			}
			i++
			r.dev = args[i]
		case ints[a] != nil:
			if i+1 >= len(args) {
				return r, fmt.Sprintf("%s: option requires an argument -- '%s'", tool, a[1:])
			}
			i++
			n, err := strconv.Atoi(args[i])
			if err != nil {
				return r, fmt.Sprintf(" %s argument is not an integer: %s", a, args[i])
			}
			*ints[a] = n
		case longInts[name] != nil:
			if !hasVal {
				if i+1 >= len(args) {
					return r, fmt.Sprintf("%s: option '%s' requires an argument", tool, name)
				}
				i++
				val = args[i]
			}
			n, err := strconv.Atoi(val)
			if err != nil {
				return r, fmt.Sprintf(" %s argument is not an integer: %s", name, val)
			}
			*longInts[name] = n
		case strings.HasPrefix(a, "--"):
			return r, fmt.Sprintf("%s: unrecognized option '%s'", tool, a)
		case strings.HasPrefix(a, "-"):
			return r, fmt.Sprintf("%s: invalid option -- '%s'", tool, strings.TrimLeft(a, "-"))
		default:
			if r.peer != "" {
				return r, fmt.Sprintf("%s: too many operands", tool)
			}
			r.peer = a
		}
	}
	return r, ""
}

// perftestTool emulates one perftest program.
func perftestTool(tool string) toolFunc {
	return func(ctx context.Context, s *Sim, args []string, _ []byte) (string, string, int) {
		r, bad := parsePerftestArgs(tool, args)
		if bad != "" {
			return "", bad + "\n Parser function exited with Error\n", 1
		}
		if r.lat && r.cuda >= 0 {
			// perftest_parameters.c force_dependecies.
			return resultLine, " Perftest supports CUDA only in BW tests\n", 1
		}
		s.lock()
		out, errs, code := perftestClient(s, &r)
		s.unlock()
		if code == -2 {
			return blockUntilDone(ctx) // a server: it waits for its client
		}
		return out, errs, code
	}
}

const resultLine = "---------------------------------------------------------------------------------------\n"

// perftestClient is a perftest run once its options are read; code -2:
// a server that waits for its client. Callers hold s.mu.
func perftestClient(s *Sim, r *perftestRun) (string, string, int) {
	st := s.state
	d := st.Device(r.dev)
	if r.dev == "" && len(st.Devices) > 0 {
		d = st.Devices[0]
	}
	if d == nil {
		if len(st.Devices) == 0 {
			return "", "No IB devices found\n Unable to find the Infiniband/RoCE device\n", 1
		}
		return "", fmt.Sprintf("IB device %s not found\n Unable to find the Infiniband/RoCE device\n", r.dev), 1
	}
	p := d.Port(r.port)
	if p == nil {
		return "", fmt.Sprintf(" Unable to query port %d attributes\n Couldn't set the link layer\n Couldn't get context for the device\n", r.port), 1
	}
	if p.State != "ACTIVE" {
		names := map[string]string{"NOP": "Nop", "DOWN": "Down", "INIT": "Init", "ARMED": "Armed", "ACTIVE_DEFER": "Active Defer"}
		return "", fmt.Sprintf(" Port number %d state is %s\n Couldn't set the link layer\n Couldn't get context for the device\n", r.port, names[p.State]), 1
	}
	eth := p.LinkLayer == "Ethernet"
	if eth && r.gidIndex < 0 {
		r.gidIndex = 0 // check_link: Ethernet without -x takes index 0
	}
	var localGID netip.Addr
	if r.gidIndex >= 0 {
		g, ok := st.gidAt(d, p, r.gidIndex)
		if !ok {
			return "", fmt.Sprintf(" Failed to query GID of index %d\n Couldn't create IB resources\n", r.gidIndex), 1
		}
		localGID, _ = netip.ParseAddr(g)
	}
	if r.peer == "" {
		return "", "", -2
	}
	to, err := netip.ParseAddr(r.peer)
	if err != nil {
		return "", "Problem in resolving basic address and port\n Unable to init the socket connection\n", 1
	}
	path := st.pathTo(to, "")
	if src, err := netip.ParseAddr(r.source); r.rdmaCM && r.source != "" && (err != nil || path.src != src) {
		// rdma_bind_addr to an address the route does not leave from.
		return "", " rdma_bind_addr failed\n Unable to create the resources needed by comm struct\n Unable to init the socket connection\n", 1
	}
	if path.reach != reachAnswers || path.dev != d {
		if r.rdmaCM {
			return "", "Unable to connect (retries = 3)\n Unable to init the socket connection\n", 1
		}
		// perftest_communication.c ethernet_client_connect, then
		// establish_connection's message (no newline), then main's.
		return "", fmt.Sprintf("Couldn't connect to %s:%d\nUnable to open file descriptor for socket connection Unable to init the socket connection\n", r.peer, r.tcpPort), 1
	}
	if r.rdmaCM {
		// RDMA CM resolves the GID of the source address, RoCE v2 by
		// default, and perftest reports its index.
		localGID = netip.AddrFrom16(path.src.As16())
		for i, g := range st.gidTable(d, p) {
			if netip.AddrFrom16(g.addr) == localGID && (g.typ == "RoCE v2" || !eth) {
				r.gidIndex = i
				break
			}
		}
	}
	factor := 1.0
	if f := s.takeLocked(faultSlow, r.tool, r.peer); f != nil {
		factor = f.Slow
	}
	var b strings.Builder
	var warn string
	if d.Driver == "rxe" && r.verb == "RDMA_Read" {
		// ctx_set_max_inline: a device perftest does not know (rxe),
		// with an inline size set (a read test sets 0).
		b.WriteString(resultLine)
		warn = "Device not recognized to implement inline feature. Disabling it\n"
	}
	if r.cuda >= 0 {
		// ctx_init (after the connection to the peer): pp_init_gpu,
		// then create_single_mr's GPU buffer.
		errs, code := cudaLines(&b, st, r.cuda)
		if code != 0 {
			if errs != "" && !r.rdmaCM {
				errs += " Couldn't create IB resources\n" // write_bw.c main
			}
			// With RDMA CM, ctx_init runs in the CM's route handler,
			// whose error lines (and errno's) follow: not modelled.
			return b.String(), errs, code
		}
		fmt.Fprintf(&b, "cuMemAlloc() of a %d bytes GPU buffer\n", cudaBufferSize(r))
		b.WriteString("allocated GPU buffer address at 00007f6eff000000 pointer=0x7f6eff000000\n")
	}
	perftestHeader(&b, st, r, d, p, path.netdev)
	perftestAddrs(&b, r, eth, localGID, to)
	rate := portRateGbps(p.Rate)
	if r.lat {
		perftestLatency(&b, r, eth, rate, factor)
	} else {
		perftestBandwidth(&b, r, rate, factor)
		// The port's per-priority counters move with the run.
		tc := r.tclass
		if r.rdmaCM {
			tc = r.tos
		}
		moved := uint64(float64(r.size) * float64(r.iters*r.qps))
		if r.duration > 0 {
			moved = uint64(bwOf(r, rate, factor) * 1e9 / 8 * float64(r.duration))
		}
		var out, in uint64
		switch {
		case r.bidir:
			out, in = moved, moved
		case r.verb == "RDMA_Read":
			in = moved
		default:
			out = moved
		}
		countTraffic(path.netdev, tc, out, in)
		_ = s.save()
	}
	return b.String(), warn, 0
}

// cudaLines are pp_init_gpu's lines for GPU idx of the host's NVIDIA
// GPUs (by PCI address), on stdout; with none, cuInit's error and exit
// 1 (pp_init_gpu exits); with no GPU idx, the error on stderr and
// ctx_init's "Couldn't init GPU context".
func cudaLines(b *strings.Builder, st *State, idx int) (string, int) {
	var gpus []*GPU
	for _, g := range st.GPUs {
		if g.Vendor == "0x10de" {
			gpus = append(gpus, g)
		}
	}
	sort.Slice(gpus, func(i, j int) bool { return gpus[i].PCI < gpus[j].PCI })
	b.WriteString("initializing CUDA\n")
	if len(gpus) == 0 {
		b.WriteString("cuInit(0) returned 100\n") // CUDA_ERROR_NO_DEVICE
		return "", 1
	}
	if idx >= len(gpus) {
		return fmt.Sprintf("No such device ID (%d) exists in system\nCouldn't init GPU context\n", idx), 1
	}
	b.WriteString("Listing all CUDA devices in system:\n")
	for i, g := range gpus {
		var dom, bus, dev, fn int
		_, _ = fmt.Sscanf(g.PCI, "%x:%x:%x.%x", &dom, &bus, &dev, &fn)
		fmt.Fprintf(b, "CUDA device %d: PCIe address is %02X:%02X\n", i, bus, dev)
	}
	fmt.Fprintf(b, "\nPicking device No. %d\n", idx)
	fmt.Fprintf(b, "[pid = %d, dev = %d] device name = [NVIDIA GPU]\n", 4242, idx)
	b.WriteString("creating CUDA Ctx\nmaking it the current CUDA Ctx\n")
	return "", 0
}

// cudaBufferSize is ctx_init's buff_size: the message size (at least
// the cycle buffer, a 4 KiB page), rounded up to the 64-byte cache line,
// twice (send and receive), for each queue pair.
func cudaBufferSize(r *perftestRun) int {
	size := max(r.size, 4096)
	size = (size + 63) / 64 * 64
	return size * 2 * r.qps
}

func portRateGbps(rate string) float64 {
	f, _ := strconv.ParseFloat(strings.Fields(rate + " 0")[0], 64)
	return f
}

// perftestHeader is ctx_print_test_info's block.
func perftestHeader(b *strings.Builder, st *State, r *perftestRun, d *Device, p *Port, nd *Netdev) {
	kind := "BW"
	if r.lat {
		kind = "Latency"
	}
	bidir := ""
	if r.bidir {
		bidir = "Bidirectional "
	}
	b.WriteString(resultLine)
	fmt.Fprintf(b, "                    %s %s%s Test\n", r.verb, bidir, kind)
	fmt.Fprintf(b, " Dual-port       : OFF\t\tDevice         : %s\n", d.Name)
	fmt.Fprintf(b, " Number of qps   : %d\t\tTransport type : IB\n", r.qps)
	b.WriteString(" Connection type : RC\t\tUsing SRQ      : OFF\n")
	// HAVE_RO: relaxed ordering is on by default in BW tests, off in
	// latency tests (as Debian's build prints them).
	if r.lat {
		b.WriteString(" PCIe relax order: OFF\n")
	} else {
		b.WriteString(" PCIe relax order: ON\n")
	}
	b.WriteString(" ibv_wr* API     : OFF\n")
	if r.peer != "" || r.bidir {
		tx := 128
		if r.lat {
			tx = 1
		}
		fmt.Fprintf(b, " TX depth        : %d\n", tx)
	}
	if r.verb == "Send" && (r.peer == "" || r.bidir) {
		b.WriteString(" RX depth        : 512\n")
	}
	if !r.lat {
		// A duration run signals every completion (cq_mod 1).
		mod := 100
		if r.duration > 0 {
			mod = 1
		}
		fmt.Fprintf(b, " CQ Moderation   : %d\n", mod)
	}
	fmt.Fprintf(b, " Mtu             : %d[B]\n", activeMTU(p, nd))
	link := "IB"
	if p.LinkLayer == "Ethernet" {
		link = "Ethernet"
	}
	fmt.Fprintf(b, " Link type       : %s\n", link)
	if r.gidIndex >= 0 {
		fmt.Fprintf(b, " GID index       : %d\n", r.gidIndex)
	}
	// ctx_set_max_inline and ctx_set_out_reads take the device's limits:
	// rxe has no inline data in these tests and 128 outstanding reads;
	// mlx5 220 bytes of inline write data (DEF_INLINE_WRITE) and 16 reads.
	switch soft := d.Driver == "rxe"; {
	case r.verb == "RDMA_Read" && soft:
		b.WriteString(" Outstand reads  : 128\n")
	case r.verb == "RDMA_Read":
		b.WriteString(" Outstand reads  : 16\n")
	case r.lat && !soft:
		b.WriteString(" Max inline data : 220[B]\n")
	default:
		b.WriteString(" Max inline data : 0[B]\n")
	}
	cm, ex := "OFF", "Ethernet"
	if r.rdmaCM {
		cm, ex = "ON", "rdma_cm"
	}
	fmt.Fprintf(b, " rdma_cm QPs\t : %s\n", cm)
	fmt.Fprintf(b, " Data ex. method : %s", ex)
	if r.rdmaCM && r.tos >= 0 {
		fmt.Fprintf(b, " \tTOS    : %d", r.tos)
	}
	b.WriteString("\n" + resultLine)
}

// activeMTU is the port's active MTU in bytes: on RoCE the largest IB MTU
// that fits the netdev's MTU (ib_mtu_int_to_enum, iboe_get_mtu), else 4096.
func activeMTU(p *Port, nd *Netdev) int {
	if p.LinkLayer != "Ethernet" || nd == nil {
		return 4096
	}
	for _, m := range []int{4096, 2048, 1024, 512} {
		if nd.MTU >= m+88 { // IB headers: GRH 40, BTH 12, and the rest
			return m
		}
	}
	return 256
}

// perftestAddrs are ctx_print_pingpong_data's lines for one queue pair
// each side.
func perftestAddrs(b *strings.Builder, r *perftestRun, eth bool, local netip.Addr, peer netip.Addr) {
	remote := netip.AddrFrom16(peer.As16())
	for side, g := range []netip.Addr{local, remote} {
		name := [2]string{"local", "remote"}[side]
		for q := 0; q < r.qps; q++ {
			fmt.Fprintf(b, " %s address: LID %s QPN %s PSN %s", name, cHex(0, 4), cHex(0x11+q+side*r.qps, 6), cHex(0x5a3c1+q*0x111+side*0x2222, 6))
			if r.verb != "Send" {
				if r.verb == "RDMA_Read" {
					fmt.Fprintf(b, " OUT %s", cHex(16, 4))
				}
				fmt.Fprintf(b, " RKey %s VAddr %s", cHex(0x1a2b+q, 8), cHex(0x7f0000000000+q*0x10000, 16))
			}
			b.WriteString("\n")
			if (eth || r.gidIndex >= 0) && g.IsValid() {
				raw := g.As16()
				parts := make([]string, 16)
				for i, x := range raw {
					parts[i] = fmt.Sprintf("%02d", x)
				}
				fmt.Fprintf(b, " GID: %s\n", strings.Join(parts, ":"))
			}
		}
	}
	b.WriteString(resultLine)
}

// cHex is C's %#0Nx: the width counts the 0x, and 0 has none.
func cHex(v, width int) string {
	if v == 0 {
		return fmt.Sprintf("%0*x", width, 0)
	}
	return fmt.Sprintf("0x%0*x", width-2, v)
}

// bwOf is what one direction moves, in Gb/s.
func bwOf(r *perftestRun, rate, factor float64) float64 {
	eff := map[string]float64{"RDMA_Write": 0.97, "RDMA_Read": 0.96, "Send": 0.965}[r.verb]
	return rate * eff * float64(r.size) / float64(r.size+256) * factor
}

func perftestBandwidth(b *strings.Builder, r *perftestRun, rate, factor float64) {
	bw := bwOf(r, rate, factor)
	iters := r.iters
	if r.duration > 0 {
		iters = int(bw * 1e9 / 8 * float64(r.duration) / float64(r.size))
	} else {
		iters *= r.qps
	}
	head, unit := " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n", 1.0
	if !r.gbits {
		head, unit = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n", 1e9/8/1048576
	}
	row := func(avg float64) string {
		mpps := avg / unit * 1e9 / 8 / float64(r.size) / 1e6
		peak := avg * 1.003
		if r.duration > 0 {
			peak = 0 // a duration run measures no peak
		}
		if r.gbits && avg < 0.1 {
			// REPORT_FMT_EXT, print_full_bw_report's inc_accuracy.
			return fmt.Sprintf(" %-7d    %d           %-7.6f            %-7.6f            %-7.6f\n", r.size, iters, peak, avg, mpps)
		}
		return fmt.Sprintf(" %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f\n", r.size, iters, peak, avg, mpps)
	}
	b.WriteString(head)
	v := bw * unit
	if !r.bidir {
		b.WriteString(row(v))
		b.WriteString(resultLine)
		return
	}
	if r.verb == "Send" && r.duration > 0 {
		b.WriteString(row(v)) // print_report_bw's own line before the sum
	}
	b.WriteString(row(2 * v))
	if r.reportBoth {
		for _, side := range []string{"Local", "Remote"} {
			b.WriteString(resultLine)
			fmt.Fprintf(b, "\n %s results: \n", side)
			b.WriteString(resultLine)
			b.WriteString(head)
			b.WriteString(row(v))
		}
	}
	b.WriteString(resultLine)
}

func perftestLatency(b *strings.Builder, r *perftestRun, eth bool, rate, factor float64) {
	base := 1.0
	if eth {
		base = 1.6
	}
	if rate <= 0 {
		rate = 1
	}
	typ := (base + float64(r.size)*8/(rate*1e3)) / factor
	b.WriteString(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n")
	fmt.Fprintf(b, " %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n",
		r.size, r.iters, typ*0.96, typ*3.1, typ, typ*1.02, math.Round(typ*4)/100, typ*1.2, typ*2.4)
	b.WriteString(resultLine)
}
