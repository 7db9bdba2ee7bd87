package schema

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"time"

	"github.com/rdmaform/rdmaform/linklayer"
)

// Bounds of the bandwidth and latency probes. Size, queue pairs and
// iterations are perftest's own (perftest_parameters.h of perftest
// 4.5-0.17: MAX_SIZE 8388608, MAX_QP_NUM 16384, MIN_ITER 5, MAX_ITER
// 100000000, DEF_PORT 18515, DEF_SIZE_BW 65536, DEF_SIZE_LAT 2, DEF_ITERS
// 1000); duration and timeout are rdmaform's, so that a run stays a test
// and not a load.
const (
	DefaultPerfTCPPort      = 18515
	DefaultBandwidthSize    = 65536
	DefaultLatencySize      = 2
	DefaultLatencyIters     = 1000
	DefaultPerfDuration     = "5s"
	MaxPerfDurationSecs     = 300
	MaxPerfTimeoutSecs      = 600
	PerfTimeoutGrace        = 20 * time.Second
	DefaultPerfItersTimeout = 60 * time.Second
	// MinFloorPct and MaxFloorPct bound a floor given as a percentage of
	// the port's rate; MaxFloorGbps one given in Gb/s (no port moves
	// more than 100 Tb/s; fabrictest's MaxBandwidthGbps too).
	MinFloorPct  = 1
	MaxFloorPct  = 100
	MaxFloorGbps = 100000
	// MinCeiling and MaxCeiling bound a latency ceiling.
	MinCeiling = 100 * time.Nanosecond
	MaxCeiling = time.Second
)

// PerfSettings is a bandwidth or latency probe with its defaults filled
// in: what the probe runner and the responder need, from either kind.
type PerfSettings struct {
	Kind          string // bandwidth or latency
	Tool          string // ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat
	To            string
	Device        string // "" when Netdev names the port
	Netdev        string
	Port          int
	Size          int
	QPs           int
	DurationSecs  int // 0 with iterations
	Iterations    int // 0 with a duration
	Bidirectional bool
	GIDIndex      *int
	RdmaCM        bool
	TrafficClass  *int
	Priority      *int // bandwidth only
	TCPPort       int
	CPUs          string // numa, none or a CPU list
	UseCUDA       *int
	Floor         Floor
	Ceiling       time.Duration // 0: none
	LinkLayer     linklayer.LinkLayer
	Timeout       time.Duration
}

// Floor is a bandwidth floor: a percentage of the port's rate, or an
// absolute figure in Gb/s; both zero when the probe has none.
type Floor struct {
	Pct  float64
	Gbps float64
	Text string // as written
}

// Perf is the probe's perftest settings, or nil for the other kinds.
// Validate has checked the fields; an unchecked bad value gives the
// default.
func (p *Probe) Perf() *PerfSettings {
	switch {
	case p.Bandwidth != nil:
		b := p.Bandwidth
		s := &PerfSettings{Kind: "bandwidth", To: b.To, Device: b.Device, Netdev: b.Netdev, Port: PortOr(b.Port),
			Size: intOr(b.Size, DefaultBandwidthSize), QPs: intOr(b.QPs, 1), Bidirectional: b.Bidirectional,
			GIDIndex: b.GIDIndex, RdmaCM: b.RdmaCM, TrafficClass: b.TrafficClass, Priority: b.Priority, TCPPort: intOr(b.TCPPort, DefaultPerfTCPPort),
			CPUs: strOr(b.CPUs, "numa"), UseCUDA: b.UseCUDA, LinkLayer: b.LinkLayer}
		s.Tool = "ib_" + strOr(b.Test, "write") + "_bw"
		s.Floor, _ = ParseFloor(b.Floor)
		if b.Iterations != nil {
			s.Iterations = *b.Iterations
			s.Timeout = timeoutOr(b.Timeout, DefaultPerfItersTimeout)
		} else {
			d, err := time.ParseDuration(strOr(b.Duration, DefaultPerfDuration))
			if err != nil || d < time.Second {
				d = 5 * time.Second
			}
			s.DurationSecs = int(d / time.Second)
			s.Timeout = timeoutOr(b.Timeout, time.Duration(s.DurationSecs)*time.Second+PerfTimeoutGrace)
		}
		return s
	case p.Latency != nil:
		l := p.Latency
		s := &PerfSettings{Kind: "latency", Tool: "ib_" + strOr(l.Test, "write") + "_lat", To: l.To, Device: l.Device, Netdev: l.Netdev,
			Port: PortOr(l.Port), Size: intOr(l.Size, DefaultLatencySize), QPs: 1, Iterations: intOr(l.Iterations, DefaultLatencyIters),
			GIDIndex: l.GIDIndex, RdmaCM: l.RdmaCM, TrafficClass: l.TrafficClass, TCPPort: intOr(l.TCPPort, DefaultPerfTCPPort),
			CPUs: strOr(l.CPUs, "numa"), LinkLayer: l.LinkLayer, Timeout: timeoutOr(l.Timeout, DefaultPerfItersTimeout)}
		s.Ceiling, _ = ParseCeiling(l.Ceiling)
		return s
	}
	return nil
}

