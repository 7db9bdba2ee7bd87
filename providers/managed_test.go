package providers_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/inventory"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers"
	"github.com/rdmaform/rdmaform/schema"
)

// TestProvidersDeclareWhatTheyManage: every resource a spec asks for is
// declared by the provider that manages it, with the spec path it comes
// from, whether or not anything changes (nothing was read here): the
// audit's list of what it checks comes from these declarations alone.
func TestProvidersDeclareWhatTheyManage(t *testing.T) {
	spec, rep := schema.Parse("host.yaml", []byte(`version: 1
devices:
  - pci: "0000:3b:00.0"
    firmware: {params: {LINK_TYPE_P1: ETH}}
    sriov: {num_vfs: 2, vfs: [{vf: 1, mac: "02:00:00:00:00:01"}]}
    ports:
      - {port: 1, roce: {mode: v2}, type: eth, qos: {pfc: [3]}}
      - {port: 2, link_layer: Ethernet}
    acs: {peer_to_peer: true, bridges: [{pci: "0000:3a:00.0", control: 0x11}]}
  - name: mlx5_9
ipoib:
  - {name: storage, parent: ib0, pkey: 0x8002}
rxe:
  - {name: rxe0, netdev: enp1s0}
interfaces:
  - {name: ens3, mtu: 9000}
modules: [rdma_ucm]
services:
  - {name: opensm, active: true}
persistence: boot-unit
`))
	if len(rep) > 0 {
		t.Fatal(rep)
	}
	dev := &inventory.Device{Name: "mlx5_0", PCI: "0000:3b:00.0", Ports: []*inventory.Port{{Num: 1, LinkLayer: "Ethernet"}, {Num: 2, LinkLayer: "Ethernet"}},
		Bridges:     []string{"0000:3a:00.0", "0000:39:00.0"},
		GPUAffinity: []inventory.Affinity{{GPU: "0000:3c:00.0", Relation: inventory.RelationPIX, Bridges: []string{"0000:3a:00.0", "0000:39:00.0", "0000:3a:01.0"}}}}
	req := &plan.Request{Spec: spec, Inv: &inventory.Inventory{Devices: []*inventory.Device{dev}}, Devices: []*inventory.Device{dev, nil}}
	got := map[string]string{}
	facts := plan.NewFacts()
	for _, pr := range providers.All() {
		for _, m := range pr.Diff(req, nil, facts).Managed {
			prev, dup := got[m.Path]
			switch {
			case dup && strings.Contains(" "+prev+" ", " "+m.Address.String()+" "):
				t.Errorf("%s declared twice: %s and %s", m.Path, prev, m.Address)
			case dup:
				// One spec path may ask for several resources (acs's
				// peer_to_peer: every bridge on the paths).
				got[m.Path] = prev + " " + m.Address.String()
			default:
				got[m.Path] = m.Address.String()
			}
		}
	}
	want := map[string]string{
		"$.devices[0].firmware":               "firmware[0000:3b:00.0]",
		"$.devices[0].sriov":                  "sriov[0000:3b:00.0]",
		"$.devices[0].sriov.vfs[0]":           "sriov_vf[0000:3b:00.0/1]",
		"$.devices[0].ports[0].roce":          "rdma_cm[mlx5_0/1]",
		"$.devices[0].ports[0].type":          "mlx4_port[0000:3b:00.0/1]",
		"$.devices[0].ports[0].qos":           "qos[mlx5_0/1]",
		"$.ipoib[0]":                          "ipoib[storage]",
		"$.rxe[0]":                            "rxe[rxe0]",
		"$.interfaces[0]":                     "interface[ens3]",
		"$.modules[0]":                        "module[rdma_ucm]",
		"$.services[0]":                       "service[opensm.service]",
		"$.persistence":                       "boot_unit[rdmaform.service]",
		"$.devices[0].acs.peer_to_peer":       "acs[0000:39:00.0] acs[0000:3a:01.0]",
		"$.devices[0].acs.bridges[0].control": "acs[0000:3a:00.0]",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("declared (-want +got):\n%s", diff)
	}
}
