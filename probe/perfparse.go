package probe

import (
	"fmt"
	"math"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// perfReport is what perftest printed (perftest 4.5-0.17, Debian 12's
// perftest 4.5+0.17): the test information block of
// src/perftest_parameters.c ctx_print_test_info (" Device         : %s",
// " Link type       : %s", " GID index       : %d", " rdma_cm QPs\t : %s",
// " Data ex. method : %s" and, with RDMA CM and -T, " \tTOS    : %d"),
// the addresses of src/perftest_communication.c ctx_print_pingpong_data
// (BASIC_ADDR_FMT " %s address: LID %#04x QPN %#06x PSN %#06x" and
// PERF_GID_FMT " %s: %02d:...", the GID's 16 bytes in decimal), and the
// result tables of print_full_bw_report (REPORT_FMT under RESULT_FMT_G
// " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]
// MsgRate[Mpps]", or RESULT_FMT's MB/sec, MiB/s there) and of
// print_report_lat (REPORT_FMT_LAT under RESULT_FMT_LAT); with -b
// --report-both, src/write_bw.c (and read_bw.c, send_bw.c) print the
// sum, then " Local results: " and " Remote results: " tables.
type perfReport struct {
	device   string
	linkType string
	gidIndex *int
	rdmaCM   bool
	tos      *int
	localGID string
	bw       []bwRow
	lat      *latRow
	cuda     cudaReport
	// cannot is perftest's words for why it could not run (before it
	// reached the peer); problem its words for a run that failed.
	cannot, problem string
}

// unmeasured says why a figure of the report is not a measurement: a
// run of N iterations at 0 Gb/s, or a latency that is not a number.
// perftest times its runs with the CPU's cycle counter, calibrated
// against gettimeofday (src/get_clock.c get_cpu_mhz); when the
// calibration fails (sample_get_cpu_mhz: "Correlation coefficient r^2: %g
// < 0.9" on stderr, seen in the kernel lab under QEMU's TCG), -F makes
// print_report_bw report 0 instead of refusing ("Can't produce a
// report"), and print_report_lat divides by 0.
func (r *perfReport) unmeasured(bidir bool) string {
	rows := r.bw
	if bidir {
		l, rm, _, ok := r.directions()
		if !ok {
			return "its report has no per-direction figures of this run (Local results and Remote results of one message size)"
		}
		rows = []bwRow{l, rm}
	} else if len(rows) > 0 {
		rows = rows[len(rows)-1:]
	}
	for _, row := range rows {
		who := "it"
		if row.section == "remote" {
			who = "the peer's perftest"
		}
		switch {
		case math.IsNaN(row.avg) || math.IsInf(row.avg, 0):
			return fmt.Sprintf("%s reported %g Gb/s", who, row.avg)
		case row.iters == 0:
			return fmt.Sprintf("%s completed no iteration", who)
		case row.avg == 0:
			return fmt.Sprintf("%s could not time its %d iterations (0 Gb/s: its CPU clock calibration failed)", who, row.iters)
		}
	}
	if l := r.lat; l != nil {
		for _, v := range []float64{l.min, l.max, l.typical, l.avg, l.p99, l.p999} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Sprintf("it could not time its %d iterations (a latency of %g us: its CPU clock calibration failed)", l.iters, v)
			}
		}
	}
	return ""
}

// cudaReport is what a perftest run with --use_cuda printed of the GPU
// (src/perftest_resources.c, perftest 4.5-0.17: pp_init_gpu's
// "initializing CUDA", "CUDA device %d: PCIe address is %02X:%02X" for
// every device, "Picking device No. %d", "[pid = %d, dev = %d] device
// name = [%s]"; create_single_mr's "cuMemAlloc() of a %lu bytes GPU
// buffer" and "allocated GPU buffer address at %016llx pointer=%p").
type cudaReport struct {
	initialized bool
	devices     map[int]string // CUDA index: its PCIe bus and device, "8F:00"
	picked      *int
	name        string
	bufferBytes int64
	allocated   bool
	// problem is the CUDA driver's complaint on stdout (cuInit and the
	// context calls print their error codes there, then give up).
	problem string
}

type bwRow struct {
	section   string // "", local or remote
	size      int
	iters     int64
	peak, avg float64 // Gb/s
	msgRate   float64
}

type latRow struct {
	size                               int
	iters                              int64
	min, max, typical, avg, stdev, p99 float64
	p999                               float64
}

