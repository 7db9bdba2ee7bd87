//go:build kernlab

package guest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// perfDoc is rdmaform probe -o json, with the perf figures.
type perfDoc struct {
	Probes []struct {
		Name    string `json:"name"`
		Kind    string `json:"kind"`
		Passed  bool   `json:"passed"`
		Outcome string `json:"outcome"`
		Reason  string `json:"reason"`
		Command string `json:"command"`
		Perf    *struct {
			Tool          string  `json:"tool"`
			Device        string  `json:"device"`
			LinkLayer     string  `json:"link_layer"`
			GIDIndex      *int    `json:"gid_index"`
			GID           string  `json:"gid"`
			GIDType       string  `json:"gid_type"`
			TrafficClass  *int    `json:"traffic_class"`
			CPUs          string  `json:"cpus"`
			PortRate      string  `json:"port_rate"`
			PortRateGbps  float64 `json:"port_rate_gbps"`
			BandwidthGbps float64 `json:"bandwidth_gbps"`
			OutGbps       float64 `json:"out_gbps"`
			InGbps        float64 `json:"in_gbps"`
			SumGbps       float64 `json:"sum_gbps"`
			FloorGbps     float64 `json:"floor_gbps"`
			LatencyUs     float64 `json:"latency_us"`
			Checks        []struct {
				Name, Want, Got, Result string
			} `json:"checks"`
		} `json:"perf"`
	} `json:"probes"`
}

