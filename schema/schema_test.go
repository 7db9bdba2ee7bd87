package schema

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestBadSpecs checks every malformed spec in testdata/bad against its
// golden list of positioned findings. Each must give at least one finding,
// every finding must carry a line and column, and nothing may panic.
func TestBadSpecs(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 40 {
		t.Fatalf("only %d bad specs; the corpus must hold at least 40", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			_, rep := Parse(name+".yaml", data)
			if len(rep) == 0 {
				t.Fatalf("no finding for a bad spec")
			}
			var lines []string
			for _, fd := range rep {
				if fd.Pos.Line < 1 || fd.Pos.Col < 1 {
					t.Errorf("finding without a position: %s", fd)
				}
				lines = append(lines, fd.String())
			}
			got := strings.Join(lines, "\n") + "\n"
			golden := strings.TrimSuffix(f, ".yaml") + ".err"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./schema -update)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExamplesValidate: every spec shipped in examples/ is valid.
func TestExamplesValidate(t *testing.T) {
	files, _ := filepath.Glob("../examples/*.yaml")
	more, _ := filepath.Glob("../examples/*/*.yaml")
	files = append(files, more...)
	n := 0
	for _, f := range files {
		if strings.Contains(f, "/hosts/") || strings.Contains(f, "/ansible/") {
			continue
		}
		n++
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, rep := Parse(f, data); len(rep) > 0 {
			t.Errorf("%s is not valid:\n%v", f, rep)
		}
	}
	if n == 0 {
		t.Fatal("no example specs found")
	}
}

const fullSpec = `version: 1
host:
  hostname: node6
devices:
  - pci: "81:00.0"
    firmware:
      tool: auto
      params:
        LINK_TYPE_P1: ETH
        SRIOV_EN: true
        NUM_OF_VFS: 8
    sriov:
      num_vfs: 4
      drivers_autoprobe: true
      vfs:
        - {vf: 0, mac: "02:00:00:00:00:01", trust: true, spoofchk: false, state: auto}
        - {vf: 1, node_guid: "02:00:00:00:00:00:00:01", port_guid: "02:00:00:00:00:00:01:01"}
    ports:
      - port: 1
        link_layer: Ethernet
        roce:
          mode: v2
          tos: 106
        qos:
          trust: dscp
          dscp_map: {26: 3, 48: 6}
          pfc: [3]
          cable_length: 7
          pause: false
          ets: {prio_tc: [0, 1, 2, 3, 4, 5, 6, 7], tsa: [ets, ets, ets, ets, strict, strict, strict, strict], bw: [25, 25, 25, 25, 0, 0, 0, 0]}
          ecn: [3]
          dcbx: host
        expect:
          state: ACTIVE
          phys_state: LinkUp
  - name: mlx4_0
    ports:
      - port: 1
        type: eth
ipoib:
  - name: ib0-storage
    parent: ib0
    pkey: 0x8002
    mode: datagram
    mtu: 2044
    ipv4: {addresses: [192.0.2.1/24], gateway: 192.0.2.254, dns: [192.0.2.253]}
    ipv6: {addresses: ["2001:db8:1::1/64"]}
    state: up
rxe:
  - name: rxe0
    netdev: enp1s0
    state: present
interfaces:
  - name: ens3
    state: up
    mtu: 9000
    addresses: [192.168.21.1/24]
  - name: ens4
    addresses: []
modules: [ib_ipoib, rdma_ucm]
services:
  - name: opensm
    enabled: true
    active: true
persistence: boot-unit
`

func TestParseFullSpec(t *testing.T) {
	spec, rep := Parse("host.yaml", []byte(fullSpec))
	if len(rep) > 0 {
		t.Fatalf("unexpected findings:\n%v", rep)
	}
	if got, want := spec.Devices[0].PCI, "0000:81:00.0"; got != want {
		t.Errorf("pci normalized to %q, want %q", got, want)
	}
	wantParams := Params{{"LINK_TYPE_P1", "ETH"}, {"SRIOV_EN", "true"}, {"NUM_OF_VFS", "8"}}
	if diff := cmp.Diff(wantParams, spec.Devices[0].Firmware.Params); diff != "" {
		t.Errorf("params keep spec order (-want +got):\n%s", diff)
	}
	c := spec.IPoIB[0]
	if c.PKey.Value != 0x8002 || c.Interface() != "ib0.8002" {
		t.Errorf("pkey %#x interface %q, want 0x8002 ib0.8002", c.PKey.Value, c.Interface())
	}
	if spec.Interfaces[0].Addresses == nil || spec.Interfaces[1].Addresses == nil || len(spec.Interfaces[1].Addresses) != 0 {
		t.Errorf("addresses: [] must be an empty, non-nil list; got %#v", spec.Interfaces[1].Addresses)
	}
	if *spec.Devices[0].Ports[0].Roce.Tos != 106 {
		t.Errorf("tos = %d", *spec.Devices[0].Ports[0].Roce.Tos)
	}
	// Positions point at values.
	for path, want := range map[string]Pos{
		"$.devices[0].ports[0].roce.mode":           {"host.yaml", 22, 17},
		"$.devices[0].firmware.params.LINK_TYPE_P1": {"host.yaml", 9, 23},
		"$.ipoib[0].pkey":                           {"host.yaml", 43, 11},
		"$.devices[0].ports[0].qos.dscp_map.26":     {"host.yaml", 26, 26},
		"$.devices[0].ports[0].qos.pfc[0]":          {"host.yaml", 27, 17},
	} {
		if got := spec.Src.Lookup(path); got != want {
			t.Errorf("Lookup(%s) = %v, want %v", path, got, want)
		}
	}
}

func TestPKeySpellings(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"0x8002", 0x8002}, {"32770", 0x8002}, {`"0x8002"`, 0x8002}, {"0x0002\n    membership: full", 0x0002},
	} {
		spec, rep := Parse("s.yaml", []byte("version: 1\nipoib:\n  - name: a\n    parent: ib0\n    pkey: "+tc.in+"\n"))
		if len(rep) > 0 {
			t.Errorf("%s: %v", tc.in, rep)
			continue
		}
		if got := spec.IPoIB[0].PKey.Value; got != tc.want {
			t.Errorf("pkey %s = %#x, want %#x", tc.in, got, tc.want)
		}
		if got := spec.IPoIB[0].Interface(); got != "ib0.8002" {
			t.Errorf("pkey %s: interface %q, want ib0.8002 (full membership)", tc.in, got)
		}
	}
	// A limited member, acknowledged, keeps the key as written.
	spec, rep := Parse("s.yaml", []byte("version: 1\nipoib:\n  - {name: a, parent: ib0, pkey: 0x0002, membership: limited}\n"))
	if len(rep) > 0 {
		t.Fatal(rep)
	}
	if c := spec.IPoIB[0]; c.Key() != 0x0002 || c.Partition() != 0x8002 || c.Interface() != "ib0.0002" {
		t.Errorf("limited member: key %#x, partition %#x, interface %s; want 0x2, 0x8002, ib0.0002", c.Key(), c.Partition(), c.Interface())
	}
}

