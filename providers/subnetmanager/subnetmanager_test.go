package subnetmanager

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/linklayer"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/schema"
)

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestParseRealOutputs: sminfo and smpquery pkeys as the lab printed them
// (testdata/README.md).
func TestParseRealOutputs(t *testing.T) {
	for file, want := range map[string]SMInfo{
		"sminfo-master.txt":  {LID: 1, GUID: "0x100001", Priority: 5, State: "SMINFO_MASTER"},
		"sminfo-local.txt":   {LID: 0, GUID: "0x100001", Priority: 5, State: "SMINFO_MASTER"},
		"sminfo-standby.txt": {LID: 0, GUID: "0x100004", Priority: 3, State: "SMINFO_STANDBY"},
	} {
		got, err := ParseSMInfo(read(t, file))
		if err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", file, got, err, want)
		}
	}
	for file, want := range map[string][]int{
		"smpquery-pkeys-full.txt":    {0x8002, 0xffff},
		"smpquery-pkeys-limited.txt": {0x0002, 0xffff},
	} {
		got, err := ParsePKeys(read(t, file))
		if err != nil || !cmp.Equal(got, want) {
			t.Errorf("%s: %x, %v; want %x", file, got, err, want)
		}
	}
	for _, bad := range []string{"", "ibwarn: [1] sminfo: query failed\n", "   0: 0xffff 0xzz\n"} {
		if _, err := ParseSMInfo(bad); err == nil && bad != "   0: 0xffff 0xzz\n" {
			t.Errorf("ParseSMInfo(%q): no error", bad)
		}
		if _, err := ParsePKeys(bad); err == nil {
			t.Errorf("ParsePKeys(%q): no error", bad)
		}
	}
}

// TestRenderPartitions: the file opensm reads (the form proven in the
// lab: one member a line until the ';'), the same bytes every time.
func TestRenderPartitions(t *testing.T) {
	spec := parse(t, `version: 1
subnet_manager:
  partitions:
    - {name: Default, pkey: 0x7fff, ipoib: true, members: [{guid: all, membership: full}]}
    - name: storage
      pkey: 0x8002
      ipoib: {mtu: 4096, rate: 7, sl: 1}
      default_membership: limited
      members: [{guid: 0x0002C903000A1B2C, membership: full}, {guid: all_cas}]
    - {name: empty, pkey: 0x0010}
`)
	want := Header + `Default=0x7fff, ipoib :
	ALL=full;
# storage: P_Key 0x8002 given; opensm uses its low 15 bits, membership comes from the members
storage=0x0002, ipoib, mtu=5, rate=7, sl=1, defmember=limited :
	0x0002c903000a1b2c=full,
	ALL_CAS;
empty=0x0010 : ;
`
	got := string(RenderPartitions(spec.SubnetManager))
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("partitions.conf (-want +got):\n%s", d)
	}
	if again := string(RenderPartitions(spec.SubnetManager)); again != got {
		t.Error("two renders differ")
	}
}

// TestExpectedPKeys: the table opensm programs into its own port.
func TestExpectedPKeys(t *testing.T) {
	const self = "0x0000000000100001"
	cases := []struct {
		name, partitions string
		want             []int
	}{
		{"no partitions: the default, full", "[]", []int{0xffff}},
		{"full by GUID", "[{name: s, pkey: 0x8002, members: [{guid: 0x0000000000100001, membership: full}]}]", []int{0x8002, 0xffff}},
		{"limited by default", "[{name: s, pkey: 0x2, members: [{guid: all}]}]", []int{0x0002, 0xffff}},
		{"default membership full", "[{name: s, pkey: 0x2, default_membership: full, members: [{guid: self}]}]", []int{0x8002, 0xffff}},
		{"the last member decides: full", "[{name: s, pkey: 0x2, members: [{guid: all, membership: limited}, {guid: self, membership: full}]}]", []int{0x8002, 0xffff}},
		{"the last member decides: limited", "[{name: s, pkey: 0x2, members: [{guid: 0x0000000000100001, membership: full}, {guid: all_cas, membership: limited}]}]", []int{0x0002, 0xffff}},
		{"a limited Default: the SM's port is limited too", "[{name: Default, pkey: 0x7fff, members: [{guid: all, membership: limited}]}]", []int{0x7fff}},
		{"a full Default", "[{name: Default, pkey: 0x7fff, members: [{guid: all, membership: full}]}]", []int{0xffff}},
		{"both", "[{name: s, pkey: 0x2, members: [{guid: self, membership: both}]}]", []int{0x0002, 0x8002, 0xffff}},
		{"another port only", "[{name: s, pkey: 0x2, members: [{guid: 0x0000000000100004, membership: full}, {guid: all_switches, membership: full}]}]", []int{0xffff}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := parse(t, "version: 1\nsubnet_manager:\n  options: {allow_both_pkeys: true}\n  partitions: "+c.partitions+"\n")
			if got := ExpectedPKeys(spec.SubnetManager, self); !cmp.Equal(got, c.want) {
				t.Errorf("%x, want %x", got, c.want)
			}
		})
	}
}