// TestPerftest: Debian's perftest runs over two Soft-RoCE links on a veth
// pair (the pair of TestProbes, rxepa on pva 192.0.2.1 and rxepb on pvb
// 192.0.2.2): each tool's own output is captured, server and client
// (KERNLAB-CAPTURE blocks, for probe/testdata/real), then rdmaform's
// bandwidth and latency probes run against probe serve, pass with the
// figures rxe gives, and fail at a floor rxe cannot reach.
func TestPerftest(t *testing.T) {
	if _, err := os.Stat("/usr/bin/ib_write_bw"); err != nil {
		t.Skip("perftest is not in the guest")
	}
	veth(t, "pva", "pvb")
	t.Cleanup(func() {
		_, _ = tryRun("/sbin/rdma", "link", "delete", "rxepa")
		_, _ = tryRun("/sbin/rdma", "link", "delete", "rxepb")
	})
	converge(t, writeSpec(t, `version: 1
modules: [rdma_rxe, rdma_ucm]
rxe:
  - {name: rxepa, netdev: pva}
  - {name: rxepb, netdev: pvb}
interfaces:
  - {name: pva, state: up, mtu: 1500, addresses: [192.0.2.1/24]}
  - {name: pvb, state: up, mtu: 1500, addresses: [192.0.2.2/24]}
`))
	acrossThePair(t)
	gidA, gidB := roceV2Index(t, "rxepa", "192.0.2.1"), roceV2Index(t, "rxepb", "192.0.2.2")
	t.Logf("RoCE v2 GID of 192.0.2.1 on rxepa: %d; of 192.0.2.2 on rxepb: %d", gidA, gidB)
	a, b := strconv.Itoa(gidA), strconv.Itoa(gidB)

	// The tools' own output, as rdmaform runs them.
	common := func(dev, gid string, extra ...string) []string {
		return append([]string{"-d", dev, "-i", "1", "-x", gid}, extra...)
	}
	bw := []string{"-s", "65536", "-q", "1", "-D", "2", "-p", "18515", "--report_gbits", "-F"}
	for _, c := range []struct {
		name, tool string
		extra      []string
	}{
		{"write_bw", "ib_write_bw", bw},
		{"write_bw-bidir", "ib_write_bw", append(append([]string{}, bw...), "-b", "--report-both")},
		{"read_bw", "ib_read_bw", bw},
		{"send_bw", "ib_send_bw", bw},
		{"send_bw-bidir", "ib_send_bw", append(append([]string{}, bw...), "-b", "--report-both")},
		{"write_bw-tclass", "ib_write_bw", append(append([]string{}, bw...), "--tclass=106")},
		{"write_lat", "ib_write_lat", []string{"-s", "2", "-n", "1000", "-p", "18515", "-F"}},
	} {
		srv := append([]string{c.tool}, common("rxepa", a, c.extra...)...)
		cli := append(append([]string{c.tool}, common("rxepb", b, c.extra...)...), "192.0.2.1")
		capturePair(t, c.name, srv, cli, tcpListen)
	}
	// RDMA CM: no -x (the CM resolves the GID). Without --source_ip the
	// CM takes the route's source, here the peer's own address (both
	// ends are this guest's): the run is rxepa's loopback, whatever -d
	// says (the first capture); with it, the pair.
	cm := []string{"-s", "65536", "-q", "1", "-D", "2", "-p", "18515", "--report_gbits", "-F", "-R"}
	capturePair(t, "write_bw-rdma_cm-no-source",
		append([]string{"ib_write_bw", "-d", "rxepa", "-i", "1"}, cm...),
		append(append([]string{"ib_write_bw", "-d", "rxepb", "-i", "1"}, cm...), "192.0.2.1"), cmListen)
	capturePair(t, "write_bw-rdma_cm",
		append([]string{"ib_write_bw", "-d", "rxepa", "-i", "1"}, cm...),
		append(append([]string{"ib_write_bw", "-d", "rxepb", "-i", "1"}, cm...), "--source_ip=192.0.2.2", "192.0.2.1"), cmListen)
	capturePair(t, "write_bw-rdma_cm-tos",
		append(append([]string{"ib_write_bw", "-d", "rxepa", "-i", "1"}, cm...), "-T", "106"),
		append(append([]string{"ib_write_bw", "-d", "rxepb", "-i", "1"}, cm...), "-T", "106", "--source_ip=192.0.2.2", "192.0.2.1"), cmListen)
	capturePair(t, "write_lat-rdma_cm",
		[]string{"ib_write_lat", "-d", "rxepa", "-i", "1", "-s", "2", "-n", "1000", "-p", "18515", "-F", "-R"},
		[]string{"ib_write_lat", "-d", "rxepb", "-i", "1", "-s", "2", "-n", "1000", "-p", "18515", "-F", "-R", "--source_ip=192.0.2.2", "192.0.2.1"}, cmListen)
	capturePair(t, "send_bw-bidir-iters", []string{"ib_send_bw", "-d", "rxepa", "-i", "1", "-x", a, "-s", "65536", "-q", "1", "-n", "200", "-p", "18515", "--report_gbits", "-F", "-b", "--report-both"},
		[]string{"ib_send_bw", "-d", "rxepb", "-i", "1", "-x", b, "-s", "65536", "-q", "1", "-n", "200", "-p", "18515", "--report_gbits", "-F", "-b", "--report-both", "192.0.2.1"}, tcpListen)
	// No server: the client cannot reach the peer. No such device.
	captureOne(t, "write_bw-no-server", append(append([]string{"ib_write_bw"}, common("rxepb", b, bw...)...), "192.0.2.1"))
	captureOne(t, "write_bw-no-device", append(append([]string{"ib_write_bw"}, common("rxe9", "1", bw...)...), "192.0.2.1"))
	captureOne(t, "taskset-cpu0", []string{"taskset", "-c", "0", "ib_write_bw", "-V"})

	// rdmaform's probes against probe serve.
	spec := writeSpec(t, `version: 1
probes:
  - name: bw-write
    bandwidth: {to: 192.0.2.1, device: rxepb, duration: 2s, floor: 0.001Gb/s}
  - name: bw-bidir
    bandwidth: {to: 192.0.2.1, netdev: pvb, duration: 2s, bidirectional: true, tcp_port: 18516, cpus: "0"}
  - name: bw-read
    bandwidth: {to: 192.0.2.1, device: rxepb, test: read, iterations: 2000, tcp_port: 18517}
  - name: bw-tc
    bandwidth: {to: 192.0.2.1, device: rxepb, test: send, duration: 2s, traffic_class: 106, tcp_port: 18518}
  - name: bw-cm
    bandwidth: {to: 192.0.2.1, device: rxepb, duration: 2s, rdma_cm: true, traffic_class: 106, tcp_port: 18519}
  - name: lat-write
    latency: {to: 192.0.2.1, device: rxepb, iterations: 1000, ceiling: 1s, tcp_port: 18520}
`)
	serve := exec.Command(rdmaformBin, "probe", "serve", "-f", spec, "--for", "10m")
	var serveOut strings.Builder
	serve.Stdout, serve.Stderr = &serveOut, &serveOut
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if serve.ProcessState == nil {
			_ = serve.Process.Signal(os.Interrupt)
			_ = serve.Wait()
		}
		t.Logf("probe serve:\n%s", serveOut.String())
	})
	waitFor(t, "the perftest servers", func() bool { return tcpListen() && cmListen() })
	doc := perfProbes(t, spec)
	// Under QEMU's TCG perftest's clock calibration fails now and then
	// (stderr "Correlation coefficient r^2: ... < 0.9"; the run reports
	// 0 Gb/s, which the probe calls an error): such a probe runs again,
	// up to three times, alone, against the same responder.
	for i, p := range doc.Probes {
		for try := 0; try < 3 && p.Outcome == "error" && strings.Contains(p.Reason, "measured nothing"); try++ {
			t.Logf("probe %s again: %s", p.Name, p.Reason)
			one := perfProbes(t, writeSpec(t, "version: 1\nprobes:\n"+probeBlock(t, spec, p.Name)))
			p = one.Probes[0]
			doc.Probes[i] = p
		}
	}
	for _, p := range doc.Probes {
		if p.Perf == nil {
			t.Errorf("probe %s: no perf figures: %s", p.Name, p.Reason)
			continue
		}
		if !p.Passed {
			t.Errorf("probe %s: %s: %s (%s)", p.Name, p.Outcome, p.Reason, p.Command)
		}
		f := p.Perf
		if f.LinkLayer != "Ethernet" || f.Device != "rxepb" {
			t.Errorf("probe %s: ran on %s %s, want rxepb Ethernet", p.Name, f.Device, f.LinkLayer)
		}
		if f.GIDType != "RoCE v2" || (f.GIDIndex != nil && *f.GIDIndex != gidB) {
			t.Errorf("probe %s: GID %s index %v type %q; want RoCE v2 at %d", p.Name, f.GID, f.GIDIndex, f.GIDType, gidB)
		}
		if p.Kind == "bandwidth" && f.BandwidthGbps <= 0 || p.Kind == "latency" && f.LatencyUs <= 0 {
			t.Errorf("probe %s: no figure: %+v", p.Name, f)
		}
	}

	// The floor is the port's rate: rxe on a veth does not move 90 % of
	// it under QEMU; the same run fails the gate, naming the rate.
	floor := writeSpec(t, `version: 1
probes:
  - name: bw-floor
    bandwidth: {to: 192.0.2.1, device: rxepb, duration: 2s, floor: 90%}
`)
	serve2 := exec.Command(rdmaformBin, "probe", "serve", "-f", floor, "--for", "2m")
	if err := serve2.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if serve2.ProcessState == nil {
			_ = serve2.Process.Signal(os.Interrupt)
			_ = serve2.Wait()
		}
	})
	time.Sleep(3 * time.Second)
	code, out, errs := rdmaform(t, "probe", "-f", floor, "-o", "json")
	for try := 0; try < 3 && code == 1 && strings.Contains(out, "measured nothing"); try++ {
		code, out, errs = rdmaform(t, "probe", "-f", floor, "-o", "json")
	}
	t.Logf("floor 90%%: exit %d\n%s%s", code, out, errs)
	var fd perfDoc
	if err := json.Unmarshal([]byte(out), &fd); err != nil || len(fd.Probes) != 1 || fd.Probes[0].Perf == nil {
		t.Fatalf("probe -o json: %v\n%s", err, out)
	}
	p := fd.Probes[0]
	if code != 2 || p.Passed || p.Perf.FloorGbps <= p.Perf.BandwidthGbps || !strings.Contains(p.Reason, "below the floor") {
		t.Errorf("floor 90%% of %q: exit %d passed=%v floor %.3f measured %.3f: %s", p.Perf.PortRate, code, p.Passed, p.Perf.FloorGbps, p.Perf.BandwidthGbps, p.Reason)
	}
}

