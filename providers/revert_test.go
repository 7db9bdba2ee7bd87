package providers_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/apply"
	"github.com/rdmaform/rdmaform/host"
	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers"
	"github.com/rdmaform/rdmaform/schema"
	"github.com/rdmaform/rdmaform/sim"
)

// TestRevertRoundTrip proves each provider's Revert on the simulator: on
// a host where setup is applied, apply spec, revert every change it made
// (last first, as confirm mode does), and the plan is again the plan made
// before the apply: the same changes, attributes, disruptions and source
// positions.
func TestRevertRoundTrip(t *testing.T) {
	const ib0 = "version: 1\nipoib:\n  - {name: ib0-data, parent: ib0, mtu: 2000, ipv4: {addresses: [192.0.2.1/24]}}\n"
	tests := []struct {
		name    string
		profile string
		setup   string
		spec    string
		// uuids: a re-created NetworkManager profile gets a new UUID, the
		// one thing that differs.
		maskUUID bool
		// mutate adjusts the profile's state before the host is made.
		mutate func(st *sim.State)
	}{{
		name: "sriov: 0 to 4 VFs, autoprobe off", profile: "cx5-roce", mutate: sriovOn(8),
		spec: "version: 1\ndevices:\n  - pci: \"0000:5e:00.0\"\n    sriov: {num_vfs: 4, drivers_autoprobe: false}\n",
	}, {
		name: "sriov: 8 to 4 VFs (two writes each way)", profile: "cx5-roce", mutate: sriovOn(8),
		setup: "version: 1\ndevices:\n  - pci: \"0000:5e:00.0\"\n    sriov: {num_vfs: 8}\n",
		spec:  "version: 1\ndevices:\n  - pci: \"0000:5e:00.0\"\n    sriov: {num_vfs: 4}\n",
	}, {
		name: "netdev: down, MTU, address replaced", profile: "vm-soft",
		setup: "version: 1\ninterfaces:\n  - {name: enp1s0, addresses: [198.51.100.5/24]}\n",
		spec:  "version: 1\ninterfaces:\n  - {name: enp1s0, state: down, mtu: 9000, addresses: [198.51.100.6/24]}\n",
	}, {
		name: "rxe: created", profile: "vm-soft",
		spec: "version: 1\nrxe:\n  - {name: rxe0, netdev: enp1s0}\n",
	}, {
		name: "rxe: deleted", profile: "vm-soft",
		setup: "version: 1\nrxe:\n  - {name: rxe0, netdev: enp1s0}\n",
		spec:  "version: 1\nrxe:\n  - {name: rxe0, netdev: enp1s0, state: absent}\n",
	}, {
		name: "rxe and rdma_cm on it", profile: "vm-soft",
		spec: "version: 1\nrxe:\n  - {name: rxe0, netdev: enp1s0}\ndevices:\n  - name: rxe0\n    ports:\n      - {port: 1, roce: {tos: 32}}\n",
	}, {
		name: "rdma_cm", profile: "cx5-roce",
		spec: "version: 1\ndevices:\n  - name: mlx5_0\n    ports:\n      - {port: 1, roce: {mode: v1, tos: 106}}\n",
	}, {
		name: "mlx4port: both ports ib to eth", profile: "cx3-mlx4",
		spec: "version: 1\ndevices:\n  - name: mlx4_0\n    ports:\n      - {port: 1, type: eth}\n      - {port: 2, type: eth}\n",
	}, {
		// Port 1's switch registers the card anew: port 2's interface
		// and RoCE values are set again after it, and put back after its
		// undo, which registers the card anew once more.
		name: "mlx4port: a switch that registers the card anew", profile: "cx3-mlx4",
		setup: "version: 1\ndevices:\n  - name: mlx4_0\n    ports:\n      - {port: 1, type: eth}\n      - {port: 2, type: eth, roce: {mode: v1, tos: 106}}\n" +
			"interfaces:\n  - {name: ens2d1, mtu: 9000, addresses: [192.0.2.12/24]}\nmodules: [rdma_cm]\n",
		spec: "version: 1\ndevices:\n  - name: mlx4_0\n    ports:\n      - {port: 1, type: ib}\n      - {port: 2, type: eth, roce: {mode: v1, tos: 32}}\n" +
			"interfaces:\n  - {name: ens2d1, mtu: 4200, addresses: [192.0.2.13/24]}\n",
	}, {
		name: "modules: loaded, and dropped from the file", profile: "cx5-roce",
		setup: "version: 1\nmodules: [ib_umad]\n",
		spec:  "version: 1\nmodules: [rdma_ucm]\n",
	}, {
		name: "firmware", profile: "cx6-vpi-ib",
		spec: "version: 1\ndevices:\n  - pci: \"0000:3b:00.0\"\n    firmware:\n      params: {LINK_TYPE_P1: ETH, SRIOV_EN: true, NUM_OF_VFS: 4}\n",
	}, {
		name: "services: enabled and started", profile: "cx6-vpi-ib",
		spec: "version: 1\nservices:\n  - {name: opensm, enabled: true, active: true}\n",
	}, {
		name: "services: stopped and disabled", profile: "cx6-vpi-ib",
		setup: "version: 1\nservices:\n  - {name: opensm, enabled: true, active: true}\n",
		spec:  "version: 1\nservices:\n  - {name: opensm, enabled: false, active: false}\n",
	}, {
		name: "boot unit: installed", profile: "cx5-roce",
		spec: "version: 1\npersistence: boot-unit\n",
	}, {
		name: "boot unit: removed", profile: "cx5-roce",
		setup: "version: 1\npersistence: boot-unit\n",
		spec:  "version: 1\npersistence: none\n",
	}, {
		name: "ipoib: created", profile: "cx6-vpi-ib",
		spec: ib0,
	}, {
		name: "ipoib: modified and re-activated", profile: "cx6-vpi-ib",
		setup: ib0,
		spec:  "version: 1\nipoib:\n  - {name: ib0-data, parent: ib0, mtu: 1500, ipv4: {addresses: [192.0.2.9/24]}}\n",
	}, {
		name: "ipoib: taken down", profile: "cx6-vpi-ib",
		setup: ib0,
		spec:  "version: 1\nipoib:\n  - {name: ib0-data, parent: ib0, state: down}\n",
	}, {
		name: "ipoib: deleted", profile: "cx6-vpi-ib",
		setup: ib0,
		spec:  "version: 1\nipoib:\n  - {name: ib0-data, parent: ib0, state: absent}\n", maskUUID: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := sim.NewState(tt.profile, "node1", 0)
			if err != nil {
				t.Fatal(err)
			}
			if tt.mutate != nil {
				tt.mutate(st)
			}
			s, err := sim.Create(filepath.Join(t.TempDir(), "host"), st)
			if err != nil {
				t.Fatal(err)
			}
			h, err := s.Host()
			if err != nil {
				t.Fatal(err)
			}
			if tt.setup != "" {
				p := build(t, h, tt.setup)
				if out := apply.Run(context.Background(), h, p, providers.All(), apply.Options{}); out.Err != nil {
					t.Fatalf("setup: %v", out.Err)
				}
				if p := build(t, h, tt.setup); !p.Empty() {
					t.Fatalf("setup: plan not empty after apply: %s", planJSON(t, p, false))
				}
			}
			before := build(t, h, tt.spec)
			if before.Empty() {
				t.Fatal("the spec plans nothing; the case proves nothing")
			}
			if nr := apply.NotRevertible(before, providers.All()); len(nr) > 0 {
				t.Fatalf("not revertible: %v", nr)
			}
			out := apply.Run(context.Background(), h, before, providers.All(), apply.Options{})
			if out.Err != nil {
				t.Fatalf("apply: %v", out.Err)
			}
			if p := build(t, h, tt.spec); !p.Empty() {
				t.Fatalf("plan not empty after apply: %s", planJSON(t, p, false))
			}
			rev := apply.Revert(context.Background(), h, out.Done, providers.All(), apply.Options{})
			if rev.Err != nil {
				t.Fatalf("revert: %v", rev.Err)
			}
			after := build(t, h, tt.spec)
			if diff := cmp.Diff(planJSON(t, before, tt.maskUUID), planJSON(t, after, tt.maskUUID)); diff != "" {
				t.Errorf("plan after revert differs from the plan before apply (-before +after):\n%s", diff)
			}
		})
	}
}