func parse(t *testing.T, src string) *schema.Spec {
	t.Helper()
	spec, rep := schema.Parse("spec.yaml", []byte(src))
	if len(rep) > 0 {
		t.Fatal(rep)
	}
	return spec
}

func ibInv(guid string) *inventory.Inventory {
	return &inventory.Inventory{Devices: []*inventory.Device{{Name: "mlx5_0", PCI: "0000:3b:00.0",
		Ports: []*inventory.Port{{Num: 1, LinkLayer: "InfiniBand", State: "ACTIVE", GUID: guid}}}}}
}

const spec5 = `version: 1
subnet_manager:
  priority: 5
  partitions:
    - {name: storage, pkey: 0x8002, members: [{guid: self, membership: full}]}
`

// TestPlan: a table on the pure Plan.
func TestPlan(t *testing.T) {
	const g = "0x0002c903000a1b2c"
	port := &LocalPort{Device: "mlx5_0", Port: 1, GUID: g}
	spec := parse(t, spec5)
	parts := RenderPartitions(spec.SubnetManager)
	conf := RenderConf(ConfValues(spec.SubnetManager, g))
	master := SMInfo{GUID: "0x2c903000a1b2c", Priority: 5, State: "SMINFO_MASTER"}
	cases := []struct {
		name string
		src  string
		inv  *inventory.Inventory
		obs  *Observed
		want []string
	}{
		{"fresh host: both files, opensm restarted for the new opensm.conf", spec5, ibInv(g),
			&Observed{Installed: true, Port: port, Fabric: &Fabric{PKeys: []int{0xffff}, Local: SMInfo{State: "SMINFO_MASTER"}}},
			[]string{
				"subnet_manager[opensm.conf] create restart=true: sm_priority ->5; opensm running->restarted (a new opensm.conf taken only at start)",
				"subnet_manager[partitions.conf] create restart=false: partition storage ->storage=0x0002 : SELF=full"}},
		{"as wanted", spec5, ibInv(g),
			&Observed{Installed: true, Port: port, Partitions: parts, Conf: conf, Fabric: &Fabric{PKeys: []int{0x8002, 0xffff}, Local: master, Master: master}},
			nil},
		{"files as wanted, fabric not: SIGHUP", spec5, ibInv(g),
			&Observed{Installed: true, Port: port, Partitions: parts, Conf: conf, Fabric: &Fabric{PKeys: []int{0xffff}, Local: SMInfo{Priority: 0, State: "SMINFO_MASTER"}}},
			[]string{"subnet_manager[partitions.conf] update signal: running sm_priority 0->5; P_Key table of mlx5_0/1 0xffff->0x8002 0xffff"}},
		{"standby: its table is the master's business", spec5, ibInv(g),
			&Observed{Installed: true, Port: port, Partitions: parts, Conf: conf, Fabric: &Fabric{PKeys: []int{0xffff}, Local: SMInfo{Priority: 5, State: "SMINFO_STANDBY"}}},
			nil},
		{"an updatable key changes: SIGHUP", strings.Replace(spec5, "priority: 5", "priority: 7", 1), ibInv(g),
			&Observed{Installed: true, Port: port, Partitions: parts, Conf: conf, Fabric: &Fabric{Local: master}},
			[]string{"subnet_manager[opensm.conf] update restart=false: sm_priority 5->7"}},
		{"a key taken at start: restart", strings.Replace(spec5, "priority: 5", "priority: 5\n  options: {routing_engine: ftree}", 1), ibInv(g),
			&Observed{Installed: true, Port: port, Partitions: parts, Conf: conf, Fabric: &Fabric{Local: master}},
			[]string{"subnet_manager[opensm.conf] update restart=true: routing_engine ->ftree; opensm running->restarted (routing_engine taken only at start)"}},
		{"partitions left out: the file stays as it is", "version: 1\nsubnet_manager:\n  priority: 5\n", ibInv(g),
			&Observed{Installed: true, Port: port, Partitions: []byte("mine=0x0003 : ALL;\n"), Conf: conf, Fabric: &Fabric{PKeys: []int{0x0003, 0xffff}, Local: master, Master: master}},
			nil},
		{"no partition: opensm refuses the file", "version: 1\nsubnet_manager:\n  priority: 5\n  partitions: []\n", ibInv(g),
			&Observed{Installed: true, Port: port, Conf: conf},
			[]string{"spec.yaml:4:15: error: $.subnet_manager.partitions: opensm refuses a partitions file without a partition (it falls back to its default one): list at least one, or leave partitions out to keep the file as it is"}},
		{"no opensm", spec5, ibInv(g), &Observed{Port: port},
			[]string{"spec.yaml:3:3: error: $.subnet_manager: opensm is not installed (/usr/sbin/opensm missing): install the opensm package (apt-get install opensm, dnf install opensm)"}},
		{"no InfiniBand port", spec5, &inventory.Inventory{Devices: []*inventory.Device{{Name: "mlx5_0", Ports: []*inventory.Port{{Num: 1, LinkLayer: "Ethernet"}}}}}, &Observed{Installed: true},
			[]string{"spec.yaml:3:3: error: $.subnet_manager: a subnet manager serves an InfiniBand fabric, and this host has no InfiniBand port"}},
		{"a member that is an Ethernet device of this host", strings.Replace(spec5, "members: [{guid: self, membership: full}]", "members: [{guid: self, membership: full}, {guid: 0xB8CEF60300123457}]", 1),
			&inventory.Inventory{Devices: []*inventory.Device{
				{Name: "mlx5_0", NodeGUID: "0002:c903:000a:1b2c", Ports: []*inventory.Port{{Num: 1, LinkLayer: "InfiniBand", State: "ACTIVE", GUID: g}}},
				{Name: "mlx5_1", NodeGUID: "b8ce:f603:0012:3457", Ports: []*inventory.Port{{Num: 1, LinkLayer: "Ethernet"}}}}},
			&Observed{Installed: true, Port: port, Partitions: parts, Conf: conf, Fabric: &Fabric{PKeys: []int{0x8002, 0xffff}, Local: master, Master: master}},
			[]string{"spec.yaml:5:86: error: $.subnet_manager.partitions[0].members[1].guid: member 0xB8CEF60300123457 is mlx5_1 of this host, whose ports are Ethernet: only InfiniBand ports are partition members"}},
		{"spec'd port missing", strings.Replace(spec5, "priority: 5", "priority: 5\n  port: {device: mlx5_1, port: 1}", 1), ibInv(g), &Observed{Installed: true},
			[]string{"spec.yaml:4:9: error: $.subnet_manager.port: port 1 of mlx5_1 is not an InfiniBand port of this host"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := &plan.Request{Spec: parse(t, c.src), Inv: c.inv}
			prop := (&Provider{}).Plan(req, c.obs, plan.NewFacts())
			var got []string
			for _, ch := range prop.Changes {
				pl := ch.Payload.(*payload)
				s := ch.Address.String() + " " + ch.Action.String()
				if pl.signalOnly {
					s += " signal:"
				} else {
					s += " restart=" + map[bool]string{true: "true", false: "false"}[pl.restart] + ":"
				}
				var attrs []string
				for _, a := range ch.Attributes {
					attrs = append(attrs, a.Name+" "+a.Before+"->"+a.After)
				}
				got = append(got, s+" "+strings.Join(attrs, "; "))
			}
			for _, e := range prop.Errors {
				got = append(got, e.String())
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("plan (-want +got):\n%s", d)
			}
		})
	}
}

