package schema

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSubnetManagerLimits: every limit of the subnet_manager section,
// accepted at the limit and refused one past it, at the value's position.
func TestSubnetManagerLimits(t *testing.T) {
	sm := func(v string) string { return "version: 1\nsubnet_manager:\n  " + v + "\n" }
	part := func(v string) string {
		return sm("partitions:\n    - {name: storage, pkey: 0x8002, " + v + "}")
	}
	n := func(c byte, k int) string { return strings.Repeat(string(c), k) }
	cases := []struct {
		name     string
		spec     func(string) string
		at, past string
		path     string
	}{
		{"priority", func(v string) string { return sm("priority: " + v) }, "15", "16", "$.subnet_manager.priority"},
		{"priority below", func(v string) string { return sm("priority: " + v) }, "0", "-1", "$.subnet_manager.priority"},
		{"lowest P_Key", func(v string) string { return sm("partitions:\n    - {name: a, pkey: " + v + "}") }, "0x0001", "0x0000", "$.subnet_manager.partitions[0].pkey"},
		{"highest P_Key", func(v string) string { return sm("partitions:\n    - {name: a, pkey: " + v + "}") }, "0x7ffe", "0x7fff", "$.subnet_manager.partitions[0].pkey"},
		{"full-member bit, lowest", func(v string) string { return sm("partitions:\n    - {name: a, pkey: " + v + "}") }, "0x8001", "0x8000", "$.subnet_manager.partitions[0].pkey"},
		{"full-member bit, highest", func(v string) string { return sm("partitions:\n    - {name: a, pkey: " + v + "}") }, "0xfffe", "0xffff", "$.subnet_manager.partitions[0].pkey"},
		{"default partition's key", func(v string) string { return sm("partitions:\n    - {name: Default, pkey: " + v + "}") }, "0x7fff", "0x7ffe", "$.subnet_manager.partitions[0].pkey"},
		{"partition name 31 bytes", func(v string) string { return sm("partitions:\n    - {name: " + v + ", pkey: 0x8002}") }, n('p', 31), n('p', 32), "$.subnet_manager.partitions[0].name"},
		{"rate code highest", func(v string) string { return part("ipoib: {rate: " + v + "}") }, "24", "25", "$.subnet_manager.partitions[0].ipoib.rate"},
		{"rate code lowest", func(v string) string { return part("ipoib: {rate: " + v + "}") }, "2", "1", "$.subnet_manager.partitions[0].ipoib.rate"},
		{"MTU highest", func(v string) string { return part("ipoib: {mtu: " + v + "}") }, "4096", "8192", "$.subnet_manager.partitions[0].ipoib.mtu"},
		{"MTU lowest", func(v string) string { return part("ipoib: {mtu: " + v + "}") }, "256", "128", "$.subnet_manager.partitions[0].ipoib.mtu"},
		{"MTU not a power of two", func(v string) string { return part("ipoib: {mtu: " + v + "}") }, "2048", "2049", "$.subnet_manager.partitions[0].ipoib.mtu"},
		{"SL", func(v string) string { return part("ipoib: {sl: " + v + "}") }, "15", "16", "$.subnet_manager.partitions[0].ipoib.sl"},
		{"GUID 16 hex digits", func(v string) string { return part("members: [{guid: " + v + "}]") }, "0x" + n('a', 16), "0x" + n('a', 17), "$.subnet_manager.partitions[0].members[0].guid"},
		{"GUID 16 hex digits, one short", func(v string) string { return part("members: [{guid: " + v + "}]") }, "0x0002c903000a1b2c", "0x0002c903000a1b2", "$.subnet_manager.partitions[0].members[0].guid"},
		{"sweep interval", func(v string) string { return sm("options: {sweep_interval: " + v + "}") }, "86400", "86401", "$.subnet_manager.options.sweep_interval"},
		{"polling timeout", func(v string) string { return sm("options: {sminfo_polling_timeout: " + v + "}") }, "100", "99", "$.subnet_manager.options.sminfo_polling_timeout"},
		{"polling retries", func(v string) string { return sm("options: {polling_retry_number: " + v + "}") }, "100", "101", "$.subnet_manager.options.polling_retry_number"},
		{"LMC", func(v string) string { return sm("options: {lmc: " + v + "}") }, "7", "8", "$.subnet_manager.options.lmc"},
		{"port", func(v string) string { return sm("port: {device: mlx5_0, port: " + v + "}") }, "255", "256", "$.subnet_manager.port.port"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, rep := Parse("s.yaml", []byte(c.spec(c.at)))
			if len(rep) != 0 {
				t.Errorf("at the limit (%s): %v", c.at, rep)
			}
			text := c.spec(c.past)
			_, rep = Parse("s.yaml", []byte(text))
			want := posOf(text, c.past)
			var got []string
			for _, f := range rep {
				got = append(got, f.String())
				if f.Path == c.path && f.Pos == want {
					return
				}
			}
			t.Errorf("one past the limit (%s): no finding at %s %s; got:\n%s", c.past, want, c.path, strings.Join(got, "\n"))
		})
	}
}

