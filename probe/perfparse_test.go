package probe

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readReal(t *testing.T, name string) (string, string) {
	t.Helper()
	out, err1 := os.ReadFile(filepath.Join("testdata/real", name+".stdout"))
	errb, err2 := os.ReadFile(filepath.Join("testdata/real", name+".stderr"))
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return string(out), string(errb)
}

// TestParsePerftestReal parses every perftest capture of testdata/real
// (the kernel lab's, PROVENANCE.md there) and checks what the report
// says: the transport perftest used, its figures, one direction at a
// time, and why a run measured nothing or could not run.
func TestParsePerftestReal(t *testing.T) {
	cases := []struct {
		file       string
		bidir      bool
		link       string
		gid        string
		gidIndex   int // -1: none printed
		tos        int // -1: none printed
		avg        float64
		iters      int64
		local      float64 // bidirectional: Local results
		remote     float64 // bidirectional: Remote results
		sum        float64 // bidirectional: the first figure
		latTypical float64
		unmeasured string // substring of why no figure counts
		cannot     string
		problem    string
	}{
		{file: "perftest-write_bw-client", link: "Ethernet", gid: "::ffff:192.0.2.2", gidIndex: 1, tos: -1, avg: 0.021585, iters: 85},
		{file: "perftest-write_bw-server", link: "Ethernet", gid: "::ffff:192.0.2.1", gidIndex: 1, tos: -1, avg: 0.021585, iters: 85},
		{file: "perftest-read_bw-client", link: "Ethernet", gid: "::ffff:192.0.2.2", gidIndex: 1, tos: -1, avg: 0.041151, iters: 159},
		{file: "perftest-read_bw-server", link: "Ethernet", gid: "::ffff:192.0.2.1", gidIndex: 1, tos: -1, avg: 0.041151, iters: 159},
		{file: "perftest-send_bw-client", link: "Ethernet", gid: "::ffff:192.0.2.2", gidIndex: 1, tos: -1, avg: 0.025313, iters: 118},
		{file: "perftest-send_bw-server", link: "Ethernet", gid: "::ffff:192.0.2.1", gidIndex: 1, tos: -1, avg: 0.030487, iters: 119},
		{file: "perftest-write_bw-tclass-client", link: "Ethernet", gid: "::ffff:192.0.2.2", gidIndex: 1, tos: -1, avg: 0.014985, iters: 61},
		{file: "perftest-write_bw-tclass-server", link: "Ethernet", gid: "::ffff:192.0.2.1", gidIndex: 1, tos: -1, avg: 0.014985, iters: 61},
		// The server's clock calibration failed (its stderr): with -F it
		// reported 0 for its own direction, and the client got that 0 as
		// the Remote results; the first figure is the sum, 0.008156 + 0.
		{file: "perftest-write_bw-bidir-client", bidir: true, link: "Ethernet", gid: "::ffff:192.0.2.2", gidIndex: 1, tos: -1, avg: 0.008156, iters: 33,
			local: 0.008156, remote: 0, sum: 0.008156, unmeasured: "the peer's perftest could not time its 47 iterations"},
		{file: "perftest-write_bw-bidir-server", bidir: true, link: "Ethernet", gid: "::ffff:192.0.2.1", gidIndex: 1, tos: -1, avg: 0.008156, iters: 33,
			local: 0, remote: 0.008156, sum: 0.008156, unmeasured: "it could not time its 47 iterations"},
		// A bidirectional send with a duration: no sum, and Remote
		// results that hold no report (size 506).
		{file: "perftest-send_bw-bidir-client", bidir: true, link: "Ethernet", gid: "::ffff:192.0.2.2", gidIndex: 1, tos: -1, avg: 0.029062, iters: 111,
			unmeasured: "no per-direction figures"},
		{file: "perftest-send_bw-bidir-server", bidir: true, link: "Ethernet", gid: "::ffff:192.0.2.1", gidIndex: 1, tos: -1, avg: 0.027333, iters: 111,
			unmeasured: "no per-direction figures"},
		{file: "perftest-write_lat-client", link: "Ethernet", gid: "::ffff:192.0.2.2", gidIndex: 1, tos: -1, latTypical: 2750.77, iters: 1000},
		{file: "perftest-write_lat-server", link: "Ethernet", gid: "::ffff:192.0.2.1", gidIndex: 1, tos: -1, latTypical: 2866.67, iters: 1000},
		// RDMA CM looped the run back through the device holding the
		// peer's address: the GID perftest printed is the peer's.
		{file: "perftest-write_bw-rdma_cm-client", link: "Ethernet", gid: "::ffff:192.0.2.1", gidIndex: 1, tos: -1, avg: 0.016622, iters: 64},
		{file: "perftest-write_bw-rdma_cm-server", link: "Ethernet", gid: "::ffff:192.0.2.1", gidIndex: 1, tos: -1, avg: 0.016622, iters: 64},
		{file: "perftest-write_bw-rdma_cm-no-source-client", link: "Ethernet", gid: "::ffff:192.0.2.1", gidIndex: 1, tos: -1, avg: 0.020927, iters: 80},
		{file: "perftest-write_bw-rdma_cm-no-source-server", link: "Ethernet", gid: "::ffff:192.0.2.1", gidIndex: 1, tos: -1, avg: 0.020927, iters: 80},
		{file: "perftest-write_bw-rdma_cm-tos-client", link: "Ethernet", gid: "::ffff:192.0.2.1", gidIndex: 1, tos: 106, avg: 0.004107, iters: 16},
		{file: "perftest-write_bw-rdma_cm-tos-server", link: "Ethernet", gid: "::ffff:192.0.2.1", gidIndex: 1, tos: 106, avg: 0.004107, iters: 16},
		{file: "perftest-write_lat-rdma_cm-client", link: "Ethernet", gid: "::ffff:192.0.2.1", gidIndex: 1, tos: -1, latTypical: 11.93, iters: 1000},
		{file: "perftest-write_lat-rdma_cm-server", link: "Ethernet", gid: "::ffff:192.0.2.1", gidIndex: 1, tos: -1, latTypical: 12.07, iters: 1000},
		// rxe failed a bidirectional send: the server's completion
		// error; the client, killed, printed nothing.
		{file: "perftest-send_bw-bidir-iters-server", bidir: true, link: "Ethernet", gid: "::ffff:192.0.2.1", gidIndex: 1, tos: -1, problem: "Completion with error at client",
			unmeasured: "no per-direction figures"},
		{file: "perftest-send_bw-bidir-iters-client", bidir: true, gidIndex: -1, tos: -1, problem: "no result in its report", unmeasured: "no per-direction figures"},
		{file: "perftest-write_bw-no-server", gidIndex: -1, tos: -1, problem: "Couldn't connect to 192.0.2.1:18515"},
		{file: "perftest-write_bw-no-device", gidIndex: -1, tos: -1, cannot: "IB device rxe9 not found"},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		seen[c.file] = true
		t.Run(c.file, func(t *testing.T) {
			out, errs := readReal(t, c.file)
			r := parsePerftest(out, errs)
			if r.linkType != c.link || r.localGID != c.gid {
				t.Errorf("link %q GID %q, want %q %q", r.linkType, r.localGID, c.link, c.gid)
			}
			if (r.gidIndex == nil) != (c.gidIndex < 0) || r.gidIndex != nil && *r.gidIndex != c.gidIndex {
				t.Errorf("GID index %v, want %d", r.gidIndex, c.gidIndex)
			}
			if (r.tos == nil) != (c.tos < 0) || r.tos != nil && *r.tos != c.tos {
				t.Errorf("TOS %v, want %d", r.tos, c.tos)
			}
			if r.cannot != c.cannot || !strings.Contains(r.problem, c.problem) || (c.problem == "") != (r.problem == "") {
				t.Errorf("cannot %q problem %q, want %q %q", r.cannot, r.problem, c.cannot, c.problem)
			}
			why := r.unmeasured(c.bidir)
			if (c.unmeasured == "") != (why == "") || !strings.Contains(why, c.unmeasured) {
				t.Errorf("unmeasured %q, want %q", why, c.unmeasured)
			}
			switch {
			case r.lat != nil:
				if r.lat.typical != c.latTypical || r.lat.iters != c.iters {
					t.Errorf("latency %+v, want t_typical %.2f over %d", *r.lat, c.latTypical, c.iters)
				}
			case c.bidir && c.unmeasured == "" || c.sum > 0:
				l, rm, sum, ok := r.directions()
				if !ok || l.avg != c.local || rm.avg != c.remote || sum.avg != c.sum || l.avg+rm.avg != sum.avg {
					t.Errorf("directions local %+v remote %+v sum %+v (%v), want %g %g %g", l, rm, sum, ok, c.local, c.remote, c.sum)
				}
			case len(r.bw) > 0:
				row := r.bw[0]
				if row.avg != c.avg || row.iters != c.iters || row.size != 65536 {
					t.Errorf("figure %+v, want %g Gb/s over %d", row, c.avg, c.iters)
				}
			}
		})
	}
	files, _ := filepath.Glob("testdata/real/perftest-*.stdout")
	for _, f := range files {
		if n := strings.TrimSuffix(filepath.Base(f), ".stdout"); !seen[n] {
			t.Errorf("testdata/real/%s has no case here", n)
		}
	}
}