// TestDocsExample: the subnet_manager example of
// docs/guides/subnet-manager.md is a valid spec and renders the
// partitions.conf the page shows.
func TestDocsExample(t *testing.T) {
	b, err := os.ReadFile("../../docs/guides/subnet-manager.md")
	if err != nil {
		t.Fatal(err)
	}
	block := func(marker string) string {
		_, rest, ok := strings.Cut(string(b), "<!-- example: "+marker+" (TestDocsExample) -->\n")
		if !ok {
			t.Fatalf("docs/guides/subnet-manager.md has no example %q", marker)
		}
		_, rest, _ = strings.Cut(rest, "\n") // the fence
		body, _, _ := strings.Cut(rest, "```")
		return body
	}
	spec := parse(t, block("subnet_manager"))
	if got, want := string(RenderPartitions(spec.SubnetManager)), block("partitions.conf"); got != want {
		t.Errorf("the page's partitions.conf is not what rdmaform writes (-want +got):\n%s", cmp.Diff(want, got))
	}
}

// TestCaptureRoundTrip: show's section from the files rdmaform wrote
// gives back a spec that renders the same files.
func TestCaptureRoundTrip(t *testing.T) {
	b, err := os.ReadFile("../../docs/guides/subnet-manager.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), "<!-- example: subnet_manager (TestDocsExample) -->\n```yaml\n")
	src, _, _ := strings.Cut(rest, "```")
	spec := parse(t, src)
	parts := RenderPartitions(spec.SubnetManager)
	conf := RenderConf(ConfValues(spec.SubnetManager, ""))
	shown := schema.Spec{Version: schema.Version}
	if err := (&Provider{}).CaptureFrom(&Observed{Partitions: parts, Conf: conf}, nil, &shown, plan.CaptureOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err := schema.Marshal(&shown)
	if err != nil {
		t.Fatal(err)
	}
	again := parse(t, string(out))
	// The same entries (the note on a P_Key written with its full-member
	// bit follows the spec's spelling; show writes the low 15 bits).
	if d := cmp.Diff(entries(parts), entries(RenderPartitions(again.SubnetManager)), cmp.AllowUnexported(entry{})); d != "" {
		t.Errorf("partitions.conf after show (-want +got):\n%s", d)
	}
	if got := string(RenderConf(ConfValues(again.SubnetManager, ""))); got != string(conf) {
		t.Errorf("opensm.conf after show (-want +got):\n%s", cmp.Diff(string(conf), got))
	}
	if err := (&Provider{}).CaptureFrom(&Observed{Partitions: []byte("x=0x10, scope=2 : ALL;")}, nil, &shown, plan.CaptureOptions{}); err == nil || !strings.Contains(err.Error(), `flag "scope"`) {
		t.Errorf("a flag the spec lacks: %v", err)
	}
	// RHEL: the launcher's PRIORITY is the priority opensm runs with,
	// whatever opensm.conf says.
	sys := SetShellVar([]byte(readTestdata(t, "rhel/opensm.sysconfig")), "PRIORITY", "12")
	rhel := schema.Spec{Version: schema.Version}
	if err := (&Provider{}).CaptureFrom(&Observed{Partitions: parts, Conf: conf, Sysconfig: sys}, nil, &rhel, plan.CaptureOptions{}); err != nil {
		t.Fatal(err)
	}
	if p := rhel.SubnetManager.Priority; p == nil || *p != 12 {
		t.Errorf("priority captured on RHEL: %v, want PRIORITY=12 of /etc/sysconfig/opensm", p)
	}
}

// TestCaptureBoundPort: show's port: is the one port of this host the
// package binds opensm to, named by its GUID in whatever case and with
// or without leading zeros, from the file of the host's layout; nothing
// for ALL, several ports, a GUID of no port of this host or of an
// Ethernet port, or a file the layout's units do not read.
func TestCaptureBoundPort(t *testing.T) {
	req := &plan.Request{Inv: &inventory.Inventory{Devices: []*inventory.Device{
		{Name: "mlx5_0", Ports: []*inventory.Port{{Num: 1, LinkLayer: linklayer.Ethernet, GUID: "0x0002c90300000001"}}},
		{Name: "mlx5_1", Ports: []*inventory.Port{{Num: 1, LinkLayer: linklayer.InfiniBand, GUID: "0x0002c90300000002"},
			{Num: 2, LinkLayer: linklayer.InfiniBand, GUID: "0x0002c90300000003"}}},
	}}}
	launcher := Layout{Name: "RHEL", Sysconfig: SysconfigFile}
	for _, tc := range []struct {
		obs  Observed
		want *schema.SMPort
	}{
		{Observed{Layout: Debian, Ports: []byte("PORTS=0x0002c90300000003\n")}, &schema.SMPort{Device: "mlx5_1", Port: 2}},
		{Observed{Layout: Debian, Ports: []byte("PORTS=\"0x2C90300000002\"\n")}, &schema.SMPort{Device: "mlx5_1", Port: 1}},
		{Observed{Layout: Debian, Ports: []byte("PORTS=ALL\n")}, nil},
		{Observed{Layout: Debian, Ports: []byte("PORTS=\"0x0002c90300000002 0x0002c90300000003\"\n")}, nil},
		{Observed{Layout: Debian, Ports: []byte("PORTS=0x0002c903000000ff\n")}, nil},
		{Observed{Layout: Debian, Ports: []byte("PORTS=0x0002c90300000001\n")}, nil}, // mlx5_0's Ethernet port
		{Observed{Layout: Debian, Conf: []byte("guid 0x0002c90300000002\n")}, nil},   // --guid of opensm@GUID.service wins
		{Observed{Layout: launcher, Sysconfig: []byte("GUIDS=0x0002c90300000002\n")}, &schema.SMPort{Device: "mlx5_1", Port: 1}},
		{Observed{Layout: launcher, Conf: []byte("guid 0x0002c90300000002\n")}, nil}, // the launcher's -g wins
		{Observed{Layout: RHEL, Conf: []byte("guid 0x0002c90300000003\n")}, &schema.SMPort{Device: "mlx5_1", Port: 2}},
	} {
		spec := schema.Spec{Version: schema.Version}
		if err := (&Provider{}).CaptureFrom(&tc.obs, req, &spec, plan.CaptureOptions{}); err != nil {
			t.Fatal(err)
		}
		var got *schema.SMPort
		if spec.SubnetManager != nil {
			got = spec.SubnetManager.Port
		}
		if !cmp.Equal(got, tc.want) {
			t.Errorf("%s layout, PORTS %q, GUIDS %q, opensm.conf %q: port %+v, want %+v", tc.obs.Layout.Name, tc.obs.Ports, tc.obs.Sysconfig, tc.obs.Conf, got, tc.want)
		}
	}
}

// TestSysconfigOf: the package's launcher sources /etc/sysconfig/opensm;
// a launcher that does not, none.
func TestSysconfigOf(t *testing.T) {
	if got := SysconfigOf([]byte(readTestdata(t, "rhel/opensm.launch"))); got != SysconfigFile {
		t.Errorf("RHEL's opensm-launch: %q, want %s", got, SysconfigFile)
	}
	if got := SysconfigOf([]byte("#!/bin/sh\nexec /usr/sbin/opensm\n")); got != "" {
		t.Errorf("a launcher without it: %q", got)
	}
	if got, want := string(SetShellVar([]byte("#PRIORITY=15\nPRIORITY=15\nPRIORITY=1\n"), "PRIORITY", "3")), "#PRIORITY=15\nPRIORITY=3\n"; got != want {
		t.Errorf("SetShellVar: %q, want %q", got, want)
	}
	if got := ShellVar([]byte("GUIDS=\"0x1 0x2\"\n#GUIDS=0x3\n"), "GUIDS"); got != "0x1 0x2" {
		t.Errorf("ShellVar: %q", got)
	}
}
