package schema

import (
	"strings"
	"testing"
)

// TestPerfProbeFindings: each rule of the bandwidth and latency probes,
// with the finding at its path.
func TestPerfProbeFindings(t *testing.T) {
	probe := func(v string) string { return "version: 1\nprobes:\n  - name: p\n    " + v + "\n" }
	cases := []struct {
		spec, path, msg string
	}{
		{probe("bandwidth: {to: 192.0.2.1}"), "$.probes[0].bandwidth", "give device (the local RDMA device, e.g. mlx5_0) or netdev"},
		{probe("bandwidth: {to: 192.0.2.1, device: mlx5_0, netdev: ens1}"), "$.probes[0].bandwidth.netdev", "give device or netdev, not both"},
		{probe("latency: {to: 192.0.2.1, netdev: ens1, port: 2}"), "$.probes[0].latency.port", "port goes with device"},
		{probe("bandwidth: {device: mlx5_0}"), "$.probes[0].bandwidth", "to: is required"},
		{probe("bandwidth: {to: node2, device: mlx5_0}"), "$.probes[0].bandwidth.to", `"node2" is not an IP address`},
		{probe("bandwidth: {to: 192.0.2.1, device: mlx5_0, duration: 5s, iterations: 100}"), "$.probes[0].bandwidth.iterations", "give duration or iterations, not both"},
		{probe("bandwidth: {to: 192.0.2.1, device: mlx5_0, duration: 1500ms}"), "$.probes[0].bandwidth.duration", "not whole seconds"},
		{probe("bandwidth: {to: 192.0.2.1, device: mlx5_0, test: send, bidirectional: true}"), "$.probes[0].bandwidth.bidirectional", "give iterations"},
		{probe("bandwidth: {to: 192.0.2.1, device: mlx5_0, test: atomic}"), "$.probes[0].bandwidth.test", "must be"},
		{probe("latency: {to: 192.0.2.1, device: mlx5_0, test: read}"), "$.probes[0].latency.test", "must be"},
		{probe("bandwidth: {to: 192.0.2.1, device: mlx5_0, floor: fast}"), "$.probes[0].bandwidth.floor", `"fast" is not a floor`},
		{probe("bandwidth: {to: 192.0.2.1, device: mlx5_0, floor: 90 %}"), "", ""},
		{probe("bandwidth: {to: 192.0.2.1, device: mlx5_0, floor: 180 Gb/s}"), "", ""},
		{probe("bandwidth: {to: 192.0.2.1, device: mlx5_0, floor: 180 GB/s}"), "$.probes[0].bandwidth.floor", "is not a floor"},
		{probe("bandwidth: {to: 192.0.2.1, device: mlx5_0, cpus: \"3-1\"}"), "$.probes[0].bandwidth.cpus", "runs backwards"},
		{probe("bandwidth: {to: 192.0.2.1, device: mlx5_0, cpus: local}"), "$.probes[0].bandwidth.cpus", "is not numa, none or a CPU list"},
		{probe("latency: {to: 192.0.2.1, device: mlx5_0, ceiling: fast}"), "$.probes[0].latency.ceiling", "is not a duration"},
		// perftest 4.5-0.17 refuses CUDA outside BW tests.
		{probe("latency: {to: 192.0.2.1, device: mlx5_0, use_cuda: 0}"), "$.probes[0].latency.use_cuda", "unknown key"},
		{"version: 1\ndevices:\n  - name: mlx5_0\n    ports:\n      - {port: 1, link_layer: Ethernet}\nprobes:\n  - name: p\n    bandwidth: {to: 192.0.2.1, device: mlx5_0, link_layer: InfiniBand}\n",
			"$.probes[0].bandwidth.link_layer", "mlx5_0 port 1 is Ethernet"},
		{"version: 1\nprobes:\n  - name: a\n    bandwidth: {to: 192.0.2.1, device: mlx5_0}\n  - name: b\n    latency: {to: 192.0.2.1, device: mlx5_0}\n",
			"$.probes[1].latency.tcp_port", "probe a also runs perftest to 192.0.2.1 on TCP port 18515"},
		{"version: 1\nprobes:\n  - name: a\n    bandwidth: {to: 192.0.2.1, device: mlx5_0}\n  - name: b\n    latency: {to: 192.0.2.1, device: mlx5_0, tcp_port: 18516}\n", "", ""},
		{"version: 1\nprobes:\n  - name: a\n    bandwidth: {to: 192.0.2.1, device: mlx5_0}\n  - name: b\n    latency: {to: 192.0.2.2, device: mlx5_0}\n", "", ""},
	}
	for _, c := range cases {
		_, rep := Parse("s.yaml", []byte(c.spec))
		var got []string
		found := false
		for _, f := range rep {
			got = append(got, f.String())
			if f.Path == c.path && strings.Contains(f.Message, c.msg) {
				found = true
			}
		}
		if c.path == "" && len(rep) > 0 || c.path != "" && !found {
			t.Errorf("%s: want %s %q, got:\n%s", c.spec, c.path, c.msg, strings.Join(got, "\n"))
		}
	}
}

// TestPerfSettingsDefaults: what a probe that gives nothing but the peer
// and the device runs.
func TestPerfSettingsDefaults(t *testing.T) {
	spec, rep := Parse("s.yaml", []byte("version: 1\nprobes:\n  - name: a\n    bandwidth: {to: 192.0.2.1, device: mlx5_0}\n  - name: b\n    latency: {to: 192.0.2.1, device: mlx5_0, tcp_port: 1}\n  - name: c\n    bandwidth: {to: 192.0.2.1, device: mlx5_0, iterations: 5, tcp_port: 2, floor: 90%}\n"))
	if len(rep) > 0 {
		t.Fatal(rep)
	}
	a, b, c := spec.Probes[0].Perf(), spec.Probes[1].Perf(), spec.Probes[2].Perf()
	if a.Tool != "ib_write_bw" || a.Size != 65536 || a.QPs != 1 || a.DurationSecs != 5 || a.Iterations != 0 || a.TCPPort != 18515 || a.CPUs != "numa" || a.Timeout.String() != "25s" {
		t.Errorf("bandwidth defaults %+v", *a)
	}
	if b.Tool != "ib_write_lat" || b.Size != 2 || b.Iterations != 1000 || b.Timeout.String() != "1m0s" {
		t.Errorf("latency defaults %+v", *b)
	}
	if c.DurationSecs != 0 || c.Iterations != 5 || c.Timeout.String() != "1m0s" || c.Floor.Pct != 90 || c.Floor.GbpsFor(400) != 360 {
		t.Errorf("iterations %+v", *c)
	}
	if spec.Probes[0].Kind() != "bandwidth" || spec.Probes[1].Target() != "192.0.2.1" {
		t.Errorf("kind %q target %q", spec.Probes[0].Kind(), spec.Probes[1].Target())
	}
}
