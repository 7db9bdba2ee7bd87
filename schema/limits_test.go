package schema

import (
	"fmt"
	"strings"
	"testing"
)

// TestLimitsAtTheEdge: every numeric and length limit of the spec,
// accepted at the limit and rejected one past it, with the finding at the
// value's own FILE:LINE:COL.
func TestLimitsAtTheEdge(t *testing.T) {
	roce := func(v string) string {
		return "version: 1\ndevices:\n  - name: mlx5_0\n    ports:\n      - port: 1\n        roce: {" + v + "}\n"
	}
	ipoib := func(v string) string { return "version: 1\nipoib:\n  - {name: st, parent: ib0, " + v + "}\n" }
	qos := func(v string) string {
		return "version: 1\ndevices:\n  - name: mlx5_0\n    ports:\n      - port: 1\n        qos: {" + v + "}\n"
	}
	ets := func(prioTC, bw string) string {
		return qos("ets: {prio_tc: [" + prioTC + "], tsa: [ets, ets, ets, ets, ets, ets, ets, strict], bw: [" + bw + "]}")
	}
	probe := func(v string) string { return "version: 1\nprobes:\n  - name: p\n    " + v + "\n" }
	bwField := func(k string) func(string) string {
		return func(v string) string {
			return probe("bandwidth: {to: 192.0.2.1, device: mlx5_0, " + k + ": " + v + "}")
		}
	}
	latField := func(k string) func(string) string {
		return func(v string) string { return probe("latency: {to: 192.0.2.1, device: mlx5_0, " + k + ": " + v + "}") }
	}
	n := func(c byte, k int) string { return strings.Repeat(string(c), k) }
	fwv := func(key string) func(string) string {
		return func(v string) string {
			return "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware: {" + key + ": " + v + "}\n"
		}
	}
	cases := []struct {
		name     string
		spec     func(string) string
		at, past string // the value at the limit and one past it
		path     string // where the finding must be
	}{
		{"ToS", func(v string) string { return roce("tos: " + v) }, "255", "256", "$.devices[0].ports[0].roce.tos"},
		{"ToS below", func(v string) string { return roce("tos: " + v) }, "0", "-1", "$.devices[0].ports[0].roce.tos"},
		{"DSCP", func(v string) string { return roce("dscp: " + v) }, "63", "64", "$.devices[0].ports[0].roce.dscp"},
		{"port", func(v string) string {
			return "version: 1\ndevices:\n  - name: mlx5_0\n    ports:\n      - port: " + v + "\n"
		}, "255", "256", "$.devices[0].ports[0].port"},
		{"port below", func(v string) string {
			return "version: 1\ndevices:\n  - name: mlx5_0\n    ports:\n      - port: " + v + "\n"
		}, "1", "0", "$.devices[0].ports[0].port"},
		{"IPoIB datagram MTU (4K IB MTU - 4)", func(v string) string { return ipoib("mtu: " + v) }, "4092", "4093", "$.ipoib[0].mtu"},
		{"IPoIB connected MTU", func(v string) string { return ipoib("mode: connected, mtu: " + v) }, "65520", "65521", "$.ipoib[0].mtu"},
		{"interface MTU", func(v string) string { return "version: 1\ninterfaces:\n  - {name: ens1, mtu: " + v + "}\n" }, "65535", "65536", "$.interfaces[0].mtu"},
		{"interface MTU below", func(v string) string { return "version: 1\ninterfaces:\n  - {name: ens1, mtu: " + v + "}\n" }, "68", "67", "$.interfaces[0].mtu"},
		{"interface name 15 bytes", func(v string) string { return "version: 1\ninterfaces:\n  - {name: " + v + ", state: up}\n" }, n('e', 15), n('e', 16), "$.interfaces[0].name"},
		{"IPoIB parent 15 bytes", func(v string) string { return "version: 1\nipoib:\n  - {name: st, parent: " + v + "}\n" }, n('i', 15), n('i', 16), "$.ipoib[0].parent"},
		{"rxe netdev 15 bytes", func(v string) string { return "version: 1\nrxe:\n  - {name: rxe0, netdev: " + v + "}\n" }, n('r', 15), n('r', 16), "$.rxe[0].netdev"},
		{"device netdev 15 bytes", func(v string) string { return "version: 1\ndevices:\n  - netdev: " + v + "\n" }, n('d', 15), n('d', 16), "$.devices[0].netdev"},
		{"probe interface 15 bytes", func(v string) string { return probe("ping: {to: 192.0.2.1, interface: " + v + "}") }, n('p', 15), n('p', 16), "$.probes[0].ping.interface"},
		{"P_Key child name 15 bytes", func(v string) string { return "version: 1\nipoib:\n  - {name: st, parent: " + v + ", pkey: 0x8002}\n" }, n('c', 10), n('c', 11), "$.ipoib[0].pkey"},
		{"RDMA device name 63 bytes", func(v string) string { return "version: 1\nrxe:\n  - {name: " + v + ", netdev: ens1}\n" }, n('x', 63), n('x', 64), "$.rxe[0].name"},
		{"connection name 255 bytes", func(v string) string { return "version: 1\nipoib:\n  - {name: " + v + ", parent: ib0}\n" }, n('n', 255), n('n', 256), "$.ipoib[0].name"},
		{"unit name 255 bytes", func(v string) string { return "version: 1\nservices:\n  - {name: " + v + ", active: true}\n" }, n('u', 247) + ".service", n('u', 248) + ".service", "$.services[0].name"},
		{"module name 55 bytes", func(v string) string { return "version: 1\nmodules: [" + v + "]\n" }, n('m', 55), n('m', 56), "$.modules[0]"},
		{"hostname 64 bytes", func(v string) string { return "version: 1\nhost: {hostname: " + v + "}\n" }, n('a', 32) + "." + n('b', 31), n('a', 32) + "." + n('b', 32), "$.host.hostname"},
		{"hostname label 63 bytes", func(v string) string { return "version: 1\nhost: {hostname: " + v + "}\n" }, n('h', 63), n('h', 64), "$.host.hostname"},
		{"P_Key lowest", func(v string) string { return ipoib("pkey: " + v + ", membership: limited") }, "0x0001", "0x0000", "$.ipoib[0].pkey"},
		{"P_Key limited, below the default partition", func(v string) string { return ipoib("pkey: " + v + ", membership: limited") }, "0x7ffe", "0x7fff", "$.ipoib[0].pkey"},
		{"P_Key limited member, highest key", func(v string) string { return ipoib("membership: limited, pkey: " + v) }, "0x7ffe", "0x8001", "$.ipoib[0].pkey"},
		{"P_Key full, above the reserved 0x8000", func(v string) string { return ipoib("pkey: " + v) }, "0x8001", "0x8000", "$.ipoib[0].pkey"},
		{"P_Key full, below the default partition", func(v string) string { return ipoib("pkey: " + v) }, "0xfffe", "0xffff", "$.ipoib[0].pkey"},
		{"VF count", func(v string) string {
			return "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    sriov: {num_vfs: " + v + "}\n"
		}, "65535", "65536", "$.devices[0].sriov.num_vfs"},
		{"VF count below", func(v string) string {
			return "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    sriov: {num_vfs: " + v + "}\n"
		}, "0", "-1", "$.devices[0].sriov.num_vfs"},
		{"VF number", func(v string) string {
			return "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    sriov: {num_vfs: 65535, vfs: [{vf: " + v + ", trust: true}]}\n"
		}, "65534", "65535", "$.devices[0].sriov.vfs[0].vf"},
		{"VF number below num_vfs", func(v string) string {
			return "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    sriov: {num_vfs: 4, vfs: [{vf: " + v + ", trust: true}]}\n"
		}, "3", "4", "$.devices[0].sriov.vfs[0].vf"},
		{"VF number below", func(v string) string {
			return "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    sriov: {num_vfs: 4, vfs: [{vf: " + v + ", trust: true}]}\n"
		}, "0", "-1", "$.devices[0].sriov.vfs[0].vf"},
		{"firmware value 64 bytes", func(v string) string {
			return "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params: {NUM_OF_VFS: " + v + "}\n"
		}, n('9', 64), n('9', 65), "$.devices[0].firmware.params.NUM_OF_VFS"},
		{"firmware version component", fwv("version"), `"28.39.65535"`, `"28.39.65536"`, "$.devices[0].firmware.version"},
		{"firmware version components", fwv("version"), `"28.39.1002"`, `"28.39.1002.1"`, "$.devices[0].firmware.version"},
		{"firmware version components below", fwv("version"), `"28.39.1002"`, `"28.39"`, "$.devices[0].firmware.version"},
		{"firmware min_version component", fwv("min_version"), `"65535"`, `"65536"`, "$.devices[0].firmware.min_version"},
		{"firmware min_version components", fwv("min_version"), `"28.39.1002"`, `"28.39.1002.0"`, "$.devices[0].firmware.min_version"},
		{"firmware image path length", func(v string) string {
			return "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware: {version: 28.39.1002, image: " + v + "}\n"
		}, "/" + n('f', MaxImagePath-1), "/" + n('f', MaxImagePath), "$.devices[0].firmware.image"},
		{"min rate", func(v string) string {
			return "version: 1\ndevices:\n  - name: mlx5_0\n    ports:\n      - port: 1\n        expect: {min_rate: " + v + "}\n"
		}, "1", "0", "$.devices[0].ports[0].expect.min_rate"},
		{"probe count", func(v string) string { return probe("ping: {to: 192.0.2.1, count: " + v + "}") }, "100", "101", "$.probes[0].ping.count"},
		{"probe timeout", func(v string) string { return probe("rdma_cm: {to: 192.0.2.1, timeout: " + v + "}") }, "60s", "61s", "$.probes[0].rdma_cm.timeout"},
		{"probe timeout below", func(v string) string { return probe("rdma_cm: {to: 192.0.2.1, timeout: " + v + "}") }, "1s", "999ms", "$.probes[0].rdma_cm.timeout"},
		// perftest's own bounds (perftest_parameters.h, 4.5-0.17) and
		// rdmaform's for a run.
		{"bandwidth size", bwField("size"), "8388608", "8388609", "$.probes[0].bandwidth.size"},
		{"bandwidth size below", bwField("size"), "1", "0", "$.probes[0].bandwidth.size"},
		{"bandwidth qps", bwField("qps"), "16384", "16385", "$.probes[0].bandwidth.qps"},
		{"bandwidth qps below", bwField("qps"), "1", "0", "$.probes[0].bandwidth.qps"},
		{"bandwidth iterations", bwField("iterations"), "100000000", "100000001", "$.probes[0].bandwidth.iterations"},
		{"bandwidth iterations below", bwField("iterations"), "5", "4", "$.probes[0].bandwidth.iterations"},
		{"bandwidth duration", bwField("duration"), "300s", "301s", "$.probes[0].bandwidth.duration"},
		{"bandwidth duration below", bwField("duration"), "1s", "999ms", "$.probes[0].bandwidth.duration"},
		{"bandwidth traffic class", bwField("traffic_class"), "255", "256", "$.probes[0].bandwidth.traffic_class"},
		{"bandwidth traffic class below", bwField("traffic_class"), "0", "-1", "$.probes[0].bandwidth.traffic_class"},
		{"bandwidth tcp port", bwField("tcp_port"), "65535", "65536", "$.probes[0].bandwidth.tcp_port"},
		{"bandwidth gid index", bwField("gid_index"), "65535", "65536", "$.probes[0].bandwidth.gid_index"},
		{"bandwidth use_cuda", bwField("use_cuda"), "63", "64", "$.probes[0].bandwidth.use_cuda"},
		{"bandwidth floor %", bwField("floor"), "100%", "100.1%", "$.probes[0].bandwidth.floor"},
		{"bandwidth floor % below", bwField("floor"), "1%", "0.9%", "$.probes[0].bandwidth.floor"},
		{"bandwidth floor Gb/s", bwField("floor"), "100000Gb/s", "100000.1Gb/s", "$.probes[0].bandwidth.floor"},
		{"bandwidth floor Gb/s below", bwField("floor"), "0.001Gb/s", "0Gb/s", "$.probes[0].bandwidth.floor"},
		{"bandwidth timeout", bwField("timeout"), "600s", "601s", "$.probes[0].bandwidth.timeout"},
		{"bandwidth timeout past the duration", func(v string) string {
			return probe("bandwidth: {to: 192.0.2.1, device: mlx5_0, duration: 10s, timeout: " + v + "}")
		}, "11s", "10s", "$.probes[0].bandwidth.timeout"},
		{"bandwidth cpus", bwField("cpus"), "\"0-8191\"", "\"0-8192\"", "$.probes[0].bandwidth.cpus"},
		{"latency ceiling", latField("ceiling"), "1s", "1001ms", "$.probes[0].latency.ceiling"},
		{"latency ceiling below", latField("ceiling"), "100ns", "99ns", "$.probes[0].latency.ceiling"},
		{"latency iterations below", latField("iterations"), "5", "4", "$.probes[0].latency.iterations"},
		{"latency timeout below", latField("timeout"), "1s", "999ms", "$.probes[0].latency.timeout"},
		{"RDMA CM port", func(v string) string { return probe("rdma_cm: {to: 192.0.2.1, port: " + v + "}") }, "65535", "65536", "$.probes[0].rdma_cm.port"},
		{"LID", func(v string) string { return probe("ib: {device: mlx5_1, to_lid: " + v + "}") }, "49151", "49152", "$.probes[0].ib.to_lid"},
		{"GID index", func(v string) string { return probe("verbs: {to: 192.0.2.1, device: mlx5_0, gid_index: " + v + "}") }, "65535", "65536", "$.probes[0].verbs.gid_index"},
		{"PFC priority", func(v string) string { return qos("pfc: [" + v + "]") }, "7", "8", "$.devices[0].ports[0].qos.pfc[0]"},
		{"PFC priority below", func(v string) string { return qos("pfc: [" + v + "]") }, "0", "-1", "$.devices[0].ports[0].qos.pfc[0]"},
		{"ECN priority", func(v string) string { return qos("ecn: [" + v + "]") }, "7", "8", "$.devices[0].ports[0].qos.ecn[0]"},
		{"DSCP map key", func(v string) string { return qos("trust: dscp, dscp_map: {" + v + ": 3}") }, "63", "64", "$.devices[0].ports[0].qos.dscp_map.64"},
		{"DSCP map priority", func(v string) string { return qos("trust: dscp, dscp_map: {26: " + v + "}") }, "7", "8", "$.devices[0].ports[0].qos.dscp_map.26"},
		{"cable length", func(v string) string { return qos("cable_length: " + v) }, "999", "1000", "$.devices[0].ports[0].qos.cable_length"},
		{"cable length below", func(v string) string { return qos("cable_length: " + v) }, "1", "0", "$.devices[0].ports[0].qos.cable_length"},
		{"ETS traffic class", func(v string) string { return ets("0, 1, 2, 3, 4, 5, 6, "+v, "30, 10, 10, 10, 10, 10, 20, 0") }, "7", "8", "$.devices[0].ports[0].qos.ets.prio_tc[7]"},
		{"ETS bandwidth sum", func(v string) string { return ets("0, 1, 2, 3, 4, 5, 6, 7", v+", 10, 10, 10, 10, 10, 20, 0") }, "30", "31", "$.devices[0].ports[0].qos.ets.bw"},
		{"ETS entries", func(v string) string {
			return qos("ets: {prio_tc: [" + v + "], tsa: [ets, ets, ets, ets, ets, ets, ets, ets], bw: [30, 10, 10, 10, 10, 10, 10, 10]}")
		}, "0, 1, 2, 3, 4, 5, 6, 7", "0, 1, 2, 3, 4, 5, 6, 7, 7", "$.devices[0].ports[0].qos.ets.prio_tc"},
	}
	// A finding about a value that another key makes too long points at
	// that key's value; one about a whole list points at the list.
	pointsAt := map[string]string{"P_Key child name 15 bytes": "0x8002", "ETS entries": "[0, 1, 2, 3, 4, 5, 6, 7, 7]", "ETS bandwidth sum": "[31"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, rep := Parse("s.yaml", []byte(c.spec(c.at)))
			for _, f := range rep {
				if f.Path == c.path {
					t.Errorf("at the limit (%s): %s", c.at, f)
				}
			}
			text := c.spec(c.past)
			_, rep = Parse("s.yaml", []byte(text))
			token := c.past
			if t, ok := pointsAt[c.name]; ok {
				token = t
			}
			want := posOf(text, token)
			var got []string
			for _, f := range rep {
				got = append(got, f.String())
				if f.Path == c.path && f.Pos.File == "s.yaml" && f.Pos.Line == want.Line && f.Pos.Col == want.Col {
					return
				}
			}
			t.Errorf("one past the limit (%s): no finding at %s %s; got:\n%s", c.past, want, c.path, strings.Join(got, "\n"))
		})
	}
}