// TestSubnetManagerFindings: the rules between fields, each reported at
// its spec position.
func TestSubnetManagerFindings(t *testing.T) {
	src := `version: 1
subnet_manager:
  priority: 3
  options: {routing_engine: "ftree,bogus", part_enforce: maybe, sm_key: 1}
  partitions:
    - {name: storage, pkey: 0x8002, members: [{guid: all, membership: both}]}
    - {name: storage, pkey: 0x0002}
    - {name: "a b", pkey: 0x10, default_membership: both}
    - {name: x, pkey: 0x11, ipoib: {mtu: 4096, rate: 7, sl: 0}, members: [{guid: 0x0002C903000A1B2C}, {guid: 0x0002c903000a1b2c}, {guid: ALL_CAS}, {guid: 2c903000a1b2c}, {membership: full}]}
    - {name: y, pkey: 0x12, ipoib: maybe}
    - {name: z}
`
	_, rep := Parse("s.yaml", []byte(src))
	var got []string
	for _, f := range rep {
		got = append(got, f.String())
	}
	want := []string{
		`s.yaml:4:29: error: $.subnet_manager.options.routing_engine: unknown routing engine "bogus": opensm knows none, minhop, updn, dnup, file, ftree, lash, dor, torus-2QoS, nue, dfsssp, sssp`,
		`s.yaml:4:58: error: $.subnet_manager.options.part_enforce: must be both, in, out or off, not "maybe"`,
		`s.yaml:4:65: error: $.subnet_manager.options.sm_key: unknown key "sm_key"; known keys: part_enforce, no_partition_enforcement, allow_both_pkeys, routing_engine, qos, sweep_interval, lmc, sminfo_polling_timeout, polling_retry_number`,
		`s.yaml:6:71: error: $.subnet_manager.partitions[0].members[0].membership: membership both needs options.allow_both_pkeys: true (opensm ignores both without it)`,
		`s.yaml:7:14: error: $.subnet_manager.partitions[1].name: partition "storage" is defined twice (first at $.subnet_manager.partitions[0])`,
		`s.yaml:7:29: error: $.subnet_manager.partitions[1].pkey: P_Key 0x0002 is defined twice (first at $.subnet_manager.partitions[0]): opensm would merge the two partitions`,
		`s.yaml:8:14: error: $.subnet_manager.partitions[2].name: "a b" is not a partition name: use letters, digits, _ . - (partitions.conf reserves , : ; = # and spaces)`,
		`s.yaml:8:53: error: $.subnet_manager.partitions[2].default_membership: membership both needs options.allow_both_pkeys: true (opensm ignores both without it)`,
		`s.yaml:9:110: error: $.subnet_manager.partitions[3].members[1].guid: member 0x0002c903000a1b2c is listed twice in this partition (first at $.subnet_manager.partitions[3].members[0])`,
		`s.yaml:9:155: error: $.subnet_manager.partitions[3].members[3].guid: "2c903000a1b2c" is not a port GUID (0x and 16 hex digits, e.g. 0x0002c903000a1b2c) nor one of all, all_cas, all_switches, all_routers, self`,
		`s.yaml:9:171: error: $.subnet_manager.partitions[3].members[4]: guid: is required (a port GUID such as 0x0002c903000a1b2c, or all, all_cas, all_switches, all_routers, self)`,
		`s.yaml:10:36: error: $.subnet_manager.partitions[4].ipoib: must be true, false or {rate, mtu, sl}`,
		`s.yaml:11:7: error: $.subnet_manager.partitions[5]: pkey: is required (e.g. 0x8002)`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("findings (-want +got):\n%s", d)
	}
}

// TestPartitionIPoIBForms: ipoib is true, false or a mapping, and a spec
// written back keeps the form.
func TestPartitionIPoIBForms(t *testing.T) {
	src := "version: 1\nsubnet_manager:\n  partitions:\n    - {name: a, pkey: 0x8001, ipoib: true}\n    - {name: b, pkey: 0x8002, ipoib: false}\n    - {name: c, pkey: 0x8003, ipoib: {mtu: 4096}}\n"
	spec, rep := Parse("s.yaml", []byte(src))
	if len(rep) != 0 {
		t.Fatal(rep)
	}
	ps := spec.SubnetManager.Partitions
	if ps[0].IPoIB == nil || ps[1].IPoIB != nil || ps[2].IPoIB == nil || *ps[2].IPoIB.MTU != 4096 {
		t.Fatalf("ipoib: %+v %+v %+v", ps[0].IPoIB, ps[1].IPoIB, ps[2].IPoIB)
	}
	out, err := Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"ipoib: true", "mtu: 4096"} {
		if !strings.Contains(string(out), line) {
			t.Errorf("written back without %q:\n%s", line, out)
		}
	}
	again, rep := Parse("s.yaml", out)
	if len(rep) != 0 {
		t.Fatalf("written back: %v\n%s", rep, out)
	}
	if d := cmp.Diff(spec.SubnetManager, again.SubnetManager, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Text" }, cmp.Ignore())); d != "" {
		t.Errorf("round trip (-first +again):\n%s", d)
	}
}

// TestRoutingEngineOneLine: routing_engine is written into opensm.conf
// as one line ("routing_engine ENGINES", spaces dropped), so only the
// engines, commas and spaces are taken: a newline, tab or other white
// space around an engine name would break the value onto lines of
// their own in opensm.conf, and is refused at its file:line:col.
func TestRoutingEngineOneLine(t *testing.T) {
	spec := func(v string) string {
		return "version: 1\nsubnet_manager:\n  options: {routing_engine: " + strconv.Quote(v) + "}\n"
	}
	for _, v := range []string{"ftree", "ftree,updn", "ftree, updn , minhop", " ftree"} {
		if _, rep := Parse("s.yaml", []byte(spec(v))); len(rep) != 0 {
			t.Errorf("routing_engine %q refused: %v", v, rep)
		}
	}
	for _, v := range []string{"ftree,\nupdn", "ftree\n", "ftree,\tupdn", "\rftree", "ftree,\vupdn", "ftree\u00a0"} {
		_, rep := Parse("s.yaml", []byte(spec(v)))
		if len(rep) != 1 || rep[0].Path != "$.subnet_manager.options.routing_engine" || rep[0].Pos.String() != "s.yaml:3:29" {
			t.Errorf("routing_engine %q: %v, want one finding at s.yaml:3:29", v, rep)
		}
	}
}