// probeBlock is the lines of one probe of a spec file written by
// writeSpec: "  - name: NAME" and the line after it.
func probeBlock(t *testing.T, spec, name string) string {
	t.Helper()
	lines := strings.Split(readFile(t, spec), "\n")
	for i, l := range lines {
		if l == "  - name: "+name && i+1 < len(lines) {
			return l + "\n" + lines[i+1] + "\n"
		}
	}
	t.Fatalf("no probe %s in %s", name, spec)
	return ""
}

// roceV2Index is the index of the RoCE v2 GID that holds addr in dev's
// port 1 table, read from sysfs here (gids/N and gid_attrs/types/N).
func roceV2Index(t *testing.T, dev, addr string) int {
	t.Helper()
	want := "0000:0000:0000:0000:0000:ffff:"
	parts := strings.Split(addr, ".")
	for i := 0; i < 4; i += 2 {
		x, _ := strconv.Atoi(parts[i])
		y, _ := strconv.Atoi(parts[i+1])
		want += strings.TrimPrefix(strconv.FormatInt(int64(0x10000+x<<8|y), 16), "1")
		if i == 0 {
			want += ":"
		}
	}
	dir := "/sys/class/infiniband/" + dev + "/ports/1"
	entries, _ := filepath.Glob(dir + "/gids/*")
	for _, e := range entries {
		g, err := os.ReadFile(e)
		if err != nil || strings.TrimSpace(string(g)) != want {
			continue
		}
		n := filepath.Base(e)
		typ, err := os.ReadFile(dir + "/gid_attrs/types/" + n)
		if err == nil && strings.TrimSpace(string(typ)) == "RoCE v2" {
			i, _ := strconv.Atoi(n)
			return i
		}
	}
	t.Fatalf("no RoCE v2 GID %s in %s", want, dir)
	return -1
}

var perftestListens = regexp.MustCompile(`:4853 0+:0000 0A`)