// posOf is where a value is written in a spec: its line and column.
func posOf(text, value string) Pos {
	i := strings.LastIndex(text, value)
	line := strings.Count(text[:i], "\n") + 1
	col := i - strings.LastIndex(text[:i], "\n")
	return Pos{File: "s.yaml", Line: line, Col: col}
}

// TestFindingCap: 100 findings are all shown; one more is summed up.
func TestFindingCap(t *testing.T) {
	spec := func(k int) string {
		var b strings.Builder
		b.WriteString("version: 1\nmodules:\n")
		for i := 0; i < k; i++ {
			fmt.Fprintf(&b, "  - bad/%d\n", i)
		}
		return b.String()
	}
	_, rep := Parse("s.yaml", []byte(spec(MaxFindings)))
	if len(rep) != MaxFindings || strings.Contains(rep[len(rep)-1].Message, "more findings") {
		t.Errorf("%d findings: %d reported, last %q", MaxFindings, len(rep), rep[len(rep)-1].Message)
	}
	_, rep = Parse("s.yaml", []byte(spec(MaxFindings+1)))
	if len(rep) != MaxFindings+1 || rep[MaxFindings].Message != "1 more findings not shown" {
		t.Errorf("%d findings: %d reported, last %q", MaxFindings+1, len(rep), rep[len(rep)-1].Message)
	}
}

