package sim

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
)

// The simulated fabric, for rdmaform probe and probe serve. A simulated
// host is alone, so its peers are modelled from its own addresses: every
// address of a subnet that one of its up netdevs is on answers, through
// that netdev, when the netdev's RDMA port (if it has one) is ACTIVE, and
// the peers run the responders probe serve starts (rping -s, an
// ibv_rc_pingpong server). A port that is not ACTIVE reaches nobody; an
// address outside every subnet goes to the default route's gateway,
// which answers nothing, or, without one, has no route. The host's own
// addresses answer ping (the kernel's loopback).
//
// The emulators below write the tools' output formats with writers of
// their own (they share nothing with probe/'s parsers: make lint checks
// it). Where each format comes from:
//
//   - ping: iputils 20221126 (Debian 12's iputils-ping), captured for real
//     on a development machine and in the kernel lab:
//     probe/testdata/real/ping-*.stdout (PROVENANCE.md there).
//   - rping: rdma-core librdmacm/examples/rping.c (rping_test_client's
//     "ping data: %s\n" with the buffer RPING_MSG_FMT "rdma-ping-%d: "
//     and the letters it fills, cb->size 64 by default; the event
//     handler's "cma event %s, error %d\n" and "%s DISCONNECT
//     EVENT...\n"; rping_connect_client's "wait for CONNECTED state %d\n")
//     and librdmacm/examples/common.c (create_event_channel's "No RDMA
//     devices were detected\n"), checked against the kernel lab's
//     captures probe/testdata/real/rping-*.
//   - ibv_rc_pingpong: rdma-core libibverbs/examples/rc_pingpong.c (main's
//     "  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n",
//     "  remote address: ...", "%lld bytes in %.2f seconds = %.2f
//     Mbit/sec\n", "%d iters in %.2f seconds = %.2f usec/iter\n", "IB
//     device %s not found\n", "Couldn't get port info\n", "can't read sgid
//     of index %d\n"; pp_client_exch_dest's perror "client read/write"
//     and "Couldn't read/write remote address\n"), checked against
//     probe/testdata/real/ibv_rc_pingpong-*.
//
// internal/testlab/simcheck's TestProbeEmulatorsParseLikeRealOutputs runs
// rdmaform's probes on the emulators and on the real captures and
// requires the same results.

// reach is what the simulated fabric does with a probe's packets.
type reach int

const (
	reachAnswers reach = iota // a peer (or this host) answers
	reachSilent               // sent, never answered
	reachNoRoute              // no route: connect() fails
	reachNoIface              // the interface asked for does not exist
)

// fabricPath is how the simulated host reaches an address: the verdict,
// the netdev and source address the packets leave with, and the RDMA
// port of that netdev (nil when it has none).
type fabricPath struct {
	reach  reach
	netdev *Netdev
	src    netip.Addr
	dev    *Device
	port   *Port
}

// pathTo finds how the host reaches to, leaving through iface when it is
// not empty (ping -I).
func (st *State) pathTo(to netip.Addr, iface string) fabricPath {
	if iface != "" && st.Netdev(iface) == nil {
		return fabricPath{reach: reachNoIface}
	}
	to = to.Unmap()
	for _, nd := range st.Netdevs {
		if !nd.Up || (iface != "" && nd.Name != iface) {
			continue
		}
		for _, a := range netdevAddrs(nd) {
			if a.Addr() == to {
				p := fabricPath{reach: reachAnswers, netdev: nd, src: to}
				p.dev, p.port = st.rdmaPortOf(nd)
				return p
			}
		}
	}
	for _, nd := range st.Netdevs {
		if !nd.Up || (iface != "" && nd.Name != iface) {
			continue
		}
		for _, a := range netdevAddrs(nd) {
			if !a.Contains(to) || a.Addr().Is4() != to.Is4() {
				continue
			}
			p := fabricPath{reach: reachAnswers, netdev: nd, src: a.Addr()}
			p.dev, p.port = st.rdmaPortOf(nd)
			if p.port != nil && p.port.State != "ACTIVE" {
				p.reach = reachSilent
			}
			return p
		}
	}
	if def := st.Netdev(st.DefaultRoute); def != nil && def.Up && (iface == "" || iface == def.Name) {
		p := fabricPath{reach: reachSilent, netdev: def}
		if as := netdevAddrs(def); len(as) > 0 {
			p.src = as[0].Addr()
		}
		return p
	}
	return fabricPath{reach: reachNoRoute}
}

