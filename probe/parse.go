package probe

import (
	"regexp"
	"strconv"
	"strings"
)

// outcome is what a tool's output says: round trips answered, the average
// round trip, and the tool's own words for a failure.
type outcome struct {
	replies int
	rttMs   float64
	problem string
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

func parsePing(out, errs string) outcome {
	o := statsOf(out)
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
// "connect error -1" on stderr.
var rpingDataRE = regexp.MustCompile(`(?m)^ping data: rdma-ping-\d+: `)
var cmaEventRE = regexp.MustCompile(`(?m)^cma event (RDMA_CM_EVENT_\w+), error (-?\d+)`)

func parseRping(out, errs string) outcome {
	o := outcome{replies: len(rpingDataRE.FindAllString(out, -1))}
	if m := cmaEventRE.FindStringSubmatch(errs + "\n" + out); m != nil {
		o.problem = m[1] + " (error " + m[2] + ")"
	} else if o.replies == 0 {
		o.problem = firstLine(errs)
	}
	return o
}

// ibv_rc_pingpong ends with "3 iters in 0.00 seconds = 123.33 usec/iter".
var itersRE = regexp.MustCompile(`(?m)^(\d+) iters in [0-9.]+ seconds = ([0-9.]+) usec/iter`)

func parsePingpong(out, errs string) outcome {
	var o outcome
	if m := itersRE.FindStringSubmatch(out); m != nil {
		o.replies, _ = strconv.Atoi(m[1])
		us, _ := strconv.ParseFloat(m[2], 64)
		o.rttMs = us / 1000
		return o
	}
	o.problem = firstLine(errs)
	if o.problem == "" {
		o.problem = firstLine(out)
	}
	return o
}

func parseIBPing(out, errs string) outcome {
	o := statsOf(out)
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