// TestParsePerftestEdges: MiB/s tables (no --report_gbits), a latency
// that is not a number, a port that is down; each taken from a capture
// above and changed as noted.
func TestParsePerftestEdges(t *testing.T) {
	out, _ := readReal(t, "perftest-write_bw-client")
	// perftest's own MB/sec is MiB/s: 1000 MiB/s is 8.388608 Gb/s.
	mib := strings.Replace(out, "BW peak[Gb/sec]    BW average[Gb/sec]", "BW peak[MB/sec]    BW average[MB/sec]", 1)
	mib = strings.Replace(mib, "0.021585", "1000.00", 1)
	if r := parsePerftest(mib, ""); len(r.bw) != 1 || math.Abs(r.bw[0].avg-8.388608) > 1e-9 {
		t.Errorf("MiB/s: %+v", r.bw)
	}
	lat, _ := readReal(t, "perftest-write_lat-client")
	inf := strings.Replace(lat, "2750.77", "inf", 1)
	if r := parsePerftest(inf, ""); !strings.Contains(r.unmeasured(false), "could not time its 1000 iterations") {
		t.Errorf("latency inf: %q", r.unmeasured(false))
	}
	// set_link_layer's complaint about a port that is not ACTIVE is
	// the probe's failure, not a tool that could not run.
	down := parsePerftest("", " Port number 1 state is Down\n Couldn't set the link layer\n Couldn't get context for the device\n")
	if down.cannot != "" || down.problem != "Port number 1 state is Down" {
		t.Errorf("port down: %+v", down)
	}
	// Nothing at all: a problem, never a figure.
	if r := parsePerftest("", ""); r.problem == "" || len(r.bw) != 0 {
		t.Errorf("empty: %+v", r)
	}
}