func intOr(n *int, def int) int {
	if n == nil {
		return def
	}
	return *n
}

func strOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func timeoutOr(s string, def time.Duration) time.Duration {
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return def
	}
	return d
}

var floorPctRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*%$`)
var floorGbpsRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*Gb/s$`)

// ParseFloor reads a floor: "90%" (of the port's rate, 1-100) or
// "180Gb/s" / "180 Gb/s" (above 0, at most 100000). "" is no floor.
func ParseFloor(s string) (Floor, error) {
	if s == "" {
		return Floor{}, nil
	}
	if m := floorPctRE.FindStringSubmatch(s); m != nil {
		f, _ := strconv.ParseFloat(m[1], 64)
		if f < MinFloorPct || f > MaxFloorPct {
			return Floor{}, fmt.Errorf("%s is outside %d%%-%d%% of the port's rate", s, MinFloorPct, MaxFloorPct)
		}
		return Floor{Pct: f, Text: s}, nil
	}
	if m := floorGbpsRE.FindStringSubmatch(s); m != nil {
		f, _ := strconv.ParseFloat(m[1], 64)
		if f <= 0 || f > MaxFloorGbps {
			return Floor{}, fmt.Errorf("%s is outside 0-%d Gb/s (above 0)", s, MaxFloorGbps)
		}
		return Floor{Gbps: f, Text: s}, nil
	}
	return Floor{}, fmt.Errorf("%q is not a floor: give a percentage of the port's rate (90%%) or Gb/s (180Gb/s)", truncate(s))
}

// GbpsFor is the floor in Gb/s for a port of rate rateGbps (0 when the
// floor is a percentage and the rate is unknown).
func (f Floor) GbpsFor(rateGbps float64) float64 {
	if f.Pct > 0 {
		return math.Round(rateGbps*f.Pct/100*1000) / 1000
	}
	return f.Gbps
}

// ParseCeiling reads a latency ceiling, a duration from 100ns to 1s
// ("5us", "5µs", "1.5ms"). "" is no ceiling.
func ParseCeiling(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration (e.g. 5us, 1.5ms)", truncate(s))
	case d < MinCeiling:
		return 0, fmt.Errorf("%s is below the minimum %s", s, MinCeiling)
	case d > MaxCeiling:
		return 0, fmt.Errorf("%s is above the maximum %s", s, MaxCeiling)
	}
	return d, nil
}

// CheckCPUList says what is wrong with a cpus value (numa, none, or a
// CPU list such as 0-7,16, read as ParseCPUList reads one), or "" when
// it is fine.
func CheckCPUList(s string) string {
	if s == "numa" || s == "none" {
		return ""
	}
	if _, err := ParseCPUList(s); err != nil {
		return fmt.Sprintf("%q is not numa, none or a CPU list such as 0-7,16: %v", truncate(s), err)
	}
	return ""
}