func tcpListen() bool {
	tcp4, _ := os.ReadFile("/proc/net/tcp")
	tcp6, _ := os.ReadFile("/proc/net/tcp6")
	return perftestListens.Match(tcp4) || perftestListens.Match(tcp6)
}

func cmListen() bool {
	cm, _ := tryRun("/sbin/rdma", "resource", "show", "cm_id")
	return strings.Contains(cm, "LISTEN")
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Logf("%s: not ready after 60s", what)
}

// capturePair runs a perftest server and its client and logs both
// outputs.
func capturePair(t *testing.T, name string, server, client []string, listening func() bool) {
	t.Helper()
	srv := exec.Command(server[0], server[1:]...)
	var so, se strings.Builder
	srv.Stdout, srv.Stderr = &so, &se
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	waitFor(t, name+" server", listening)
	captureOne(t, name+"-client", client)
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		_ = srv.Process.Kill()
		err = <-done
	}
	logCapture(t, name+"-server", server, err, so.String(), se.String())
	time.Sleep(500 * time.Millisecond)
}

func captureOne(t *testing.T, name string, argv []string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		err = <-done
	}
	logCapture(t, name, argv, err, so.String(), se.String())
}

func logCapture(t *testing.T, name string, argv []string, err error, stdout, stderr string) {
	code := 0
	if x, ok := err.(*exec.ExitError); ok {
		code = x.ExitCode()
	}
	t.Logf("KERNLAB-CAPTURE %s %s exit=%d\n--stdout--\n%s--stderr--\n%s--end--", name, strings.Join(argv, " "), code, stdout, stderr)
}

// perfProbes runs rdmaform probe -o json.
func perfProbes(t *testing.T, spec string) perfDoc {
	t.Helper()
	code, out, errs := rdmaform(t, "probe", "-f", spec, "-o", "json")
	t.Logf("probe (exit %d):\n%s%s", code, out, errs)
	var doc perfDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("probe -o json: %v\n%s%s", err, out, errs)
	}
	return doc
}

// TestGIDIndexEnv: facts -o env's NCCL_IB_GID_INDEX on a Soft-RoCE
// device is the index the kernel's GID table gives the RoCE v2 GID of the
// port's IPv4 address, read here from sysfs (gids/N, gid_attrs/types/N).
// An IPv6 address added first takes a GID of its own ahead of it, so the
// index is not the first one after the link-local GID.
func TestGIDIndexEnv(t *testing.T) {
	veth(t, "gva", "gvb")
	run(t, "/sbin/modprobe", "rdma_rxe")
	run(t, "/sbin/ip", "addr", "add", "2001:db8:46::1/64", "dev", "gva", "nodad")
	run(t, "/sbin/ip", "addr", "add", "198.51.100.1/24", "dev", "gva")
	run(t, "/sbin/rdma", "link", "add", "rxega", "type", "rxe", "netdev", "gva")
	t.Cleanup(func() { _, _ = tryRun("/sbin/rdma", "link", "delete", "rxega") })
	var want int
	waitFor(t, "the GID of 198.51.100.1", func() bool {
		entries, _ := filepath.Glob("/sys/class/infiniband/rxega/ports/1/gids/*")
		for _, e := range entries {
			if g, _ := os.ReadFile(e); strings.TrimSpace(string(g)) == "0000:0000:0000:0000:0000:ffff:c633:6401" {
				return true
			}
		}
		return false
	})
	want = roceV2Index(t, "rxega", "198.51.100.1")
	table, _ := tryRun("/bin/sh", "-c", "cd /sys/class/infiniband/rxega/ports/1 && for g in gids/*; do n=${g#gids/}; v=$(cat $g); [ \"$v\" = 0000:0000:0000:0000:0000:0000:0000:0000 ] || echo \"$n $v $(cat gid_attrs/types/$n 2>/dev/null) $(cat gid_attrs/ndevs/$n 2>/dev/null)\"; done")
	t.Logf("rxega port 1 GID table:\n%s", table)
	code, out, errs := rdmaform(t, "facts", "-o", "env")
	t.Logf("facts -o env (exit %d):\n%s%s", code, out, errs)
	got := regexp.MustCompile(`(?m)^NCCL_IB_GID_INDEX=(\d+)$`).FindStringSubmatch(out)
	if code != 0 || got == nil || got[1] != strconv.Itoa(want) {
		t.Errorf("NCCL_IB_GID_INDEX: %v, want %d (the kernel's RoCE v2 GID of 198.51.100.1 on rxega)", got, want)
	}
	if want <= 1 {
		t.Errorf("the IPv4 GID is at index %d: the IPv6 address did not take one ahead of it", want)
	}
	if !strings.Contains(out, "NCCL_IB_HCA=rxega:1") {
		t.Errorf("NCCL_IB_HCA does not name rxega:1:\n%s", out)
	}
}