var (
	perfDeviceRE = regexp.MustCompile(`(?m)Device\s+: (\S+)\s*$`)
	perfLinkRE   = regexp.MustCompile(`(?m)^ Link type\s+: (\S+)\s*$`)
	perfGIDIdxRE = regexp.MustCompile(`(?m)^ GID index\s+: (\d+)\s*$`)
	perfCMRE     = regexp.MustCompile(`(?m)^ rdma_cm QPs\s+: (ON|OFF)\s*$`)
	perfTOSRE    = regexp.MustCompile(`(?m)^ Data ex\. method : .*\bTOS\s+: (\d+)`)
	// A local address line, then (when a GID is in use) its GID line.
	perfLocalGIDRE = regexp.MustCompile(`(?m)^ local address: LID .*\n GID: ((?:\d{1,3}:){15}\d{1,3})\s*$`)
	perfBWHeadRE   = regexp.MustCompile(`^ #bytes\s+#iterations\s+BW peak\[(Gb|MB)/sec\]\s+BW average\[(?:Gb|MB)/sec\]\s+MsgRate\[Mpps\]`)
	perfLatHeadRE  = regexp.MustCompile(`^ #bytes\s+#iterations\s+t_min\[usec\]\s+t_max\[usec\]\s+t_typical\[usec\]\s+t_avg\[usec\]\s+t_stdev\[usec\]\s+99% percentile\[usec\]\s+99\.9% percentile\[usec\]`)
	// The errors of perftest's main before it contacts the peer
	// (src/write_bw.c and the other tools: parser, ctx_find_dev,
	// ctx_open_device, check_link, create_comm_struct).
	perfCannotRE = regexp.MustCompile(`(?m)^\s*(Parser function exited with Error|Unable to find the Infiniband/RoCE device|Couldn't get context for the device|Unable to create RDMA_CM resources|Couldn't init GPU context)\s*$`)
	// What perftest says when it reached for the peer and failed
	// (src/perftest_communication.c: "Couldn't connect to %s:%d",
	// rdma_cm's "Unable to connect (retries = %d)", and the tools'
	// " Unable to init the socket connection").
	// set_link_layer: the port is there and not ACTIVE, the probe's
	// failure, as for the other probes.
	perfPortStateRE = regexp.MustCompile(`(?m)^ Port number \d+ state is `)
	perfReachRE     = regexp.MustCompile(`(?m)^\s*(Couldn't connect to .*|Unable to connect \(retries = \d+\)|Unable to init the socket connection)\s*$`)

	cudaInitRE    = regexp.MustCompile(`(?m)^initializing CUDA\s*$`)
	cudaDeviceRE  = regexp.MustCompile(`(?m)^CUDA device (\d+): PCIe address is ([0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})\s*$`)
	cudaPickedRE  = regexp.MustCompile(`(?m)^Picking device No\. (\d+)\s*$`)
	cudaNameRE    = regexp.MustCompile(`(?m)device name = \[(.*)\]\s*$`)
	cudaAllocRE   = regexp.MustCompile(`(?m)^cuMemAlloc\(\) of a (\d+) bytes GPU buffer\s*$`)
	cudaBufferRE  = regexp.MustCompile(`(?m)^allocated GPU buffer\b`)
	cudaProblemRE = regexp.MustCompile(`(?m)^(cuInit\(0\) returned -?\d+|cuDeviceGetCount\(\) returned -?\d+|There are no available device\(s\) that support CUDA|cuCtxCreate\(\) error=-?\d+|cuCtxSetCurrent\(\) error=-?\d+|cuMemAlloc error=-?\d+)\s*$`)
)

func parseCUDA(out string) cudaReport {
	c := cudaReport{initialized: cudaInitRE.MatchString(out), devices: map[int]string{}}
	for _, m := range cudaDeviceRE.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		c.devices[n] = strings.ToUpper(m[2])
	}
	if m := cudaPickedRE.FindStringSubmatch(out); m != nil {
		n, _ := strconv.Atoi(m[1])
		c.picked = &n
	}
	if m := cudaNameRE.FindStringSubmatch(out); m != nil {
		c.name = m[1]
	}
	if m := cudaAllocRE.FindStringSubmatch(out); m != nil {
		c.bufferBytes, _ = strconv.ParseInt(m[1], 10, 64)
	}
	c.allocated = cudaBufferRE.MatchString(out)
	if m := cudaProblemRE.FindStringSubmatch(out); m != nil {
		c.problem = m[1]
	}
	return c
}

// MiB/s to Gb/s: perftest's MB is 2^20 bytes (its --report_gbits help:
// "MiB=2^20 byte, while Gb=10^9 bits").
const mibToGb = 1048576 * 8 / 1e9