// TestSpecSizeCap: a spec of MaxSpecSize bytes is read; one byte more is
// refused before parsing.
func TestSpecSizeCap(t *testing.T) {
	head := "version: 1\n# "
	pad := func(total int) []byte {
		return []byte(head + strings.Repeat("x", total-len(head)-1) + "\n")
	}
	if _, rep := Parse("s.yaml", pad(MaxSpecSize)); len(rep) != 0 {
		t.Errorf("a spec of exactly %d bytes: %v", MaxSpecSize, rep)
	}
	if _, rep := Parse("s.yaml", pad(MaxSpecSize+1)); len(rep) != 1 || !strings.Contains(rep[0].Message, "MiB") && !strings.Contains(rep[0].Message, "bytes") {
		t.Errorf("a spec of %d bytes: %v", MaxSpecSize+1, rep)
	}
}

// TestFirmwareImagePath: an image path is absolute, clean and free of
// control characters, and an image needs the version it holds.
func TestFirmwareImagePath(t *testing.T) {
	spec := func(fw string) string {
		return "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware: {" + fw + "}\n"
	}
	for _, tc := range []struct{ fw, want string }{
		{`version: 28.39.1002, image: /lib/firmware/fw.bin`, ""},
		{`version: 28.39.1002, image: ""`, "image is empty"},
		{`version: 28.39.1002, image: fw.bin`, "is not absolute"},
		{`version: 28.39.1002, image: /lib/../fw.bin`, "not a clean path"},
		{`version: 28.39.1002, image: /lib/./fw.bin`, "not a clean path"},
		{`version: 28.39.1002, image: /lib//fw.bin`, "not a clean path"},
		{`version: 28.39.1002, image: /lib/`, "not a clean path"},
		{`version: 28.39.1002, image: /`, "not a clean path"},
		{`version: 28.39.1002, image: "/lib/fw\tbin"`, "control character"},
		{`min_version: "28.39", image: /lib/fw.bin`, "an image needs version"},
		{`image: /lib/fw.bin`, "an image needs version"},
	} {
		_, rep := Parse("spec.yaml", []byte(spec(tc.fw)))
		got := ""
		for _, f := range rep {
			if f.Path == "$.devices[0].firmware.image" {
				got = f.Message
			}
		}
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: finding %q, want one with %q", tc.fw, got, tc.want)
		}
	}
}