// netdevAddrs are a netdev's addresses, static then dynamic.
func netdevAddrs(nd *Netdev) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range append(append([]string(nil), nd.Addrs...), nd.DynAddrs...) {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// rdmaPortOf is the RDMA device and port a netdev carries: an adapter
// port's own netdev, or the Soft-RoCE device on it.
func (st *State) rdmaPortOf(nd *Netdev) (*Device, *Port) {
	for _, d := range st.Devices {
		if d.Parent == nd.Name && len(d.Ports) > 0 {
			return d, d.Ports[0]
		}
		if d.Name == nd.Device {
			if p := d.Port(nd.Port); p != nil {
				return d, p
			}
		}
	}
	return nil, nil
}

// probeArgs are a probe tool's options (flags take no value, valued ones
// take one; any other is invalid) and its operands.
type probeArgs struct {
	opts     map[string]string
	operands []string
}

func parseProbeArgs(args []string, flags, valued string) (probeArgs, string) {
	pa := probeArgs{opts: map[string]string{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			pa.operands = append(pa.operands, args[i+1:]...)
			return pa, ""
		case len(a) == 2 && a[0] == '-' && strings.ContainsRune(flags, rune(a[1])):
			pa.opts[a] = ""
		case len(a) == 2 && a[0] == '-' && strings.ContainsRune(valued, rune(a[1])):
			if i+1 >= len(args) {
				return pa, fmt.Sprintf("option requires an argument -- '%c'", a[1])
			}
			pa.opts[a] = args[i+1]
			i++
		case strings.HasPrefix(a, "-"):
			return pa, fmt.Sprintf("invalid option -- '%s'", strings.TrimLeft(a, "-"))
		default:
			pa.operands = append(pa.operands, a)
		}
	}
	return pa, ""
}

// intOpt is a numeric option, def when it is absent.
func (pa probeArgs) intOpt(name string, def int) (int, error) {
	v, ok := pa.opts[name]
	if !ok {
		return def, nil
	}
	return strconv.Atoi(v)
}

// serverStopped is the exit code of an emulated server stopped through
// its context (the runner reports it as the real runner does: timed out
// or interrupted).
const serverStopped = -1

// blockUntilDone is a server: it serves until it is stopped.
func blockUntilDone(ctx context.Context) (string, string, int) {
	<-ctx.Done()
	return "", "", serverStopped
}

// pingTool emulates iputils ping: ping -n -c COUNT [-w SECS] [-I IFACE] [--] ADDR.
func pingTool(_ context.Context, s *Sim, args []string, _ []byte) (string, string, int) {
	pa, bad := parseProbeArgs(args, "n", "cwI")
	if bad != "" {
		return "", "ping: " + bad + "\n", 2
	}
	count, err1 := pa.intOpt("-c", 0)
	deadline, err2 := pa.intOpt("-w", 0)
	if err1 != nil || err2 != nil || len(pa.operands) != 1 || count <= 0 {
		return "", "ping: usage error: Destination address required\n", 1
	}
	dst := pa.operands[0]
	to, err := netip.ParseAddr(dst)
	if err != nil {
		return "", fmt.Sprintf("ping: %s: Name or service not known\n", dst), 2
	}
	iface := pa.opts["-I"]
	s.mu.Lock()
	path := s.state.pathTo(to, iface)
	s.mu.Unlock()
	switch path.reach {
	case reachNoIface:
		return "", fmt.Sprintf("ping: SO_BINDTODEVICE %s: No such device\n", iface), 2
	case reachNoRoute:
		return "", "ping: connect: Network is unreachable\n", 2
	}
	var b strings.Builder
	if iface != "" {
		fmt.Fprintf(&b, "PING %s (%s) from %s %s: 56(84) bytes of data.\n", dst, dst, path.src, iface)
	} else {
		fmt.Fprintf(&b, "PING %s (%s) 56(84) bytes of data.\n", dst, dst)
	}
	// One echo a second: a deadline shorter than the count cuts the run.
	sent := count
	if deadline > 0 && deadline < count {
		sent = deadline
	}
	if path.reach == reachSilent {
		if deadline > 0 {
			sent = deadline // ping -w keeps sending until its deadline
		}
		fmt.Fprintf(&b, "\n--- %s ping statistics ---\n", dst)
		fmt.Fprintf(&b, "%d packets transmitted, 0 received, 100%% packet loss, time %dms\n\n", sent, pingElapsed(sent))
		return b.String(), "", 1
	}
	rtts := make([]float64, sent)
	for i := range rtts {
		rtts[i] = simRTT(to, i)
		fmt.Fprintf(&b, "64 bytes from %s: icmp_seq=%d ttl=64 time=%.3f ms\n", dst, i+1, rtts[i])
	}
	// ping counts what it sent: a run the deadline ended lost nothing.
	fmt.Fprintf(&b, "\n--- %s ping statistics ---\n", dst)
	fmt.Fprintf(&b, "%d packets transmitted, %d received, 0%% packet loss, time %dms\n", sent, sent, pingElapsed(sent))
	minR, avg, maxR, mdev := rttStats(rtts)
	fmt.Fprintf(&b, "rtt min/avg/max/mdev = %.3f/%.3f/%.3f/%.3f ms\n", minR, avg, maxR, mdev)
	if sent < count {
		return b.String(), "", 1
	}
	return b.String(), "", 0
}

// pingElapsed is ping's "time Nms" for n echoes a second apart.
func pingElapsed(n int) int {
	if n <= 1 {
		return 0
	}
	return (n-1)*1000 + 3
}

// simRTT is a round trip of the simulated fabric, in ms: a few tens of
// microseconds, the same for the same peer and sequence number.
func simRTT(to netip.Addr, i int) float64 {
	b := to.As16()
	return 0.040 + float64((int(b[15])+7*i)%23)/1000
}

func rttStats(rtts []float64) (minR, avg, maxR, mdev float64) {
	minR = math.Inf(1)
	var sum, sq float64
	for _, r := range rtts {
		minR, maxR = math.Min(minR, r), math.Max(maxR, r)
		sum += r
		sq += r * r
	}
	n := float64(len(rtts))
	avg = sum / n
	mdev = math.Sqrt(math.Max(sq/n-avg*avg, 0))
	return minR, avg, maxR, mdev
}

// rpingTool emulates rdma-core's rping: the client (-c -a ADDR -p PORT
// -C COUNT -v) against the simulated fabric, and the server (-s ...),
// which serves until it is stopped.
func rpingTool(ctx context.Context, s *Sim, args []string, _ []byte) (string, string, int) {
	pa, bad := parseProbeArgs(args, "csvVdPq", "aIpCS")
	if bad != "" {
		return "", "rping: " + bad + "\n", 255
	}
	s.mu.Lock()
	noDevices := len(s.state.Devices) == 0
	s.mu.Unlock()
	if noDevices {
		return "", "No RDMA devices were detected\n", 19
	}
	addr := pa.opts["-a"]
	to, err := netip.ParseAddr(addr)
	if err != nil {
		return "getaddrinfo failed (Name or service not known) - invalid hostname or IP address\n", "", 255
	}
	if _, server := pa.opts["-s"]; server {
		return blockUntilDone(ctx)
	}
	count, err := pa.intOpt("-C", 0)
	if err != nil || count < 0 {
		return "", fmt.Sprintf("Invalid count %s\n", pa.opts["-C"]), 22
	}
	s.mu.Lock()
	path := s.state.pathTo(to, "")
	s.mu.Unlock()
	switch {
	case path.reach == reachNoRoute:
		return "", "rdma_resolve_addr: Network is unreachable\n", 255
	case path.reach != reachAnswers || path.port == nil:
		// The kernel lab's capture of a peer that does not answer.
		return "", "cma event RDMA_CM_EVENT_UNREACHABLE, error -110\nwait for CONNECTED state 4\n", 255
	}
	var b strings.Builder
	if _, verbose := pa.opts["-v"]; verbose {
		for i := 0; i < count; i++ {
			fmt.Fprintf(&b, "ping data: %s\n", rpingBuffer(i, 64))
		}
	}
	return b.String(), "client DISCONNECT EVENT...\n", 0
}

// rpingBuffer is the text rping's client sends in ping i: "rdma-ping-i: "
// then letters from 'A'+i on (wrapping after 'z' to 'A'), size-1 bytes.
func rpingBuffer(i, size int) string {
	buf := []byte(fmt.Sprintf("rdma-ping-%d: ", i))
	c := byte(65 + i%58)
	for len(buf) < size-1 {
		buf = append(buf, c)
		if c++; c > 122 {
			c = 65
		}
	}
	return string(buf[:size-1])
}

// pingpongTool emulates rdma-core's ibv_rc_pingpong: the client (-d DEV
// -i PORT -n ITERS -p TCPPORT [-g GIDX] ADDR), and the server (no ADDR),
// which serves until it is stopped.
func pingpongTool(ctx context.Context, s *Sim, args []string, _ []byte) (string, string, int) {
	pa, bad := parseProbeArgs(args, "eoOPtcjNU", "pdisrmnlg")
	if bad != "" {
		return "", "ibv_rc_pingpong: " + bad + "\n", 1
	}
	port, err1 := pa.intOpt("-i", 1)
	iters, err2 := pa.intOpt("-n", 1000)
	gidx, err3 := pa.intOpt("-g", -1)
	if err1 != nil || err2 != nil || err3 != nil || len(pa.operands) > 1 {
		return "", "ibv_rc_pingpong: invalid argument\n", 1
	}
	var out, errs string
	code := -2
	var d *Device
	var p *Port
	var gid string
	s.mu.Lock()
	st := s.state
	d = st.Device(pa.opts["-d"])
	switch {
	case d == nil:
		errs, code = fmt.Sprintf("IB device %s not found\n", pa.opts["-d"]), 1
	case d.Port(port) == nil:
		errs, code = "Couldn't get port info\n", 1
	default:
		p, gid = d.Port(port), "::"
		if gidx >= 0 {
			g, ok := st.gidAt(d, p, gidx)
			if !ok {
				errs, code = fmt.Sprintf("can't read sgid of index %d\n", gidx), 1
			}
			gid = g
		}
	}
	if code == -2 && len(pa.operands) == 1 {
		out, errs, code = pingpongClient(st, d, p, gid, gidx, iters, pa)
	}
	s.mu.Unlock()
	if code == -2 {
		return blockUntilDone(ctx)
	}
	return out, errs, code
}

// pingpongClient is ibv_rc_pingpong's client once its device, port and
// GID are set up.
func pingpongClient(st *State, d *Device, p *Port, gid string, gidx, iters int, pa probeArgs) (string, string, int) {
	port := p.Num
	lid := 0
	if p.LinkLayer == "InfiniBand" {
		lid = p.LID
	}
	var b strings.Builder
	qpn, psn := 0x11+port, 0xa4b002^iters
	fmt.Fprintf(&b, "  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", lid, qpn, psn, gid)
	to, err := netip.ParseAddr(pa.operands[0])
	if err != nil {
		return b.String(), fmt.Sprintf("Name or service not known for %s:%s\n", pa.operands[0], pa.opts["-p"]), 1
	}
	path := st.pathTo(to, "")
	if path.reach != reachAnswers || path.dev != d {
		// The kernel lab's capture of a peer that does not answer.
		return b.String(), "client read/write: No space left on device\nCouldn't read/write remote address\n", 1
	}
	remoteGID, remoteLID := "::", 0
	if gidx >= 0 {
		remoteGID = netip.AddrFrom16(to.As16()).String()
		if to.Is4() {
			remoteGID = "::ffff:" + to.String()
		}
	} else if p.LinkLayer == "InfiniBand" {
		remoteLID = p.SMLID + 1
	}
	fmt.Fprintf(&b, "  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", remoteLID, qpn+2, psn^0x3fe1d1, remoteGID)
	usec := 12.5 * float64(iters)
	bytes := int64(4096) * int64(iters) * 2
	fmt.Fprintf(&b, "%d bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, usec/1e6, float64(bytes)*8/usec)
	fmt.Fprintf(&b, "%d iters in %.2f seconds = %.2f usec/iter\n", iters, usec/1e6, usec/float64(iters))
	return b.String(), "", 0
}

// gidAt is a port's GID of an index in the text inet_ntop prints
// (::ffff:192.0.2.1), false when the index is beyond the table.
func (st *State) gidAt(d *Device, p *Port, idx int) (string, bool) {
	if idx >= gidTableLen {
		return "", false
	}
	gids := st.gidTable(d, p)
	if idx >= len(gids) {
		return "::", true
	}
	a := netip.AddrFrom16(gids[idx].addr)
	if a.Is4In6() {
		return "::ffff:" + a.Unmap().String(), true
	}
	return a.String(), true
}