// TestParsePerftestCUDA: a run with --use_cuda, its lines written from
// perftest 4.5-0.17's format strings (src/perftest_resources.c:
// pp_init_gpu lines 70-117, create_single_mr lines 1676 and 1684; no GPU
// here to capture a run) before a real capture's report: the devices
// listed, the one picked, its name and the buffer; the check passes
// only on the device asked with its buffer allocated. The CUDA driver's
// errors, printed on stdout, are why the run could not start.
func TestParsePerftestCUDA(t *testing.T) {
	out, _ := readReal(t, "perftest-write_bw-client")
	cuda := "initializing CUDA\nListing all CUDA devices in system:\nCUDA device 0: PCIe address is 19:00\nCUDA device 1: PCIe address is 3E:00\n\n" +
		"Picking device No. 1\n[pid = 4242, dev = 1] device name = [NVIDIA H100 80GB HBM3]\ncreating CUDA Ctx\nmaking it the current CUDA Ctx\n"
	buffer := "cuMemAlloc() of a 131072 bytes GPU buffer\nallocated GPU buffer address at 00007f6eff000000 pointer=0x7f6eff000000\n"
	r := parsePerftest(cuda+buffer+out, "")
	c := r.cuda
	if !c.initialized || c.picked == nil || *c.picked != 1 || c.devices[0] != "19:00" || c.devices[1] != "3E:00" || c.name != "NVIDIA H100 80GB HBM3" ||
		c.bufferBytes != 131072 || !c.allocated || c.problem != "" || len(r.bw) != 1 {
		t.Fatalf("parsed %+v, bw %+v", c, r.bw)
	}
	for _, tc := range []struct {
		text string
		want int
		got  string
	}{
		{cuda + buffer + out, 1, "ok: a buffer on CUDA device 1"},
		{cuda + buffer + out, 0, "failed: CUDA device 1"},
		{cuda + out, 1, "failed: no buffer allocated on CUDA device 1"},
		{out, 1, "failed: no CUDA lines in perftest's report (host memory)"},
		{"initializing CUDA\n" + out, 1, "failed: no CUDA device picked in perftest's report"},
	} {
		rep := parsePerftest(tc.text, "")
		if c := gpuCheck(tc.want, &rep.cuda); c.Result+": "+c.Got != tc.got {
			t.Errorf("want device %d: %s: %s; want %s", tc.want, c.Result, c.Got, tc.got)
		}
	}
	for out, want := range map[string]string{
		"initializing CUDA\ncuInit(0) returned 100\n":                                                    "cuInit(0) returned 100",
		"initializing CUDA\nThere are no available device(s) that support CUDA\n":                        "There are no available device(s) that support CUDA",
		cuda + "cuMemAlloc() of a 131072 bytes GPU buffer\ncuMemAlloc error=2\n":                         "cuMemAlloc error=2",
		"initializing CUDA\nListing all CUDA devices in system:\nCUDA device 0: PCIe address is 19:00\n": "",
	} {
		r := parsePerftest(out, "")
		if r.cannot != want {
			t.Errorf("%q: cannot %q, want %q", out, r.cannot, want)
		}
	}
	// No such device: stderr, then ctx_init's and main's lines.
	if r := parsePerftest("initializing CUDA\n", "No such device ID (8) exists in system\nCouldn't init GPU context\n Couldn't create IB resources\n"); r.cannot != "No such device ID (8) exists in system" {
		t.Errorf("no such device: %+v", r)
	}
}