func parsePerftest(out, errs string) perfReport {
	var r perfReport
	if m := perfDeviceRE.FindStringSubmatch(out); m != nil {
		r.device = m[1]
	}
	if m := perfLinkRE.FindStringSubmatch(out); m != nil {
		r.linkType = m[1]
	}
	if m := perfGIDIdxRE.FindStringSubmatch(out); m != nil {
		n, _ := strconv.Atoi(m[1])
		r.gidIndex = &n
	}
	if m := perfCMRE.FindStringSubmatch(out); m != nil {
		r.rdmaCM = m[1] == "ON"
	}
	if m := perfTOSRE.FindStringSubmatch(out); m != nil {
		n, _ := strconv.Atoi(m[1])
		r.tos = &n
	}
	if m := perfLocalGIDRE.FindStringSubmatch(out); m != nil {
		r.localGID = decimalGID(m[1])
	}
	r.bw, r.lat = perfTables(out)
	r.cuda = parseCUDA(out)
	if len(r.bw) == 0 && r.lat == nil {
		if r.cuda.problem != "" {
			// The CUDA driver's error, on stdout, before any report.
			r.cannot = r.cuda.problem
			return r
		}
		reached := r.linkType != "" || perfReachRE.MatchString(errs) || perfPortStateRE.MatchString(errs)
		if m := perfCannotRE.FindStringSubmatch(errs); m != nil && !reached {
			r.cannot = firstLine(errs)
		} else if m := perfReachRE.FindStringSubmatch(errs); m != nil {
			r.problem = strings.TrimSpace(m[1])
		} else if e := firstLine(errs); e != "" {
			r.problem = e
		} else {
			r.problem = "no result in its report"
		}
	}
	return r
}

// perfTables reads the result tables: each header, and the rows under
// it until a ruler or a blank line.
func perfTables(out string) ([]bwRow, *latRow) {
	var bw []bwRow
	var lat *latRow
	section := ""
	mode, unit := "", ""
	for _, l := range strings.Split(out, "\n") {
		switch t := strings.TrimSpace(l); {
		case t == "Local results:":
			section, mode = "local", ""
			continue
		case t == "Remote results:":
			section, mode = "remote", ""
			continue
		case t == "" || strings.HasPrefix(t, "----"):
			mode = ""
			continue
		}
		if m := perfBWHeadRE.FindStringSubmatch(l); m != nil {
			mode, unit = "bw", m[1]
			continue
		}
		if perfLatHeadRE.MatchString(l) {
			mode = "lat"
			continue
		}
		f := strings.Fields(l)
		switch mode {
		case "bw":
			if len(f) < 5 {
				continue
			}
			v, ok := floats(f[2:5])
			size, e1 := strconv.Atoi(f[0])
			iters, e2 := strconv.ParseInt(f[1], 10, 64)
			if !ok || e1 != nil || e2 != nil {
				continue
			}
			row := bwRow{section: section, size: size, iters: iters, peak: v[0], avg: v[1], msgRate: v[2]}
			if unit == "MB" {
				row.peak *= mibToGb
				row.avg *= mibToGb
			}
			bw = append(bw, row)
		case "lat":
			if len(f) < 9 {
				continue
			}
			v, ok := floats(f[2:9])
			size, e1 := strconv.Atoi(f[0])
			iters, e2 := strconv.ParseInt(f[1], 10, 64)
			if !ok || e1 != nil || e2 != nil {
				continue
			}
			lat = &latRow{size: size, iters: iters, min: v[0], max: v[1], typical: v[2], avg: v[3], stdev: v[4], p99: v[5], p999: v[6]}
		}
	}
	return bw, lat
}

func floats(ss []string) ([]float64, bool) {
	out := make([]float64, len(ss))
	for i, s := range ss {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, false
		}
		out[i] = f
	}
	return out, true
}

// directions are a bidirectional report's figures: this side's (Local
// results), the peer's (Remote results), and the sum perftest printed
// first (the last row before Local results).
func (r *perfReport) directions() (local, remote, sum bwRow, ok bool) {
	var hasL, hasR, hasS bool
	for _, row := range r.bw {
		switch row.section {
		case "local":
			local, hasL = row, true
		case "remote":
			remote, hasR = row, true
		default:
			sum, hasS = row, true
		}
	}
	// A remote row of another message size is no report (src/send_bw.c
	// prints memory that holds none: see schema's bidirectional send).
	return local, remote, sum, hasL && hasR && hasS && local.size == remote.size
}

// decimalGID turns perftest's GID (16 bytes in decimal, colon-separated:
// 00:00:00:00:00:00:00:00:00:00:255:255:10:00:00:01) into the address
// text (::ffff:10.0.0.1); "" when it is not one.
func decimalGID(s string) string {
	parts := strings.Split(s, ":")
	if len(parts) != 16 {
		return ""
	}
	var b [16]byte
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n > 255 {
			return ""
		}
		b[i] = byte(n)
	}
	a := netip.AddrFrom16(b)
	if a.Is4In6() {
		return fmt.Sprintf("::ffff:%s", a.Unmap())
	}
	return a.String()
}