func TestUnknownKeySuggestion(t *testing.T) {
	_, rep := Parse("s.yaml", []byte("version: 1\ndevices:\n  - name: mlx5_0\n    ports:\n      - port: 1\n        roce:\n          roce_mod: v2\n"))
	if len(rep) != 2 {
		t.Fatalf("got %d findings, want the unknown key and the empty roce block:\n%v", len(rep), rep)
	}
	want := `s.yaml:7:11: error: $.devices[0].ports[0].roce.roce_mod: unknown key "roce_mod"; did you mean "mode"?`
	if rep[1].String() != want && rep[0].String() != want {
		t.Errorf("findings:\n%v\nwant one to be:\n%s", rep, want)
	}
}

func TestAliasBombIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	b.WriteString("modules: *a9\n")
	_, rep := Parse("bomb.yaml", []byte(b.String()))
	if len(rep) == 0 {
		t.Fatal("an alias bomb must give findings, not be accepted")
	}
}

func TestHugeSpecRefused(t *testing.T) {
	data := []byte("version: 1\nmodules: [" + strings.Repeat("ib_ipoib, ", MaxSpecSize/10) + "]\n")
	_, rep := Parse("huge.yaml", data)
	if len(rep) != 1 || !strings.Contains(rep[0].Message, "larger than") || rep[0].Pos.Line != 1 {
		t.Fatalf("findings = %v, want one positioned size finding", rep)
	}
}

func FuzzLoad(f *testing.F) {
	f.Add([]byte(fullSpec))
	files, _ := filepath.Glob("testdata/bad/*.yaml")
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, rep := Load("f.yaml", data)
		for _, fd := range rep {
			if fd.Pos.Line < 1 {
				t.Fatalf("finding without a line: %s", fd)
			}
		}
	})
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(fullSpec))
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, rep := Parse("f.yaml", data)
		if len(rep) == 0 && spec.Version != Version {
			t.Fatalf("a spec without findings must be version %d", Version)
		}
	})
}

func TestFindingsAreCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\n")
	for i := 0; i < 500; i++ {
		b.WriteString("k" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + "_" + strings.Repeat("y", i/26) + ": 1\n")
	}
	_, rep := Parse("many.yaml", []byte(b.String()))
	if len(rep) != MaxFindings+1 || !strings.Contains(rep[MaxFindings].Message, "more findings not shown") {
		t.Fatalf("got %d findings, last %v; want %d and a count of the rest", len(rep), rep[len(rep)-1], MaxFindings+1)
	}
}