func (v *validator) perfProbe(kp string, pr *Probe) {
	var to, device, netdev, timeout, cpus string
	var linkLayer linklayer.LinkLayer
	switch {
	case pr.Bandwidth != nil:
		b := pr.Bandwidth
		to, device, netdev, timeout, cpus, linkLayer = b.To, b.Device, b.Netdev, b.Timeout, b.CPUs, b.LinkLayer
		if b.Duration != "" && b.Iterations != nil {
			v.add(kp+".iterations", "give duration or iterations, not both")
		}
		if b.Duration != "" {
			d, err := time.ParseDuration(b.Duration)
			switch {
			case err != nil:
				v.add(kp+".duration", "%q is not a duration (e.g. 5s, 1m)", truncate(b.Duration))
			case d%time.Second != 0:
				v.add(kp+".duration", "%s is not whole seconds (perftest -D takes seconds)", b.Duration)
			case d < time.Second:
				v.add(kp+".duration", "%s is below the minimum 1s", b.Duration)
			case d > MaxPerfDurationSecs*time.Second:
				v.add(kp+".duration", "%s is above the maximum %ds", b.Duration, MaxPerfDurationSecs)
			}
		}
		if b.Test == "send" && b.Bidirectional && b.Iterations == nil {
			// src/send_bw.c (perftest 4.5-0.17): a bidirectional send
			// run with a duration skips xchg_bw_reports, so its Remote
			// results print memory that holds no report.
			v.add(kp+".bidirectional", "perftest does not exchange the two sides' figures of a bidirectional send run with a duration (its Remote results are not a measurement): give iterations")
		}
		if b.Priority != nil && b.TrafficClass == nil {
			v.add(kp+".priority", "priority is where traffic_class must land: give traffic_class too")
		}
		if _, err := ParseFloor(b.Floor); err != nil {
			v.add(kp+".floor", "%v", err)
		}
	case pr.Latency != nil:
		l := pr.Latency
		to, device, netdev, timeout, cpus, linkLayer = l.To, l.Device, l.Netdev, l.Timeout, l.CPUs, l.LinkLayer
		if _, err := ParseCeiling(l.Ceiling); err != nil {
			v.add(kp+".ceiling", "%v", err)
		}
	}
	v.probeAddr(kp, to)
	switch {
	case device == "" && netdev == "":
		v.add(kp, "give device (the local RDMA device, e.g. mlx5_0) or netdev (the netdev whose RDMA port carries the run)")
	case device != "" && netdev != "":
		v.add(kp+".netdev", "give device or netdev, not both")
	case device != "":
		v.check(kp+".device", CheckRDMAName(device))
	default:
		v.check(kp+".netdev", CheckNetdev(netdev))
		if v.spec.Src.Has(kp + ".port") {
			v.add(kp+".port", "port goes with device: a netdev names its port")
		}
	}
	if cpus != "" {
		v.check(kp+".cpus", CheckCPUList(cpus))
	}
	if timeout != "" {
		d, err := time.ParseDuration(timeout)
		switch {
		case err != nil:
			v.add(kp+".timeout", "%q is not a duration (e.g. 30s, 2m)", truncate(timeout))
		case d < time.Second:
			v.add(kp+".timeout", "%s is below the minimum 1s", timeout)
		case d > MaxPerfTimeoutSecs*time.Second:
			v.add(kp+".timeout", "%s is above the maximum %ds", timeout, MaxPerfTimeoutSecs)
		case pr.Bandwidth != nil && pr.Bandwidth.Iterations == nil:
			if s := pr.Perf(); d <= time.Duration(s.DurationSecs)*time.Second {
				v.add(kp+".timeout", "%s does not leave time for the %ds run: give more than the duration", timeout, s.DurationSecs)
			}
		}
	}
	if device != "" && linkLayer != "" {
		if ll, where := v.specLinkLayer(device, PortOr(portOf(pr))); ll != "" && ll != linkLayer {
			v.add(kp+".link_layer", "%s port %d is %s (%s), not %s", device, PortOr(portOf(pr)), ll, where, linkLayer)
		}
	}
	v.perfPorts(kp, pr)
}

func portOf(pr *Probe) *int {
	if pr.Bandwidth != nil {
		return pr.Bandwidth.Port
	}
	return pr.Latency.Port
}

// perfPorts refuses two bandwidth or latency probes to one peer on one
// TCP port: the peer's probe serve would start two perftest servers on
// it, and the second could not listen.
func (v *validator) perfPorts(kp string, pr *Probe) {
	s := pr.Perf()
	for i := range v.spec.Probes {
		o := &v.spec.Probes[i]
		if o == pr {
			return
		}
		if os := o.Perf(); os != nil && os.To == s.To && os.TCPPort == s.TCPPort && o.Name != pr.Name {
			v.add(kp+".tcp_port", "probe %s also runs perftest to %s on TCP port %d: the peer runs one perftest server a port; give this probe a tcp_port of its own", o.Name, s.To, s.TCPPort)
			return
		}
	}
}
