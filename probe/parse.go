package probe

import (
	"regexp"
	"strconv"
	"strings"
)

// outcome is what a tool's output says: round trips answered, the average
// round trip, and the tool's own words for a failure; or, in cannot, its
// words for why it could not run at all (it never reached the peer).
type outcome struct {
	replies int
	rttMs   float64
	problem string
	cannot  string
}

func parse(kind string, stdout, stderr []byte) outcome {
	switch kind {
	case "ping":
		return parsePing(string(stdout), string(stderr))
	case "rdma_cm":
		return parseRping(string(stdout), string(stderr))
	case "verbs":
		return parsePingpong(string(stdout), string(stderr))
	case "ib":
		return parseIBPing(string(stdout), string(stderr))
	}
	return outcome{}
}

// iputils ping and ibping end with the same statistics line:
// "3 packets transmitted, 3 received, 0% packet loss, time 2003ms".
var statsRE = regexp.MustCompile(`(?m)^(\d+) packets transmitted, (\d+) received`)

// "rtt min/avg/max/mdev = 0.040/0.046/0.052/0.005 ms" (ping),
// "rtt min/avg/max = 0.057/0.075/0.081 ms" (ibping).
var rttRE = regexp.MustCompile(`(?m)^rtt min/avg/max(?:/mdev)? = [0-9.]+/([0-9.]+)/`)

// ping's per-packet failures, "From 192.0.2.1 icmp_seq=1 Destination
// Host Unreachable", name the hop that answered instead of the peer.
var pingFromRE = regexp.MustCompile(`(?m)^From (\S+) icmp_seq=\d+ (.+)$`)

// ping prints "PING 192.0.2.1 (192.0.2.1) ... bytes of data." once its
// socket is set up; what fails before (an interface that does not exist,
// an address it cannot use) is an error on stderr, exit status 2. Of
// those, a missing route is the path's failure, not ping's:
// "ping: connect: Network is unreachable" (iputils 20221126, this
// machine, an address with no route in a namespace of its own).
var pingStartRE = regexp.MustCompile(`(?m)^PING `)
var noRouteRE = regexp.MustCompile(`Network is unreachable|No route to host`)

func parsePing(out, errs string) outcome {
	o := statsOf(out)
	if !pingStartRE.MatchString(out) && !statsRE.MatchString(out) {
		if e := firstLine(errs); e != "" && !noRouteRE.MatchString(e) {
			o.cannot = e
			return o
		}
	}
	if o.replies == 0 {
		if m := pingFromRE.FindStringSubmatch(out); m != nil {
			o.problem = strings.TrimSpace(m[2]) + " (reported by " + m[1] + ")"
		} else if e := firstLine(errs); e != "" {
			o.problem = e
		}
	}
	return o
}

func statsOf(out string) outcome {
	var o outcome
	if m := statsRE.FindStringSubmatch(out); m != nil {
		o.replies, _ = strconv.Atoi(m[2])
	}
	if m := rttRE.FindStringSubmatch(out); m != nil {
		o.rttMs, _ = strconv.ParseFloat(m[1], 64)
	}
	return o
}

// rping -v prints one "ping data: rdma-ping-N: ..." line per completed
// ping-pong; its failures are "cma event RDMA_CM_EVENT_..., error N" and
// "connect error -1" on stderr. What fails before it asks RDMA CM for the
// peer means it could not run: rdma-core's librdmacm/examples/common.c
// create_event_channel ("No RDMA devices were detected", "failed to
// create RDMA CM event channel: ...") and librdmacm/examples/rping.c
// (get_addr's "getaddrinfo failed (...) - invalid hostname or IP address"
// on stdout; perror's "Could not create event FD: ...", "rdma_create_id:
// ...", "rdma_resolve_addr: ...").
var rpingCannotRE = regexp.MustCompile(`(?m)^(No RDMA devices were detected|failed to create RDMA CM event channel: .*|getaddrinfo failed .*|Could not create event FD: .*|rdma_create_id: .*|rdma_resolve_addr: .*)$`)
var rpingDataRE = regexp.MustCompile(`(?m)^ping data: rdma-ping-\d+: `)
var cmaEventRE = regexp.MustCompile(`(?m)^cma event (RDMA_CM_EVENT_\w+), error (-?\d+)`)

func parseRping(out, errs string) outcome {
	o := outcome{replies: len(rpingDataRE.FindAllString(out, -1))}
	if m := cmaEventRE.FindStringSubmatch(errs + "\n" + out); m != nil {
		o.problem = m[1] + " (error " + m[2] + ")"
	} else if o.replies == 0 {
		if m := rpingCannotRE.FindString(out + "\n" + errs); m != "" {
			o.cannot = m
			return o
		}
		o.problem = firstLine(errs)
	}
	return o
}

// ibv_rc_pingpong ends with "3 iters in 0.00 seconds = 123.33 usec/iter".
var itersRE = regexp.MustCompile(`(?m)^(\d+) iters in [0-9.]+ seconds = ([0-9.]+) usec/iter`)

// ibv_rc_pingpong prints "  local address:  LID ..." once its device,
// port, queue pair and GID are set up, before it contacts the peer
// (rdma-core libibverbs/examples/rc_pingpong.c, main): an error without
// that line ("IB device mlx5_9 not found", "Couldn't get port info",
// "can't read sgid of index 3") is a probe that could not run.
var localAddrRE = regexp.MustCompile(`(?m)^\s*local address: `)

func parsePingpong(out, errs string) outcome {
	var o outcome
	if m := itersRE.FindStringSubmatch(out); m != nil {
		o.replies, _ = strconv.Atoi(m[1])
		us, _ := strconv.ParseFloat(m[2], 64)
		o.rttMs = us / 1000
		return o
	}
	if e := firstLine(errs); e != "" && !localAddrRE.MatchString(out) {
		o.cannot = e
		return o
	}
	o.problem = firstLine(errs)
	if o.problem == "" {
		o.problem = firstLine(out)
	}
	return o
}

// ibping reports its fatal errors on stdout, "ibping: iberror: failed:
// MSG" (rdma-core infiniband-diags/ibdiag_common.c, ibexit); those of
// infiniband-diags/ibping.c's main before the first ping ("Failed to open
// 'mlx5_0' port '1'", "can't serve class ...", "can't register ping
// class ...") mean it could not run; "can't resolve destination port"
// is the peer's absence.
var iberrorRE = regexp.MustCompile(`(?m)^\S*: iberror: (?:\[pid \d+\] \S+: )?failed: (.*)$`)

func parseIBPing(out, errs string) outcome {
	o := statsOf(out)
	if m := iberrorRE.FindStringSubmatch(out); m != nil && o.replies == 0 {
		if strings.HasPrefix(m[1], "can't resolve destination") {
			o.problem = m[1]
		} else {
			o.cannot = m[1]
		}
		return o
	}
	if o.replies == 0 {
		o.problem = firstLine(errs)
	}
	return o
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}