// sriovOn gives every adapter firmware SRIOV_EN=True and NUM_OF_VFS=n,
// current and next boot.
func sriovOn(n int64) func(st *sim.State) {
	return func(st *sim.State) {
		for _, a := range st.Firmware {
			a.Param("SRIOV_EN").Current, a.Param("SRIOV_EN").Next = 1, 1
			a.Param("NUM_OF_VFS").Current, a.Param("NUM_OF_VFS").Next = n, n
		}
	}
}

func build(t *testing.T, h *host.Host, spec string) *plan.Plan {
	t.Helper()
	sp, rep := schema.Parse("spec.yaml", []byte(spec))
	if len(rep) > 0 {
		t.Fatalf("spec: %v", rep)
	}
	res, err := plan.Build(context.Background(), h, sp, providers.All())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Errors) > 0 {
		t.Fatalf("plan findings: %v", res.Plan.Errors)
	}
	return res.Plan
}

// planJSON is the plan as `plan -o json` prints it, with the values of
// uuid attributes blanked when mask is set.
func planJSON(t *testing.T, p *plan.Plan, mask bool) string {
	t.Helper()
	if mask {
		cp := *p
		cp.Changes = nil
		for _, c := range p.Changes {
			c2 := *c
			c2.Attributes = nil
			for _, a := range c.Attributes {
				if a.Name == "uuid" {
					a.Before, a.After = "UUID", "UUID"
				}
				c2.Attributes = append(c2.Attributes, a)
			}
			cp.Changes = append(cp.Changes, &c2)
		}
		p = &cp
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
