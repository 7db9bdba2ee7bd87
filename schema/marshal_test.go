package schema

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// roundTrip compares specs by meaning: positions are not part of a spec's
// value, and a P_Key is its number however it was written.
var roundTrip = cmp.Options{
	cmpopts.IgnoreFields(Spec{}, "Src"),
	cmp.Comparer(func(a, b PKey) bool { return FullMember(a.Value) == FullMember(b.Value) }),
}

func TestMarshalRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		spec string
	}{
		{"minimal", "version: 1\n"},
		{"full", `version: 1
host: {hostname: node6}
devices:
  - pci: "0000:81:00.0"
    firmware:
      tool: mlxconfig
      params: {SRIOV_EN: true, LINK_TYPE_P1: ETH, NUM_OF_VFS: 8, LINK_TYPE_P2: "2"}
    ports:
      - port: 1
        link_layer: Ethernet
        roce: {mode: v2, tos: 0}
        expect: {state: ACTIVE, phys_state: LinkUp, min_rate: 100}
  - name: mlx4_0
    ports:
      - {port: 1, type: eth}
      - {port: 2, type: auto}
ipoib:
  - name: ib0-storage
    parent: ib0
    pkey: 32770
    mode: datagram
    mtu: 2044
    ipv4: {addresses: [192.0.2.1/24], gateway: 192.0.2.254, dns: [192.0.2.253]}
    ipv6: {}
    state: up
rxe:
  - {name: rxe0, netdev: enp1s0}
interfaces:
  - {name: ens3, state: up, mtu: 9000, addresses: [192.168.21.1/24]}
  - {name: ens4, addresses: []}
  - {name: ens5, state: down}
modules: [ib_ipoib, rdma_ucm]
services:
  - {name: opensm, enabled: false, active: false}
persistence: boot-unit
`},
		{"strings that look like other types", `version: 1
ipoib:
  - {name: "true", parent: ib0}
  - {name: "8", parent: ib1}
  - {name: "null", parent: ib2}
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, rep := Parse("in.yaml", []byte(tt.spec))
			if len(rep) > 0 {
				t.Fatalf("input does not parse:\n%v", rep)
			}
			b, err := Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			got, rep := Parse("out.yaml", b)
			if len(rep) > 0 {
				t.Fatalf("Marshal output does not parse:\n%v\n%s", rep, b)
			}
			if diff := cmp.Diff(want, got, roundTrip); diff != "" {
				t.Errorf("round trip (-want +got):\n%s\n%s", diff, b)
			}
			// Empty-but-set values survive: they mean something.
			for i, it := range want.Interfaces {
				if (it.Addresses == nil) != (got.Interfaces[i].Addresses == nil) {
					t.Errorf("interfaces[%d].addresses: nil %v, after the round trip nil %v", i, it.Addresses == nil, got.Interfaces[i].Addresses == nil)
				}
			}
		})
	}
}

// TestMarshalGolden pins the rendering: parameter order as given, P_Keys
// in hex, PCI addresses quoted, empty values left out except addresses: []
// and ipv6: {}.
func TestMarshalGolden(t *testing.T) {
	in := `version: 1
devices:
  - pci: 0000:81:00.0
    firmware:
      params: {SRIOV_EN: true, LINK_TYPE_P1: ETH, NUM_OF_VFS: 8}
    ports:
      - {port: 1, link_layer: Ethernet, roce: {tos: 0}}
ipoib:
  - {name: st, parent: ib0, pkey: 32770, ipv6: {}}
  - {name: lim, parent: ib0, pkey: 3, membership: limited}
interfaces:
  - {name: ens4, addresses: []}
  - {name: ens5, mtu: 9000}
modules: [ib_ipoib]
`
	spec, rep := Parse("in.yaml", []byte(in))
	if len(rep) > 0 {
		t.Fatal(rep)
	}
	got, err := Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "marshal", "golden.yaml")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("Marshal (-want +got):\n%s", diff)
	}
}
